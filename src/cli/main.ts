import { Command, CommanderError } from 'commander';
import { AppError, exitCodeFor } from '../http/errors.js';
import { VERSION } from '../version.js';
import { registerServe } from './serve.js';
import { registerSite } from './site.js';
import { registerStats } from './stats.js';
import { registerVerify } from './verify.js';
import { registerWebhooks } from './webhooks.js';
import { registerKey } from './key.js';
import { registerSegment } from './segment.js';
import { registerSeed } from './seed.js';
import { registerToken } from './token.js';
import { registerUser } from './user.js';
import { registerAdplatform } from './adplatform.js';
import { registerRecommend } from './recommend.js';
import { registerMigrate } from './migrate.js';
import { registerPlugin } from './plugin.js';
import { registerAccounts } from './accounts.js';
import { registerBackup } from './backup.js';
import { registerDemo } from './demo.js';

/** Builds the svc command tree. Each command group registers itself from its own file. */
export function buildProgram(): Command {
  const program = new Command('svc')
    .description('svc: website personalization back end (ingestion, webhooks, MCP tool server, profile REST API)')
    .version(VERSION)
    // Usage errors are one line on stderr, like every other error: `svc: <what> (run with --help for usage)`.
    .configureOutput({
      outputError: (str, write) => write(`svc: ${str.replace(/^error: /, '').trim()} (run with --help for usage)\n`),
    })
    .exitOverride();
  registerServe(program);
  registerSite(program);
  registerStats(program);
  registerVerify(program);
  registerWebhooks(program);
  registerKey(program);
  registerSegment(program);
  registerSeed(program);
  registerToken(program);
  registerUser(program);
  registerAdplatform(program);
  registerRecommend(program);
  registerMigrate(program);
  registerPlugin(program);
  registerAccounts(program);
  registerBackup(program);
  registerDemo(program);
  for (const cmd of program.commands) applyExitOverride(cmd);
  return program;
}

function applyExitOverride(cmd: Command): void {
  cmd.exitOverride();
  for (const sub of cmd.commands) applyExitOverride(sub);
}

/** Runs the CLI; returns the process exit code (0 ok, 1 failure, 2 usage error). */
export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    // A command that ran but reports failure (a failed replay or test send) sets process.exitCode.
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help, --version and `svc help` succeed; a group named without its subcommand (`svc`, `svc webhooks`)
      // prints its help on stderr and is a usage error like any other.
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return 0;
      if (err.code === 'commander.help') return err.exitCode === 0 ? 0 : 2;
      return 2;
    }
    if (err instanceof AppError) {
      process.stderr.write(`svc: ${err.message}\n`);
      return exitCodeFor(err);
    }
    const code = (err as { code?: string })?.code;
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`svc: ${code ? `${code}: ` : ''}${message}\n`);
    return 1;
  }
}

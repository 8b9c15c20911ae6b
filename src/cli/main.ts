import { Command, CommanderError } from 'commander';
import { AppError } from '../errors/app-error.js';
import { exitCodeOf } from '../errors/codes.js';
import { VERSION } from '../version.js';
import { SUMMARIES, type CommandName } from './summaries.js';

type Register = (program: Command) => void;

/**
 * Where each top-level command is registered. Loaded on demand: `svc stats` imports only the stats command's
 * file (and what it needs), and `svc --help` none of them, so a command pays only for itself at start.
 */
const LOADERS: Record<CommandName, () => Promise<Register>> = {
  serve: async () => (await import('./serve.js')).registerServe,
  site: async () => (await import('./site.js')).registerSite,
  stats: async () => (await import('./stats.js')).registerStats,
  verify: async () => (await import('./verify.js')).registerVerify,
  webhooks: async () => (await import('./webhooks.js')).registerWebhooks,
  key: async () => (await import('./key.js')).registerKey,
  segment: async () => (await import('./segment.js')).registerSegment,
  seed: async () => (await import('./seed.js')).registerSeed,
  token: async () => (await import('./token.js')).registerToken,
  user: async () => (await import('./user.js')).registerUser,
  adplatform: async () => (await import('./adplatform.js')).registerAdplatform,
  recommend: async () => (await import('./recommend.js')).registerRecommend,
  migrate: async () => (await import('./migrate.js')).registerMigrate,
  plugin: async () => (await import('./plugin.js')).registerPlugin,
  mcp: async () => (await import('./plugin.js')).registerPlugin,
  accounts: async () => (await import('./accounts.js')).registerAccounts,
  backup: async () => (await import('./backup.js')).registerBackup,
  restore: async () => (await import('./backup.js')).registerBackup,
  demo: async () => (await import('./demo.js')).registerDemo,
};

const isCommandName = (name: string | undefined): name is CommandName => name !== undefined && Object.hasOwn(LOADERS, name);

/**
 * Builds the svc command tree. Each command group registers itself from its own file. With `only`, just that
 * command is loaded and every other one is listed by its summary (what `svc --help` and usage errors print);
 * without it, the whole tree is loaded (tests walk it).
 */
export async function buildProgram(only?: CommandName | 'none'): Promise<Command> {
  const program = new Command('svc')
    .description('svc: website personalization back end (ingestion, webhooks, MCP tool server, profile REST API)')
    .version(VERSION)
    // Usage errors are one line on stderr, like every other error: `svc: <what> (run with --help for usage)`.
    .configureOutput({
      outputError: (str, write) => write(`svc: ${str.replace(/^error: /, '').trim()} (run with --help for usage)\n`),
    })
    .exitOverride();
  const registered = new Set<Register>();
  const names = Object.keys(LOADERS) as CommandName[];
  for (const name of only === undefined ? names : only === 'none' ? [] : [only]) {
    const register = await LOADERS[name]();
    if (!registered.has(register)) register(program);
    registered.add(register);
  }
  // A command not loaded is listed by its summary (what `svc --help` and usage errors print).
  for (const name of names) {
    if (!program.commands.some((c) => c.name() === name)) program.command(name).description(SUMMARIES[name]);
  }
  for (const cmd of program.commands) applyExitOverride(cmd);
  return program;
}

function applyExitOverride(cmd: Command): void {
  cmd.exitOverride();
  for (const sub of cmd.commands) applyExitOverride(sub);
}

/** Runs the CLI; returns the process exit code (0 ok, 1 failure, 2 usage error). */
export async function main(argv: string[]): Promise<number> {
  // `svc <command> …` and `svc help <command>` load that command only; anything else loads none.
  const named = argv[2] === 'help' ? argv[3] : argv[2];
  const program = await buildProgram(isCommandName(named) ? named : 'none');
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
      return exitCodeOf(err.code);
    }
    const code = (err as { code?: string })?.code;
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`svc: ${code ? `${code}: ` : ''}${message}\n`);
    return 1;
  }
}

import path from 'node:path';
import { SUMMARIES } from './summaries.js';
import type { Command } from 'commander';
import { PACKAGE_NAME, VERSION } from '../version.js';
import { print, storeConfig, usageError, withData } from './common.js';

interface RunOpts {
  token?: string;
  url?: string;
  data?: string;
  databaseUrl?: string;
  allowPrivateDestinations?: boolean;
}

export function registerPlugin(program: Command): void {
  const plugin = program.command('plugin').description(SUMMARIES.plugin);

  withData(
    plugin
      .command('run')
      .description(
        'MCP server on stdin/stdout (protocol only on stdout, logs on stderr): the tools of /api/mcp under the token\'s scope and restrictions, and the seller skills as prompts. Local on a data directory, or a proxy to a remote svc with --url. Exits when stdin closes.',
      )
      .option('--token <token>', 'MCP token the tools run under (env SVC_MCP_TOKEN)')
      .option('--url <url>', 'proxy to this svc server (its /api/mcp) instead of a local store')
      .option('--allow-private-destinations', 'local mode: allow private/loopback webhook destinations (development and tests only)'),
  ).action(async (opts: RunOpts) => {
    const token = opts.token ?? process.env.SVC_MCP_TOKEN;
    if (!token) throw usageError('plugin run needs an MCP token: --token mcpt_... or SVC_MCP_TOKEN (mint one with `svc token mint`)');
    if (opts.url !== undefined && (opts.data !== undefined || opts.databaseUrl !== undefined)) throw usageError('--url proxies to a remote server: drop --data / --database-url');
    const [{ runStdio }, { createLogger }, { loadSkills, SKILLS_ROOT }] = await Promise.all([import('../mcp/stdio.js'), import('../log.js'), import('../plugin/skills.js')]);
    const skills = { root: SKILLS_ROOT, docs: await loadSkills(SKILLS_ROOT) };
    if (opts.url !== undefined) {
      const logger = createLogger(storeConfig({}).logLevel);
      await runStdio({ mode: 'proxy', url: opts.url, token }, logger, skills);
      return;
    }
    const config = storeConfig(opts, { allowPrivateDestinations: opts.allowPrivateDestinations });
    const logger = createLogger(config.logLevel);
    const { openConfiguredStore } = await import('../store/open.js');
    const store = await openConfiguredStore(config);
    try {
      await runStdio({ mode: 'local', store, token, allowPrivateDestinations: config.allowPrivateDestinations }, logger, skills);
    } finally {
      await store.close();
    }
  });

  plugin
    .command('validate')
    .description('Check the plugin manifest, its MCP config, the marketplace entry and every SKILL.md: each tool a skill names exists and is allowed for the token the skill asks for')
    .option('--root <dir>', 'repository root (default: this package)')
    .option('--json', 'print JSON')
    .action(async (opts: { root?: string; json?: boolean }) => {
      const [{ validatePlugin }, { PACKAGE_ROOT }, { TOOLS }, { policyFacts }] = await Promise.all([
        import('../plugin/validate.js'),
        import('../plugin/skills.js'),
        import('../mcp/tools/index.js'),
        import('../mcp/call.js'),
      ]);
      const r = await validatePlugin(opts.root ?? PACKAGE_ROOT, TOOLS.map(policyFacts));
      print(opts.json, { ok: r.problems.length === 0, skills: r.skills, problems: r.problems }, () =>
        r.problems.length === 0 ? `plugin ok: ${r.skills.length} skills (${r.skills.join(', ')})` : r.problems.map((p) => `error: ${p}`).join('\n'),
      );
      if (r.problems.length > 0) process.exitCode = 1;
    });

  plugin
    .command('build')
    .description('Copy skills/ into plugin/skills (the plugin ships a copy; run before committing a skill change, and from npm prepare)')
    .option('--root <dir>', 'repository root (default: this package)')
    .option('--json', 'print JSON')
    .action(async (opts: { root?: string; json?: boolean }) => {
      const [{ buildPluginSkills }, { PACKAGE_ROOT }] = await Promise.all([import('../plugin/build.js'), import('../plugin/skills.js')]);
      const changed = buildPluginSkills(opts.root ?? PACKAGE_ROOT);
      print(opts.json, { changed }, () => (changed.length === 0 ? 'plugin/skills is current' : `plugin/skills updated:\n${changed.join('\n')}`));
    });

  const mcp = program.command('mcp').description(SUMMARIES.mcp);
  mcp
    .command('config')
    .description('Print a ready MCP server entry (JSON) for a client\'s config file')
    .requiredOption('--client <client>', 'claude-desktop, claude-code or cursor')
    .option('--stdio', 'a local stdio server (svc plugin run) instead of the HTTP endpoint (always for claude-desktop)')
    .option('--url <url>', 'the svc server address (HTTP entry; with --stdio the local server proxies to it)')
    .option('--token <token>', 'the MCP token (default SVC_MCP_TOKEN; else a variable reference where the client expands one)')
    .option('--data <dir>', 'stdio without --url: the data directory (default SVC_DATA_DIR or ./.svc, made absolute)')
    .option('--database-url <url>', 'stdio without --url: PostgreSQL instead of the data directory')
    .option('--local', `a stdio entry that runs this installation (node and its bin/svc.js, absolute paths) instead of npx -y ${PACKAGE_NAME}@<version>, e.g. from a clone (implies --stdio)`)
    .action(async (opts: { client: string; stdio?: boolean; url?: string; token?: string; data?: string; databaseUrl?: string; local?: boolean }) => {
      const [{ MCP_CLIENTS, mcpConfigEntry }, { PACKAGE_ROOT }] = await Promise.all([import('../plugin/mcp-config.js'), import('../plugin/skills.js')]);
      const client = MCP_CLIENTS.find((c) => c === opts.client);
      if (!client) throw usageError(`--client: ${JSON.stringify(opts.client)} is not one of ${MCP_CLIENTS.join(', ')}`);
      const entry = mcpConfigEntry({
        client,
        stdio: opts.stdio === true || opts.local === true,
        url: opts.url,
        token: opts.token ?? (process.env.SVC_MCP_TOKEN || undefined),
        data: opts.data,
        databaseUrl: opts.databaseUrl,
        package: `${PACKAGE_NAME}@${VERSION}`,
        local: opts.local ? { node: process.execPath, bin: path.join(PACKAGE_ROOT, 'bin', 'svc.js') } : undefined,
      });
      process.stdout.write(`${JSON.stringify(entry, null, 2)}\n`);
    });
}

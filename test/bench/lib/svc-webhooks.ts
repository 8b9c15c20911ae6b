/**
 * svc for the webhook delivery benchmark: a fresh data directory with one
 * site, `svc serve --allow-private-destinations` (SVC_RATE_LIMIT=off) and the
 * CLI to add and change webhook destinations in the same data directory
 * (a running server picks destination changes up by itself: it re-reads
 * enabled destinations at least once a second).
 */
import { mkdtempSync } from 'node:fs';
import path from 'node:path';
import { runCommand, spawnServer, stopChild, type ChildRegistry, type Tail } from './child.js';
import { REPO_ROOT } from './targets.js';

const SVC_BIN = path.join(REPO_ROOT, 'bin', 'svc.js');

export interface SvcInstance {
  url: string;
  pid: number | undefined;
  dataDir: string;
  siteId: string;
  env: NodeJS.ProcessEnv;
  stderr: Tail;
  /** Runs an svc CLI command against this data directory (appends --data); resolves with stdout, throws on a non-zero exit. */
  cli: (args: string[]) => Promise<string>;
  /** Adds a destination subscribed to every event; resolves with its id. */
  addDestination: (url: string, secret: string) => Promise<string>;
  /** SIGTERM, SIGKILL after 15 s; resolves with a note when it did not stop cleanly. */
  stop: () => Promise<string | null>;
  exited: () => boolean;
}

export async function startSvc(opts: {
  registry: ChildRegistry;
  tmpRoot: string;
  name: string;
  /** Extra SVC_* settings; SVC_RATE_LIMIT=off is always set. */
  env?: Record<string, string>;
  /** Extra node flags for the server process (e.g. --cpu-prof). */
  nodeArgs?: string[];
  log: (line: string) => void;
}): Promise<SvcInstance> {
  const dataDir = mkdtempSync(path.join(opts.tmpRoot, `${opts.name}-`));
  const env: NodeJS.ProcessEnv = { ...process.env, SVC_RATE_LIMIT: 'off', ...opts.env };
  const cli = async (args: string[]) => {
    const r = await runCommand(opts.registry, process.execPath, [SVC_BIN, ...args, '--data', dataDir], { env, cwd: REPO_ROOT, timeoutMs: 60_000 });
    if (r.code !== 0) throw new Error(`svc ${args.join(' ')} exited ${r.code}: ${r.stderr.trim() || r.stdout.trim()}`);
    return r.stdout;
  };
  const created = JSON.parse(await cli(['site', 'create', '--name', 'b', '--json'])) as { site_id?: unknown };
  if (typeof created.site_id !== 'string') throw new Error(`${opts.name}: site create printed no site_id`);
  const siteId = created.site_id;
  const s = await spawnServer(opts.registry, {
    name: opts.name,
    command: process.execPath,
    args: [...(opts.nodeArgs ?? []), SVC_BIN, 'serve', '--host', '127.0.0.1', '--port', '0', '--data', dataDir, '--allow-private-destinations'],
    env,
    cwd: REPO_ROOT,
    ready: /^svc listening on (http:\/\/127\.0\.0\.1:\d+)$/,
    errorPattern: /"level":(50|60)\b/,
  });
  opts.log(`  ${opts.name}: pid ${s.child.pid}, ${s.url}, data ${dataDir}`);
  return {
    url: s.url,
    pid: s.child.pid,
    dataDir,
    siteId,
    env,
    stderr: s.stderr,
    cli,
    addDestination: async (url, secret) => {
      const out = JSON.parse(
        await cli(['webhooks', 'add', '--site', siteId, '--url', url, '--events', 'all', '--secret', secret, '--allow-private-destinations', '--json']),
      ) as { id?: unknown };
      if (typeof out.id !== 'string') throw new Error(`${opts.name}: webhooks add printed no id`);
      return out.id;
    },
    stop: async () => {
      const r = await stopChild(s.child, 15_000);
      if (r.killed) return 'did not stop within 15 s; killed';
      if (r.code === 0 || r.signal === 'SIGTERM') return null;
      return `exited with code ${r.code}, signal ${r.signal}`;
    },
    exited: () => s.child.exitCode !== null || s.child.signalCode !== null,
  };
}

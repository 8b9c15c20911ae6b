/**
 * svc for the webhook delivery benchmark: a fresh data directory with one
 * site, `svc serve --allow-private-destinations` (SVC_RATE_LIMIT=off) and the
 * CLI to add and change webhook destinations in the same storage (a running
 * server picks destination changes up by itself: it re-reads enabled
 * destinations at least once a second).
 *
 * Storage is the embedded SQLite store of the data directory, or, with
 * `databaseUrl`, PostgreSQL (the data directory then only holds the secret
 * key). With `instances` > 1 (PostgreSQL only) that many `svc serve` share
 * the database and the data directory, so they share the secret key too.
 */
import { mkdtempSync } from 'node:fs';
import path from 'node:path';
import { runCommand, spawnServer, stopChild, type ChildRegistry, type SpawnedServer, type Tail } from './child.js';
import { redact } from './pg.js';
import { REPO_ROOT } from './targets.js';

const SVC_BIN = path.join(REPO_ROOT, 'bin', 'svc.js');

export interface SvcProcess {
  /** e.g. svc-backlog-pg-2x#1 */
  name: string;
  url: string;
  pid: number | undefined;
  stderr: Tail;
}

export interface SvcInstance {
  /** The first instance's origin, pid and stderr (the only ones with a single instance). */
  url: string;
  pid: number | undefined;
  stderr: Tail;
  /** Every `svc serve` process of this installation (one unless `instances` was given). */
  processes: SvcProcess[];
  dataDir: string;
  /** The database URL (with its schema) when on PostgreSQL. */
  databaseUrl: string | undefined;
  siteId: string;
  env: NodeJS.ProcessEnv;
  /** Runs an svc CLI command against this storage (appends --data and --database-url); resolves with stdout, throws on a non-zero exit. */
  cli: (args: string[]) => Promise<string>;
  /** Adds a destination subscribed to every event; resolves with its id. */
  addDestination: (url: string, secret: string) => Promise<string>;
  /** SIGTERM to every process, SIGKILL after 15 s; resolves with a note when one did not stop cleanly. */
  stop: () => Promise<string | null>;
  /** Whether any of the processes has exited. */
  exited: () => boolean;
}

export async function startSvc(opts: {
  registry: ChildRegistry;
  tmpRoot: string;
  name: string;
  /** Extra SVC_* settings; SVC_RATE_LIMIT=off is always set. */
  env?: Record<string, string>;
  /** Extra node flags for the server processes (e.g. --cpu-prof). */
  nodeArgs?: string[];
  /** PostgreSQL (a URL with its own `schema` parameter) instead of the data directory's SQLite store. */
  databaseUrl?: string;
  /** `svc serve` processes sharing the storage (default 1; more than one needs databaseUrl). */
  instances?: number;
  log: (line: string) => void;
}): Promise<SvcInstance> {
  const instances = opts.instances ?? 1;
  if (instances > 1 && opts.databaseUrl === undefined) throw new Error(`${opts.name}: several instances need PostgreSQL`);
  const dataDir = mkdtempSync(path.join(opts.tmpRoot, `${opts.name}-`));
  const storage = ['--data', dataDir, ...(opts.databaseUrl !== undefined ? ['--database-url', opts.databaseUrl] : [])];
  const env: NodeJS.ProcessEnv = { ...process.env, SVC_RATE_LIMIT: 'off', ...opts.env };
  // The storage comes from the flags alone: an exported SVC_DATABASE_URL must not move a SQLite phase to PostgreSQL.
  delete env.SVC_DATABASE_URL;
  const cli = async (args: string[]) => {
    const r = await runCommand(opts.registry, process.execPath, [SVC_BIN, ...args, ...storage], { env, cwd: REPO_ROOT, timeoutMs: 60_000 });
    if (r.code !== 0) throw new Error(`svc ${args.join(' ')} exited ${r.code}: ${r.stderr.trim() || r.stdout.trim()}`);
    return r.stdout;
  };
  const created = JSON.parse(await cli(['site', 'create', '--name', 'b', '--json'])) as { site_id?: unknown };
  if (typeof created.site_id !== 'string') throw new Error(`${opts.name}: site create printed no site_id`);
  const siteId = created.site_id;
  const servers: { name: string; s: SpawnedServer }[] = [];
  const stop = async () => {
    const notes = await Promise.all(
      servers.map(async ({ name, s }) => {
        const r = await stopChild(s.child, 15_000);
        if (r.killed) return `${name} did not stop within 15 s; killed`;
        if (r.code === 0 || r.signal === 'SIGTERM') return null;
        return `${name} exited with code ${r.code}, signal ${r.signal}`;
      }),
    );
    return notes.filter(Boolean).join('; ') || null;
  };
  try {
    // One after the other: the first applies the migrations, the others find them done.
    for (let i = 0; i < instances; i++) {
      const name = instances > 1 ? `${opts.name}#${i + 1}` : opts.name;
      const s = await spawnServer(opts.registry, {
        name,
        command: process.execPath,
        args: [...(opts.nodeArgs ?? []), SVC_BIN, 'serve', '--host', '127.0.0.1', '--port', '0', ...storage, '--allow-private-destinations'],
        env,
        cwd: REPO_ROOT,
        ready: /^svc listening on (http:\/\/127\.0\.0\.1:\d+)$/,
        errorPattern: /"level":(50|60)\b/,
      });
      servers.push({ name, s });
      opts.log(
        `  ${name}: pid ${s.child.pid}, ${s.url}, ${opts.databaseUrl !== undefined ? `PostgreSQL ${redact(opts.databaseUrl)}, secret key in ${dataDir}` : `data ${dataDir}`}`,
      );
    }
  } catch (err) {
    await stop();
    throw err;
  }
  const first = servers[0]!.s;
  return {
    url: first.url,
    pid: first.child.pid,
    stderr: first.stderr,
    processes: servers.map(({ name, s }) => ({ name, url: s.url, pid: s.child.pid, stderr: s.stderr })),
    dataDir,
    databaseUrl: opts.databaseUrl,
    siteId,
    env,
    cli,
    addDestination: async (url, secret) => {
      const out = JSON.parse(
        await cli(['webhooks', 'add', '--site', siteId, '--url', url, '--events', 'all', '--secret', secret, '--allow-private-destinations', '--json']),
      ) as { id?: unknown };
      if (typeof out.id !== 'string') throw new Error(`${opts.name}: webhooks add printed no id`);
      return out.id;
    },
    stop,
    exited: () => servers.some(({ s }) => s.child.exitCode !== null || s.child.signalCode !== null),
  };
}

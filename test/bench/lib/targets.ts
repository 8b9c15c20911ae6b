/**
 * Servers the ingestion benchmark can drive. A target is a name plus a setup
 * that starts it and resolves with its origins (one per instance) and, for
 * servers that store, a way to count what was stored. Adding a target
 * (another build, a remote URL) is one more entry in the list built by
 * `ingestTargets`.
 *
 * svc targets run on the embedded SQLite store of a fresh data directory, or,
 * with --database-url, on PostgreSQL: `svc-pg` (one instance) and `svc-pg-2x`
 * (two `svc serve` on the same schema and the same data directory, which
 * holds the secret key they must share). Each PostgreSQL target has a fresh
 * schema of its own (lib/pg.ts), dropped once its events are counted.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runCommand, spawnServer, stopChild, type ChildRegistry, type SpawnedServer, type Tail } from './child.js';
import { redact, withSchema, type BenchSchemas } from './pg.js';

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SVC_BIN = path.join(REPO_ROOT, 'bin', 'svc.js');
const REGISTER_HREF = pathToFileURL(fileURLToPath(new URL('../register.mjs', import.meta.url))).href;
const BARE_SERVER = fileURLToPath(new URL('./bare-server.ts', import.meta.url));
const BARE_STORE_SERVER = fileURLToPath(new URL('./bare-store-server.ts', import.meta.url));
const BARE_STORE_PG_SERVER = fileURLToPath(new URL('./bare-store-pg-server.ts', import.meta.url));

export interface SetupContext {
  registry: ChildRegistry;
  /** Parent folder for the data of this run; removed at the end unless --keep. */
  tmpRoot: string;
  log: (line: string) => void;
}

export interface StartedTarget {
  /** Origins of the server's instances, e.g. [http://127.0.0.1:41234]; the load is spread over them round-robin. */
  origins: string[];
  /** Path the load is sent to. */
  path: string;
  /** site_id carried by every event. */
  siteId: string;
  /** Status that means "accepted" (201 for svc: stored and committed). */
  ackStatus: number;
  /** Server processes (one per instance), for CPU sampling; empty for a server not started here. */
  pids: number[];
  /** Events durably stored, read after stop(); absent for a server that stores nothing. */
  countStored?: () => Promise<number>;
  /** Stops every instance; resolves with a note when one did not stop cleanly. */
  stop: () => Promise<string | null>;
  /** Removes what the target left outside the data directory (a PostgreSQL schema), after countStored; a note when it could not. */
  dispose?: () => Promise<string | null>;
  /** What each instance logged on stderr (error lines counted), for the report. */
  stderr: Tail[];
}

export interface Target {
  name: string;
  description: string;
  /** svc instances the target starts (the load is spread over them). */
  instances: number;
  setup: (ctx: SetupContext) => Promise<StartedTarget>;
}

/** Placeholder site_id for servers that do not check it; same length as svc's ids so bodies have the same size. */
const BARE_SITE_ID = 'site_BENCHbareSERVER0';

/** A bare server's StartedTarget: its one process, answering `ackStatus` on /api/events for any site. */
function bareStarted(s: SpawnedServer, ackStatus: number, graceMs: number, more: Pick<StartedTarget, 'countStored' | 'dispose'> = {}): StartedTarget {
  return {
    origins: [s.url],
    path: '/api/events',
    siteId: BARE_SITE_ID,
    ackStatus,
    pids: s.child.pid === undefined ? [] : [s.child.pid],
    stop: async () => describeStop(await stopChild(s.child, graceMs)),
    stderr: [s.stderr],
    ...more,
  };
}

/** Counts the rows a storing baseline stored: its server script run again with `args` and --count. */
async function countWith(registry: ChildRegistry, name: string, script: string, args: string[]): Promise<number> {
  const r = await runCommand(registry, process.execPath, ['--import', REGISTER_HREF, script, ...args, '--count'], { cwd: REPO_ROOT });
  if (r.code !== 0) throw new Error(`${name}: counting failed: ${r.stderr.trim()}`);
  return Number(r.stdout.trim());
}

export function bareTarget(name = 'bare'): Target {
  return {
    name,
    description: 'bare node:http, reads the body, answers 202, stores nothing',
    instances: 1,
    setup: async ({ registry }) => {
      const s = await spawnServer(registry, {
        name,
        command: process.execPath,
        args: ['--import', REGISTER_HREF, BARE_SERVER, '--port', '0'],
        ready: /^bare listening on (http:\/\/127\.0\.0\.1:\d+)$/,
      });
      return bareStarted(s, 202, 5_000);
    },
  };
}

/**
 * The storing baseline (issue 22): bare node:http that parses the body and durably inserts one row into a
 * table with svc's events columns and indexes, with svc's group commit and off-thread WAL fsync, nothing else.
 */
export function bareStoreTarget(name = 'bare-store'): Target {
  return {
    name,
    description: "bare node:http storing one event row per request: svc's events table and indexes, group commit, WAL fsync before 201",
    instances: 1,
    setup: async ({ registry, tmpRoot }) => {
      const dataDir = mkdtempSync(path.join(tmpRoot, `${name}-`));
      const s = await spawnServer(registry, {
        name,
        command: process.execPath,
        args: [...(process.env.SVC_BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []), '--import', REGISTER_HREF, BARE_STORE_SERVER, '--port', '0', '--data', dataDir],
        cwd: REPO_ROOT,
        ready: /^bare-store listening on (http:\/\/127\.0\.0\.1:\d+)$/,
      });
      return bareStarted(s, 201, 15_000, { countStored: () => countWith(registry, name, BARE_STORE_SERVER, ['--data', dataDir]) });
    },
  };
}

/**
 * The storing baseline on PostgreSQL (issue 20): bare node:http inserting one row a request into svc's own
 * events table (a fresh schema that `svc migrate` made), a group a turn as one set-based statement, two groups
 * in flight, 201 after the commit. Its CPU (server and backends) is the floor of storing an event there.
 */
export function bareStorePgTarget(o: { databaseUrl: string; schemas: BenchSchemas }, name = 'bare-store-pg'): Target {
  const schema = o.schemas.schemaOf(name);
  const url = withSchema(o.databaseUrl, schema);
  return {
    name,
    description: "bare node:http storing one event row per request in svc's PostgreSQL events table: one unnest INSERT a group, two groups in flight, 201 after commit",
    instances: 1,
    setup: async ({ registry, tmpRoot }) => {
      await o.schemas.fresh(name);
      try {
        const dataDir = mkdtempSync(path.join(tmpRoot, `${name}-`));
        const env: NodeJS.ProcessEnv = { ...process.env };
        delete env.SVC_DATABASE_URL;
        const m = await runCommand(registry, process.execPath, [SVC_BIN, 'migrate', '--data', dataDir, '--database-url', url], { env, cwd: REPO_ROOT, timeoutMs: 60_000 });
        if (m.code !== 0) throw new Error(`${name}: svc migrate exited ${m.code}: ${m.stderr.trim()}`);
        const s = await spawnServer(registry, {
          name,
          command: process.execPath,
          args: [...(process.env.SVC_BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []), '--import', REGISTER_HREF, BARE_STORE_PG_SERVER, '--port', '0', '--database-url', url],
          cwd: REPO_ROOT,
          ready: /^bare-store-pg listening on (http:\/\/127\.0\.0\.1:\d+)$/,
        });
        return bareStarted(s, 201, 15_000, {
          dispose: () => o.schemas.drop(schema),
          countStored: () => countWith(registry, name, BARE_STORE_PG_SERVER, ['--database-url', url]),
        });
      } catch (err) {
        await o.schemas.drop(schema);
        throw err;
      }
    },
  };
}

export interface SvcTargetOptions {
  name: string;
  description: string;
  /** SVC_* settings of this target; SVC_RATE_LIMIT=off is always set. */
  env: Record<string, string>;
  /**
   * Storage flags given to `serve`, `site create` and `stats`; default
   * `--data <fresh temp dir>`. A PostgreSQL target passes `--database-url` here
   * (and `--data` too: the data directory holds the secret key).
   */
  storageArgs?: (dataDir: string) => string[];
  /** Where the data is, for the log line; default the data directory. */
  describeStorage?: (dataDir: string) => string;
  /** Runs before the first svc command (a PostgreSQL target makes its schema fresh here). */
  prepare?: () => Promise<void>;
  /** Runs after the stored events are counted, or when setup fails (a PostgreSQL target drops its schema). */
  dispose?: () => Promise<string | null>;
  /** `svc serve` processes sharing the storage (default 1); more than one needs --database-url. */
  instances?: number;
}

export function svcTarget(o: SvcTargetOptions): Target {
  const instances = o.instances ?? 1;
  return {
    name: o.name,
    description: o.description,
    instances,
    setup: async ({ registry, tmpRoot, log }) => {
      const dataDir = mkdtempSync(path.join(tmpRoot, `${o.name}-`));
      const storage = o.storageArgs ? o.storageArgs(dataDir) : ['--data', dataDir];
      // The storage comes from the flags alone: an exported SVC_DATABASE_URL must not turn a SQLite target into a PostgreSQL one.
      const env: NodeJS.ProcessEnv = { ...process.env, SVC_RATE_LIMIT: 'off', ...o.env };
      delete env.SVC_DATABASE_URL;
      const svc = async (args: string[]) => {
        const r = await runCommand(registry, process.execPath, [SVC_BIN, ...args], { env, cwd: REPO_ROOT, timeoutMs: 60_000 });
        if (r.code !== 0) throw new Error(`svc ${args.join(' ')} exited ${r.code}: ${r.stderr.trim() || r.stdout.trim()}`);
        return r.stdout;
      };
      const servers: SpawnedServer[] = [];
      try {
        await o.prepare?.();
        const created = JSON.parse(await svc(['site', 'create', '--name', `bench-${o.name}`, ...storage, '--json'])) as { site_id?: unknown };
        if (typeof created.site_id !== 'string') throw new Error(`${o.name}: site create printed no site_id`);
        const siteId = created.site_id;
        // One after the other: the first applies the migrations, the others find them done.
        for (let i = 0; i < instances; i++) {
          const name = instances > 1 ? `${o.name}#${i + 1}` : o.name;
          const s = await spawnServer(registry, {
            name,
            command: process.execPath,
            // SVC_BENCH_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") profiles the servers under load.
            args: [...(process.env.SVC_BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []), SVC_BIN, 'serve', '--host', '127.0.0.1', '--port', '0', ...storage],
            env,
            cwd: REPO_ROOT,
            ready: /^svc listening on (http:\/\/127\.0\.0\.1:\d+)$/,
            errorPattern: /"level":(50|60)\b/,
          });
          servers.push(s);
          log(`  ${name}: pid ${s.child.pid}, ${s.url}, ${o.describeStorage ? o.describeStorage(dataDir) : `data ${dataDir}`}`);
        }
        const stopAll = async () => {
          const notes = await Promise.all(
            servers.map(async (s, i) => {
              const n = describeStop(await stopChild(s.child, 15_000));
              return n && servers.length > 1 ? `#${i + 1} ${n}` : n;
            }),
          );
          return notes.filter(Boolean).join('; ') || null;
        };
        return {
          origins: servers.map((s) => s.url),
          path: '/api/events',
          siteId,
          ackStatus: 201,
          pids: servers.map((s) => s.child.pid).filter((p): p is number => p !== undefined),
          stderr: servers.map((s) => s.stderr),
          stop: stopAll,
          ...(o.dispose ? { dispose: o.dispose } : {}),
          countStored: async () => {
            const stats = JSON.parse(await svc(['stats', '--site', siteId, ...storage, '--json'])) as { events?: unknown };
            if (typeof stats.events !== 'number') throw new Error(`${o.name}: stats printed no event count`);
            return stats.events;
          },
        };
      } catch (err) {
        await Promise.all(servers.map((s) => stopChild(s.child, 5_000)));
        const note = await o.dispose?.().catch((e: unknown) => `${(e as Error).message}`);
        if (note) log(`  note: ${note}`);
        throw err;
      }
    },
  };
}

/**
 * An svc target on PostgreSQL: a fresh schema of its own (bench_<pid>_<name>)
 * on the server of `databaseUrl`, `instances` servers sharing it and one data
 * directory (the secret key), the schema dropped by dispose() unless --keep.
 */
export function pgSvcTarget(o: {
  name: string;
  description: string;
  env: Record<string, string>;
  databaseUrl: string;
  schemas: BenchSchemas;
  instances: number;
}): Target {
  const schema = o.schemas.schemaOf(o.name);
  const url = withSchema(o.databaseUrl, schema);
  return svcTarget({
    name: o.name,
    description: o.description,
    env: o.env,
    instances: o.instances,
    storageArgs: (dataDir) => ['--data', dataDir, '--database-url', url],
    describeStorage: (dataDir) => `PostgreSQL ${redact(url)}, secret key in ${dataDir}`,
    prepare: async () => {
      await o.schemas.fresh(o.name);
    },
    dispose: () => o.schemas.drop(schema),
  });
}

function describeStop(r: { code: number | null; signal: NodeJS.Signals | null; killed: boolean }): string | null {
  if (r.killed) return 'did not stop within the grace period; killed';
  if (r.code === 0 || r.signal === 'SIGTERM') return null;
  return `exited with code ${r.code}, signal ${r.signal}`;
}

/** The targets of `bench:ingest`, in run order; with `pg`, svc-pg and svc-pg-2x come last. */
export function ingestTargets(opts: { sync: 'full' | 'normal'; pg?: { databaseUrl: string; schemas: BenchSchemas } }): Target[] {
  const targets: Target[] = [
    bareTarget(),
    bareStoreTarget(),
    svcTarget({
      name: 'svc-raw',
      description: 'svc, ingestion on the bare node:http fast path, SQLite synchronous=full',
      env: { SVC_INGEST_ROUTER: 'raw', SVC_SQLITE_SYNCHRONOUS: 'full' },
    }),
    svcTarget({
      name: 'svc-express',
      description: 'svc, same ingestion handler mounted through express, SQLite synchronous=full',
      env: { SVC_INGEST_ROUTER: 'express', SVC_SQLITE_SYNCHRONOUS: 'full' },
    }),
  ];
  if (opts.sync === 'normal') {
    targets.push(
      svcTarget({
        name: 'svc-raw-normal',
        description: 'svc, fast path, SQLite synchronous=normal (survives a process crash, not power loss)',
        env: { SVC_INGEST_ROUTER: 'raw', SVC_SQLITE_SYNCHRONOUS: 'normal' },
      }),
    );
  }
  if (opts.pg) {
    targets.push(bareStorePgTarget(opts.pg));
    const pool = process.env.SVC_DATABASE_POOL_SIZE ? `SVC_DATABASE_POOL_SIZE=${process.env.SVC_DATABASE_POOL_SIZE}` : 'default pool';
    targets.push(
      pgSvcTarget({
        name: 'svc-pg',
        description: `svc, fast path, PostgreSQL, one instance (${pool})`,
        env: { SVC_INGEST_ROUTER: 'raw' },
        instances: 1,
        ...opts.pg,
      }),
      pgSvcTarget({
        name: 'svc-pg-2x',
        description: `svc, fast path, PostgreSQL, two instances on one schema and one data directory, connections split round-robin (${pool} each)`,
        env: { SVC_INGEST_ROUTER: 'raw' },
        instances: 2,
        ...opts.pg,
      }),
    );
  }
  return targets;
}

export function removeTree(dir: string): void {
  rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
}

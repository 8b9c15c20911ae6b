/**
 * Servers the ingestion benchmark can drive. A target is a name plus a setup
 * that starts it and resolves with its URL (and, for servers that store, a way
 * to count what was stored). Adding a target (svc on PostgreSQL with
 * --database-url, another build, a remote URL) is one more entry in the list
 * built by `ingestTargets`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runCommand, spawnServer, stopChild, type ChildRegistry, type Tail } from './child.js';

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SVC_BIN = path.join(REPO_ROOT, 'bin', 'svc.js');
const REGISTER_HREF = pathToFileURL(fileURLToPath(new URL('../register.mjs', import.meta.url))).href;
const BARE_SERVER = fileURLToPath(new URL('./bare-server.ts', import.meta.url));

export interface SetupContext {
  registry: ChildRegistry;
  /** Parent folder for the data of this run; removed at the end unless --keep. */
  tmpRoot: string;
  log: (line: string) => void;
}

export interface StartedTarget {
  /** Origin, e.g. http://127.0.0.1:41234. */
  url: string;
  /** Path the load is sent to. */
  path: string;
  /** site_id carried by every event. */
  siteId: string;
  /** Status that means "accepted" (201 for svc: stored and committed). */
  ackStatus: number;
  /** Server process, for CPU sampling; undefined for a server not started here. */
  pid: number | undefined;
  /** Events durably stored, read after stop(); absent for a server that stores nothing. */
  countStored?: () => Promise<number>;
  /** Stops the server; resolves with a note when it did not stop cleanly. */
  stop: () => Promise<string | null>;
  /** Error lines the server logged (stderr), for the report. */
  stderr?: Tail;
}

export interface Target {
  name: string;
  description: string;
  setup: (ctx: SetupContext) => Promise<StartedTarget>;
}

/** Placeholder site_id for servers that do not check it; same length as svc's ids so bodies have the same size. */
const BARE_SITE_ID = 'site_BENCHbareSERVER0';

export function bareTarget(name = 'bare'): Target {
  return {
    name,
    description: 'bare node:http, reads the body, answers 202, stores nothing',
    setup: async ({ registry }) => {
      const s = await spawnServer(registry, {
        name,
        command: process.execPath,
        args: ['--import', REGISTER_HREF, BARE_SERVER, '--port', '0'],
        ready: /^bare listening on (http:\/\/127\.0\.0\.1:\d+)$/,
      });
      return {
        url: s.url,
        path: '/api/events',
        siteId: BARE_SITE_ID,
        ackStatus: 202,
        pid: s.child.pid,
        stop: async () => describeStop(await stopChild(s.child, 5_000)),
        stderr: s.stderr,
      };
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
   * `--data <fresh temp dir>`. A PostgreSQL target passes `--database-url` here.
   */
  storageArgs?: (dataDir: string) => string[];
}

export function svcTarget(o: SvcTargetOptions): Target {
  return {
    name: o.name,
    description: o.description,
    setup: async ({ registry, tmpRoot, log }) => {
      const dataDir = mkdtempSync(path.join(tmpRoot, `${o.name}-`));
      const storage = o.storageArgs ? o.storageArgs(dataDir) : ['--data', dataDir];
      const env: NodeJS.ProcessEnv = { ...process.env, SVC_RATE_LIMIT: 'off', ...o.env };
      const svc = async (args: string[]) => {
        const r = await runCommand(registry, process.execPath, [SVC_BIN, ...args], { env, cwd: REPO_ROOT, timeoutMs: 60_000 });
        if (r.code !== 0) throw new Error(`svc ${args.join(' ')} exited ${r.code}: ${r.stderr.trim() || r.stdout.trim()}`);
        return r.stdout;
      };
      const created = JSON.parse(await svc(['site', 'create', '--name', `bench-${o.name}`, ...storage, '--json'])) as { site_id?: unknown };
      if (typeof created.site_id !== 'string') throw new Error(`${o.name}: site create printed no site_id`);
      const siteId = created.site_id;
      const s = await spawnServer(registry, {
        name: o.name,
        command: process.execPath,
        args: [SVC_BIN, 'serve', '--host', '127.0.0.1', '--port', '0', ...storage],
        env,
        cwd: REPO_ROOT,
        ready: /^svc listening on (http:\/\/127\.0\.0\.1:\d+)$/,
        errorPattern: /"level":(50|60)\b/,
      });
      log(`  ${o.name}: pid ${s.child.pid}, ${s.url}, data ${dataDir}`);
      return {
        url: s.url,
        path: '/api/events',
        siteId,
        ackStatus: 201,
        pid: s.child.pid,
        stderr: s.stderr,
        stop: async () => describeStop(await stopChild(s.child, 15_000)),
        countStored: async () => {
          const stats = JSON.parse(await svc(['stats', '--site', siteId, ...storage, '--json'])) as { events?: unknown };
          if (typeof stats.events !== 'number') throw new Error(`${o.name}: stats printed no event count`);
          return stats.events;
        },
      };
    },
  };
}

function describeStop(r: { code: number | null; signal: NodeJS.Signals | null; killed: boolean }): string | null {
  if (r.killed) return 'did not stop within the grace period; killed';
  if (r.code === 0 || r.signal === 'SIGTERM') return null;
  return `exited with code ${r.code}, signal ${r.signal}`;
}

/** The targets of `bench:ingest`, in run order. */
export function ingestTargets(opts: { sync: 'full' | 'normal' }): Target[] {
  const targets: Target[] = [
    bareTarget(),
    svcTarget({
      name: 'svc-raw',
      description: 'svc, ingestion on the bare node:http fast path, synchronous=full',
      env: { SVC_INGEST_ROUTER: 'raw', SVC_SQLITE_SYNCHRONOUS: 'full' },
    }),
    svcTarget({
      name: 'svc-express',
      description: 'svc, same ingestion handler mounted through express, synchronous=full',
      env: { SVC_INGEST_ROUTER: 'express', SVC_SQLITE_SYNCHRONOUS: 'full' },
    }),
  ];
  if (opts.sync === 'normal') {
    targets.push(
      svcTarget({
        name: 'svc-raw-normal',
        description: 'svc, fast path, synchronous=normal (survives a process crash, not power loss)',
        env: { SVC_INGEST_ROUTER: 'raw', SVC_SQLITE_SYNCHRONOUS: 'normal' },
      }),
    );
  }
  return targets;
}

export function removeTree(dir: string): void {
  rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
}

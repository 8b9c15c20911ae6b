/**
 * Server CPU (or instructions) per POST /api/events of the storing baseline
 * and of svc builds, under the same HTTP load (never part of the suite):
 * each server in turn, a warm-up, then N measured requests over C keep-alive
 * connections, CPU read from /proc/<pid>/stat (user + system, all threads)
 * or, with --callgrind DIR, the server runs under valgrind and its user-space
 * instructions over the measured requests are counted (counters zeroed after
 * the warm-up; kernel work such as the fsync and the sockets is not in them).
 * Rounds alternate the servers (A/B interleaved); the medians and the ratio of
 * each svc build to bare-store are printed at the end.
 *
 *   node --import ./test/bench/register.mjs test/bench/ingest-servers.ts \
 *     [--svc /work/wt/other-build ...] [--requests 3000] [--warmup 3000] [--connections 64] \
 *     [--sessions 10000] [--rounds 3] [--callgrind DIR] [--no-bare]
 *
 * --svc ROOT: an svc checkout whose bin/svc.js is built (default: this one); repeat for A/B.
 * --sessions: the bodies rotate through this many sessions (the measured requests continue where the warm-up
 * stopped: with --sessions at or below --warmup they are returning sessions, far above it new ones).
 * --database-url URL: the svc builds run on PostgreSQL instead (a fresh schema bench_<pid>_<server> per start,
 * dropped after; bare-store stays on SQLite), and the CPU of the backends serving each svc over the measured
 * requests is printed beside svc's (found by their client ports, as bench:ingest does). --sqlite-too: each
 * svc build also runs on SQLite in the same rounds (the same requests, for svc's CPU on both stores side by side).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Pool } from 'undici';
import { ChildRegistry, processCpuMs, runCommand, spawnServer, stopChild, type SpawnedServer } from './lib/child.js';
import { buildEventBodies } from './lib/event.js';
import { intFlag } from './lib/args.js';
import { callgrindArgs, callgrindInstructions } from './lib/callgrind.js';
import { REPO_ROOT } from './lib/targets.js';
import { BenchSchemas } from './lib/pg.js';
import { localPgPort, pgBackendPids } from './lib/sockets.js';

const { values } = parseArgs({
  options: {
    svc: { type: 'string', multiple: true },
    requests: { type: 'string' },
    warmup: { type: 'string' },
    connections: { type: 'string' },
    sessions: { type: 'string' },
    rounds: { type: 'string' },
    callgrind: { type: 'string' },
    'no-bare': { type: 'boolean', default: false },
    'database-url': { type: 'string' },
    'sqlite-too': { type: 'boolean', default: false },
  },
});
const databaseUrl = values['database-url'];
const schemas = databaseUrl !== undefined ? new BenchSchemas(databaseUrl, false) : null;
const pgPort = databaseUrl !== undefined ? localPgPort(databaseUrl) : null;
const requests = intFlag('requests', values.requests, 3_000, 1, 1_000_000);
const warmup = intFlag('warmup', values.warmup, 3_000, 0, 1_000_000);
const connections = intFlag('connections', values.connections, 64, 1, 1024);
const sessions = intFlag('sessions', values.sessions, 10_000, 1, 1_000_000);
const rounds = intFlag('rounds', values.rounds, 3, 1, 50);
const roots = (values.svc ?? [REPO_ROOT]).map((r) => path.resolve(r));
const REGISTER_HREF = pathToFileURL(fileURLToPath(new URL('./register.mjs', import.meta.url))).href;
const BARE_STORE = fileURLToPath(new URL('./lib/bare-store-server.ts', import.meta.url));

const registry = new ChildRegistry();
const tmp = mkdtempSync(path.join(os.tmpdir(), 'svc-ingest-servers-'));
const log = (s: string) => process.stdout.write(`${s}\n`);

/** SVC_BENCH_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") go to every server's node. */
const NODE_ARGS = process.env.SVC_BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [];

const valgrind = (name: string): string[] => callgrindArgs(values.callgrind, name);
const instructions = (pid: number): number => callgrindInstructions(values.callgrind!, pid);

async function send(origin: string, siteId: string, bodies: Buffer[], start: number, n: number): Promise<void> {
  const pool = new Pool(origin, { connections, pipelining: 1, keepAliveTimeout: 60_000, headersTimeout: 600_000, bodyTimeout: 600_000 });
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const body = bodies[(start + next++) % bodies.length]!;
      const r = await pool.request({ method: 'POST', path: '/api/events', headers: { 'content-type': 'application/json' }, body });
      const text = await r.body.text();
      if (r.statusCode !== 201) throw new Error(`status ${r.statusCode}: ${text.slice(0, 200)}`);
    }
  };
  try {
    await Promise.all(Array.from({ length: connections }, worker));
  } finally {
    await pool.close();
  }
  void siteId;
}

interface Started {
  server: SpawnedServer;
  siteId: string;
}

async function startBare(dir: string): Promise<Started> {
  const server = await spawnServer(registry, {
    name: 'bare-store',
    command: values.callgrind ? 'valgrind' : process.execPath,
    args: [...valgrind('bare-store'), ...NODE_ARGS, '--import', REGISTER_HREF, BARE_STORE, '--port', '0', '--data', dir],
    cwd: REPO_ROOT,
    ready: /^bare-store listening on (http:\/\/127\.0\.0\.1:\d+)$/,
    timeoutMs: values.callgrind ? 600_000 : 60_000,
  });
  return { server, siteId: 'site_BENCHbareSERVER0' };
}

async function startSvc(root: string, dir: string, name: string, pg: boolean): Promise<Started & { schema?: string }> {
  const bin = path.join(root, 'bin', 'svc.js');
  let storage = ['--data', dir];
  let schema: string | undefined;
  if (pg) {
    const fresh = await schemas!.fresh(name.replace('#', ''));
    schema = fresh.schema;
    storage = [...storage, '--database-url', fresh.url];
  }
  const env: NodeJS.ProcessEnv = { ...process.env, SVC_RATE_LIMIT: 'off', SVC_INGEST_ROUTER: 'raw', SVC_SQLITE_SYNCHRONOUS: 'full' };
  delete env.SVC_DATABASE_URL;
  const r = await runCommand(registry, process.execPath, [bin, 'site', 'create', '--name', 'bench', ...storage, '--json'], { env, cwd: root });
  if (r.code !== 0) throw new Error(`site create: ${r.stderr}`);
  const siteId = (JSON.parse(r.stdout) as { site_id: string }).site_id;
  const server = await spawnServer(registry, {
    name,
    command: values.callgrind ? 'valgrind' : process.execPath,
    args: [...valgrind(name), ...NODE_ARGS, bin, 'serve', '--host', '127.0.0.1', '--port', '0', ...storage],
    env,
    cwd: root,
    ready: /^svc listening on (http:\/\/127\.0\.0\.1:\d+)$/,
    timeoutMs: values.callgrind ? 600_000 : 60_000,
  });
  return { server, siteId, ...(schema !== undefined ? { schema } : {}) };
}

const targets: { name: string; start: (dir: string) => Promise<Started & { schema?: string }> }[] = [];
if (!values['no-bare']) targets.push({ name: 'bare-store', start: startBare });
roots.forEach((root, i) => {
  const name = roots.length > 1 ? `svc#${i + 1}` : 'svc';
  targets.push({ name: databaseUrl !== undefined ? `${name}-pg` : name, start: (dir) => startSvc(root, dir, databaseUrl !== undefined ? `${name}-pg` : name, databaseUrl !== undefined) });
  if (databaseUrl !== undefined && values['sqlite-too']) targets.push({ name, start: (dir) => startSvc(root, dir, name, false) });
});
roots.forEach((root, i) => log(`svc#${i + 1}: ${root} (${execFileSync('git', ['-C', root, 'log', '-1', '--format=%h %s'], { encoding: 'utf8' }).trim().slice(0, 80)})`));
const unit = values.callgrind ? 'instructions' : 'µs CPU';
const figures = new Map<string, number[]>(targets.map((t) => [t.name, []]));
/** Per PostgreSQL target, the backends' µs CPU a request of each round. */
const backendFigures = new Map<string, number[]>();
try {
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? targets : [...targets].reverse();
    for (const t of order) {
      const dir = mkdtempSync(path.join(tmp, `${t.name.replace('#', '')}-`));
      const { server, siteId, schema } = await t.start(dir);
      const pid = server.child.pid!;
      let backendNote = '';
      try {
        const bodies = buildEventBodies(siteId, sessions).bodies;
        await send(server.url, siteId, bodies, 0, warmup);
        let value: number;
        if (values.callgrind) {
          execFileSync('callgrind_control', ['-z', String(pid)], { stdio: 'ignore' });
          await send(server.url, siteId, bodies, warmup, requests);
          value = instructions(pid) / requests;
        } else {
          const backends = schema !== undefined && pgPort !== null ? pgBackendPids([pid], pgPort) : [];
          const backendCpu = () => backends.reduce((a, p) => a + (processCpuMs(p) ?? 0), 0);
          const b0 = backendCpu();
          const c0 = processCpuMs(pid)!;
          await send(server.url, siteId, bodies, warmup, requests);
          value = ((processCpuMs(pid)! - c0) * 1000) / requests;
          if (schema !== undefined) {
            const b = ((backendCpu() - b0) * 1000) / requests;
            backendFigures.set(t.name, [...(backendFigures.get(t.name) ?? []), b]);
            backendNote = `, backends ${b.toFixed(1)} µs CPU/request (${backends.length} backends)`;
          }
        }
        figures.get(t.name)!.push(value);
        log(`round ${round + 1} ${t.name}: ${value.toFixed(values.callgrind ? 0 : 1)} ${unit}/request${backendNote} (load ${os.loadavg()[0]!.toFixed(1)})`);
      } finally {
        await stopChild(server.child, values.callgrind ? 120_000 : 15_000);
        if (schema !== undefined) await schemas!.drop(schema);
      }
    }
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
  await schemas?.dropAll();
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
const base = values['no-bare'] ? undefined : median(figures.get('bare-store')!);
for (const [name, xs] of figures) {
  const m = median(xs);
  log(`${name}: median ${m.toFixed(values.callgrind ? 0 : 1)} ${unit}/request (${xs.map((x) => x.toFixed(values.callgrind ? 0 : 1)).join(', ')})${base !== undefined && name !== 'bare-store' ? `, bare-store/${name} ${(base / m).toFixed(2)}` : ''}`);
  const b = backendFigures.get(name);
  if (b !== undefined) log(`${name} backends: median ${median(b).toFixed(1)} µs CPU/request (${b.map((x) => x.toFixed(1)).join(', ')})`);
}

/**
 * Decision benchmark (never part of the pass/fail suite):
 *
 *   npm run bench:decide [-- --seconds 10 --connections 16 --warmup 2]
 *   npm run bench:decide -- --database-url postgres://user@127.0.0.1:5432/db
 *
 * Seeds a site with 50 zones (10 pages of 5 zones), 500 published variants,
 * 500 placements (10 per zone, half for one of 5 segments, half for everyone,
 * priorities spread) and 10 running tests (one zone per page, a control and
 * a variant arm), then drives GET /api/decide over keep-alive connections with
 * visitors rotating over --visitors ids and URLs over the 10 pages. In the same
 * run and with the same load, a bare node:http server answering the same
 * decision JSON (one svc answer of this site, captured first) without deciding
 * or storing anything is the baseline. Prints requests/s, zone
 * decisions/s (each request decides the 5 zones of its page and stores 5
 * exposure rows in one write), p50/p99 and the ratios of throughput and p99 to
 * the bare server (targets, issue 22: >= 0.5x and p99 <= 5x), the server's CPU
 * per request and, for svc-pg on a local PostgreSQL, the CPU per request of the
 * backends serving its connections (found by their client ports), then
 * checks that svc stored exactly 5 exposures per 200 answered. It also times
 * the pure decision function alone on the same snapshot (what a decision
 * costs in CPU, without HTTP or storage).
 *
 * Targets: bare, svc (SQLite, synchronous=full), with --sync normal svc-normal, and with --database-url
 * svc-pg on a fresh schema bench_<pid>_svc_pg (dropped at the end unless
 * --keep). The load runs in this process (undici pools); every run is bounded
 * by --seconds and by --max-requests. Exit status 0 whatever the figures; 1
 * when a server does not start or the stored count is wrong; 2 on bad flags.
 */
import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { closedLoop } from './lib/closed-loop.js';
import { ChildRegistry, GroupCpu, hostCpuPercent, hostCpuTicks, processCpuMs, runCommand, spawnServer, stopChild, type SpawnedServer } from './lib/child.js';
import { localPgPort, pgBackendPids } from './lib/sockets.js';
import { Histogram, type HistogramSummary } from './lib/histogram.js';
import { BenchSchemas, databaseUrlError, redact } from './lib/pg.js';
import { REPO_ROOT, removeTree } from './lib/targets.js';
import { UsageError, intFlag } from './lib/args.js';
import { PAGES, TESTS, VARIANTS_PER_ZONE, ZONES_PER_PAGE, seedDecideSite } from './lib/decide-site.js';
import { openStore, type Store } from '../../src/store/store.js';
import { openPgStore } from '../../src/store/pg/store.js';
import { loadSnapshot } from '../../src/domain/web/decisions.js';
import { decide } from '../../src/domain/decide/decide.js';

const SVC_BIN = path.join(REPO_ROOT, 'bin', 'svc.js');
const BARE_SERVER = path.join(REPO_ROOT, 'test', 'bench', 'lib', 'bare-bytes-server.ts');
const REGISTER = path.join(REPO_ROOT, 'test', 'bench', 'register.mjs');


const HELP = `usage: npm run bench:decide -- [options]
  --seconds N        measured window per target (default 10, max 300)
  --warmup N         warm-up before the window, seconds (default 2, max 60)
  --connections N    keep-alive connections, one request in flight each (default 16, max 512)
  --max-requests N   stop a target's run after N requests (default 1000000)
  --visitors N       distinct visitor ids the requests rotate through (default 10000)
  --database-url URL also run svc on PostgreSQL (a fresh schema, dropped at the end)
  --sync normal      also run svc-normal: SQLite with SVC_SQLITE_SYNCHRONOUS=normal (no fsync per commit)
  --keep             keep the data directory and the PostgreSQL schema
  (SVC_BENCH_CPU_PROF=DIR in the environment: svc runs with --cpu-prof and writes its profile into DIR)
  -h, --help         this text`;

function parse(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    options: {
      seconds: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string' },
      'max-requests': { type: 'string' },
      visitors: { type: 'string' },
      'database-url': { type: 'string' },
      sync: { type: 'string' },
      keep: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.sync !== undefined && values.sync !== 'normal') throw new UsageError(`--sync takes only normal, got ${JSON.stringify(values.sync)}`);
  const databaseUrl = values['database-url'];
  if (databaseUrl !== undefined) {
    const bad = databaseUrlError(databaseUrl);
    if (bad) throw new UsageError(bad);
  }
  return {
    help: values.help,
    seconds: intFlag('seconds', values.seconds, 10, 1, 300),
    warmup: intFlag('warmup', values.warmup, 2, 0, 60),
    connections: intFlag('connections', values.connections, 16, 1, 512),
    maxRequests: intFlag('max-requests', values['max-requests'], 1_000_000, 1, 100_000_000),
    visitors: intFlag('visitors', values.visitors, 10_000, 1, 10_000_000),
    databaseUrl,
    syncNormal: values.sync === 'normal',
    keep: values.keep,
  };
}


/** The pure decision function on the seeded snapshot: what one decision costs in CPU (bounded to 2 s and 200,000 calls). */
async function pureDecisions(store: Store, siteId: string, opts: ReturnType<typeof parse>): Promise<{ perSecond: number; p99Us: number; n: number }> {
  const { snap } = await loadSnapshot(store, siteId);
  const hist = new Histogram();
  const segments = new Set(['seg_bench0', 'seg_bench2']);
  const start = performance.now();
  let n = 0;
  while (n < 200_000 && performance.now() - start < 2_000) {
    const p = n % PAGES;
    const url = p % 2 === 0 ? `/p${p}` : `/p${p}/item-${n}`;
    const t0 = performance.now();
    decide(snap, { visitorId: `bv-${(n * 7919) % opts.visitors}`, segmentIds: n % 3 === 0 ? segments : new Set(), url, earlierArms: new Map() });
    hist.record((performance.now() - t0) * 1000);
    n++;
  }
  return { perSecond: n / ((performance.now() - start) / 1000), p99Us: hist.summary().p99Us, n };
}

interface LoadResult {
  seconds: number;
  requests: number;
  rps: number;
  latency: HistogramSummary;
  ok: number;
  non2xx: number;
  errors: number;
  firstProblem: string | null;
  serverCpuPercent: number | null;
  /** The PostgreSQL backends serving the server's connections (a server on this host), % of one core over the window. */
  pgCpuPercent: number | null;
  /** Busy share of all the host's cores over the window. */
  hostCpuPercent: number | null;
  /** The server's system (kernel) CPU over the window, ms: with serverCpuPercent, how a request's CPU splits. */
  serverSysMs: number | null;
}

/** Sequential GETs on `connections` keep-alive connections; bounded by warm-up + seconds and by maxRequests. */
async function load(origin: string, siteId: string, opts: ReturnType<typeof parse>, pid: number | undefined, pgUrl?: string): Promise<LoadResult> {
  const pgPort = pgUrl !== undefined && pid !== undefined ? localPgPort(pgUrl) : null;
  const pgCpu = pgPort !== null ? new GroupCpu(() => pgBackendPids([pid!], pgPort)) : null;
  let pgCpuPercent: number | null = null;
  let hostAt: ReturnType<typeof hostCpuTicks> = null;
  let hostPercent: number | null = null;
  let sysAt: number | null = null;
  let serverSysMs: number | null = null;
  const pool = new Pool(origin, { connections: opts.connections, pipelining: 1, keepAliveTimeout: 60_000 });
  const paths: string[] = [];
  for (let i = 0; i < 4096; i++) {
    const p = i % PAGES;
    const url = p % 2 === 0 ? `https://shop.example/p${p}?utm_source=bench` : `https://shop.example/p${p}/item-${i}`;
    paths.push(`/api/decide?site_id=${siteId}&visitor_id=bv-${(i * 7919) % opts.visitors}&url=${encodeURIComponent(url)}`);
  }
  const r = await closedLoop(
    {
      connections: opts.connections,
      warmupSeconds: opts.warmup,
      seconds: opts.seconds,
      maxRequests: opts.maxRequests,
      pid,
      onWindow: (phase) => {
        if (phase === 'start') {
          pgCpu?.start();
          hostAt = hostCpuTicks();
          sysAt = processCpuMs(pid, 'system');
        } else {
          pgCpuPercent = pgCpu?.end() ?? null;
          hostPercent = hostCpuPercent(hostAt, hostCpuTicks());
          const sys = processCpuMs(pid, 'system');
          serverSysMs = sysAt !== null && sys !== null ? sys - sysAt : null;
        }
      },
    },
    async (i) => {
      const p = paths[i % paths.length]!.replace(/visitor_id=bv-\d+/, `visitor_id=bv-${(i * 7919) % opts.visitors}`);
      const res = await pool.request({ method: 'GET', path: p });
      if (res.statusCode >= 200 && res.statusCode < 300) {
        await res.body.dump();
        return null;
      }
      return `${res.statusCode} ${await res.body.text()}`;
    },
  );
  await pool.close();
  return { ...r, non2xx: r.wrong, pgCpuPercent, hostCpuPercent: hostPercent, serverSysMs };
}

async function main(): Promise<number> {
  let opts: ReturnType<typeof parse>;
  try {
    opts = parse(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`bench:decide: ${(err as Error).message}\n${HELP}\n`);
    return 2;
  }
  if (opts.help) {
    process.stdout.write(`${HELP}\n`);
    return 0;
  }
  const log = (line: string) => process.stdout.write(`${line}\n`);
  const registry = new ChildRegistry();
  const tmpRoot = mkdtempSync(path.join(os.tmpdir(), 'svc-bench-decide-'));
  const schemas = opts.databaseUrl !== undefined ? new BenchSchemas(opts.databaseUrl, opts.keep) : null;
  process.once('exit', () => {
    registry.killAll('SIGKILL');
    if (!opts.keep) removeTree(tmpRoot);
  });
  log(`bench:decide  node ${process.version}, ${os.cpus().length} CPU(s) (${os.cpus()[0]?.model.trim() ?? '?'}), ${os.platform()} ${os.release()}`);
  log(
    `site: ${PAGES} pages x ${ZONES_PER_PAGE} zones = ${PAGES * ZONES_PER_PAGE} zones, ${PAGES * ZONES_PER_PAGE * VARIANTS_PER_ZONE} published variants and placements, ${TESTS} running tests; ` +
      `${opts.connections} connections, warm-up ${opts.warmup} s, window ${opts.seconds} s, max ${opts.maxRequests} requests, ${opts.visitors} visitors`,
  );
  const rows: { name: string; r: LoadResult; stored?: number; expected?: number }[] = [];
  let pure: { perSecond: number; p99Us: number; n: number } | null = null;
  let failed = false;

  const targets: { name: string; pgUrl?: string; schema?: string; env?: Record<string, string> }[] = [{ name: 'svc' }];
  if (opts.syncNormal) targets.push({ name: 'svc-normal', env: { SVC_SQLITE_SYNCHRONOUS: 'normal' } });
  if (schemas) {
    const f = await schemas.fresh('svc_pg');
    targets.push({ name: 'svc-pg', pgUrl: f.url, schema: f.schema });
  }
  for (const t of targets) {
    const dataDir = mkdtempSync(path.join(tmpRoot, `${t.name}-`));
    const storage = ['--data', dataDir, ...(t.pgUrl ? ['--database-url', t.pgUrl] : [])];
    const env: NodeJS.ProcessEnv = { ...process.env, SVC_RATE_LIMIT: 'off', SVC_LOG_LEVEL: 'warn', ...t.env };
    delete env.SVC_DATABASE_URL;
    let server: SpawnedServer | null = null;
    try {
      const created = await runCommand(registry, process.execPath, [SVC_BIN, 'site', 'create', '--name', `bench-${t.name}`, ...storage, '--json'], { env, cwd: REPO_ROOT, timeoutMs: 60_000 });
      if (created.code !== 0) throw new Error(`site create: ${created.stderr}`);
      const siteId = (JSON.parse(created.stdout) as { site_id: string }).site_id;
      const store = t.pgUrl ? await openPgStore({ url: t.pgUrl, dataDir }) : openStore({ dataDir });
      await seedDecideSite(store, siteId);
      if (t.name === 'svc') pure = await pureDecisions(store, siteId, opts);
      await store.close();
      log(`${t.name}: ${t.pgUrl ? `PostgreSQL ${redact(t.pgUrl)}` : `SQLite in ${dataDir}`}, seeded`);
      server = await spawnServer(registry, {
        name: t.name,
        command: process.execPath,
        args: [...(process.env.SVC_BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.SVC_BENCH_CPU_PROF}`] : []), SVC_BIN, 'serve', '--host', '127.0.0.1', '--port', '0', ...storage],
        env,
        ready: /svc listening on (http:\/\/\S+)/,
      });
      let captured = 0;
      if (!rows.some((x) => x.name === 'bare')) {
        // Baseline, in the same run: a bare node:http server answering the very JSON svc answers (one decision of this site, captured now).
        const sample = await fetch(`${server.url}/api/decide?site_id=${siteId}&visitor_id=bv-capture&url=${encodeURIComponent('https://shop.example/p0?utm_source=bench')}`);
        if (sample.status !== 200) throw new Error(`decide answered ${sample.status}: ${await sample.text()}`);
        captured = 1;
        const bodyFile = path.join(tmpRoot, 'decide.body');
        writeFileSync(bodyFile, Buffer.from(await sample.arrayBuffer()));
        const bare = await spawnServer(registry, {
          name: 'bare',
          command: process.execPath,
          args: ['--import', REGISTER, BARE_SERVER, '--port', '0', '--file', bodyFile, '--content-type', sample.headers.get('content-type') ?? 'application/json'],
          ready: /^bare-bytes listening on (http:\/\/127\.0\.0\.1:\d+)$/,
        });
        log(`bare: node:http answering svc's decide JSON (${statSync(bodyFile).size} bytes, ${sample.headers.get('content-type')})`);
        rows.unshift({ name: 'bare', r: await load(bare.url, siteId, opts, bare.child.pid) });
        await stopChild(bare.child, 5_000);
      }
      const r = await load(server.url, siteId, opts, server.child.pid, t.pgUrl);
      await stopChild(server.child, 15_000);
      server = null;
      const check = t.pgUrl ? await openPgStore({ url: t.pgUrl, dataDir, migrate: false }) : openStore({ dataDir });
      const stored = Number((await check.sql.get<{ n: number }>('SELECT count(*) AS n FROM exposures'))!.n);
      await check.close();
      const expected = (r.ok + captured) * ZONES_PER_PAGE;
      if (stored !== expected) failed = true;
      rows.push({ name: t.name, r, stored, expected });
    } catch (err) {
      failed = true;
      log(`${t.name}: FAILED ${(err as Error).message}`);
      if (server) await stopChild(server.child, 5_000);
    } finally {
      if (t.schema && schemas) {
        const note = await schemas.drop(t.schema);
        if (note) log(note);
      }
    }
  }

  const bareRps = rows.find((r) => r.name === 'bare')?.r.rps ?? 0;
  const bareP99 = rows.find((r) => r.name === 'bare')?.r.latency.p99Us ?? 0;
  const header = ['target', 'req/s', 'zone decisions/s', 'p50 ms', 'p99 ms', 'vs bare', 'p99 vs bare', 'server CPU', 'µs/req', 'of it sys', 'pg CPU', 'pg µs/req', 'host busy', 'non-2xx', 'errors', 'exposures stored/expected'];
  const perRequest = (percent: number | null, rps: number) => (percent === null || rps <= 0 ? '-' : String(Math.round((percent / 100 / rps) * 1e6)));
  const lines = [header];
  for (const { name, r, stored, expected } of rows) {
    lines.push([
      name,
      Math.round(r.rps).toLocaleString('en-US'),
      name === 'bare' ? '-' : Math.round(r.rps * ZONES_PER_PAGE).toLocaleString('en-US'),
      (r.latency.p50Us / 1000).toFixed(2),
      (r.latency.p99Us / 1000).toFixed(2),
      bareRps > 0 ? `${(r.rps / bareRps).toFixed(2)}x` : '-',
      name !== 'bare' && bareP99 > 0 ? `${(r.latency.p99Us / bareP99).toFixed(2)}x` : '-',
      r.serverCpuPercent === null ? '-' : `${Math.round(r.serverCpuPercent)}%`,
      perRequest(r.serverCpuPercent, r.rps),
      r.serverSysMs === null || r.requests <= 0 ? '-' : String(Math.round((r.serverSysMs * 1000) / r.requests)),
      r.pgCpuPercent === null ? '-' : `${Math.round(r.pgCpuPercent)}%`,
      perRequest(r.pgCpuPercent, r.rps),
      r.hostCpuPercent === null ? '-' : `${Math.round(r.hostCpuPercent)}%`,
      String(r.non2xx),
      String(r.errors),
      stored === undefined ? '-' : `${stored}/${expected}`,
    ]);
  }
  const widths = header.map((_, i) => Math.max(...lines.map((l) => l[i]!.length)));
  for (const l of lines) log(l.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  '));
  if (pure) {
    log(
      `decide() alone, in this process on the same site (no HTTP, no storage): ${Math.round(pure.perSecond).toLocaleString('en-US')} requests/s ` +
        `(${Math.round(pure.perSecond * ZONES_PER_PAGE).toLocaleString('en-US')} zone decisions/s), p99 ${(pure.p99Us / 1000).toFixed(3)} ms over ${pure.n} calls`,
    );
  }
  for (const { name, r } of rows) if (r.firstProblem) log(`${name}: first problem: ${r.firstProblem}`);
  if (schemas) for (const n of await schemas.dropAll()) log(n);
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bench:decide: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);

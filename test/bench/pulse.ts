/**
 * Profile REST API benchmark (never part of the pass/fail suite):
 *
 *   npm run bench:pulse [-- --profiles 1000000 --seconds 5 --connections 4 --depth 3000]
 *   npm run bench:pulse -- --data DIR      reuse a data dir seeded earlier (skips seeding)
 *   SVC_BENCH_CPU_PROF=DIR npm run bench:pulse -- ...   svc (both servers) runs with --cpu-prof
 *                                          and writes its profiles into DIR when it stops
 *
 * Seeds a site with `svc seed` (default 1,000,000 profiles), creates a segment
 * (plan eq gold, about a third of the profiles; its `svc segment create`
 * backfill is timed), mints a key with every read scope and starts
 * `svc serve` with SVC_RATE_LIMIT=off. Then, over keep-alive connections:
 *
 *   - GET /profile by each identifier type (profile_id, visitor_id, email,
 *     external_id, email_sha256, phone_sha256), random existing values read
 *     from the database (read-only): p50/p99 and req/s, closed loop; and, in
 *     the same rounds, a bare node:http server answering one fixed snapshot
 *     of the same bytes (lib/bare-snapshot-server.ts): ratio per type, target
 *     >= 0.3. Both servers first get the same warm-up (every sampled
 *     identifier twice, at least --server-warmup s), then --rounds rounds
 *     measure every type and the bare server once each, the order rotated
 *     each round; medians over rounds. At the end the same loops against a
 *     separate data directory of --small profiles: p99 at full size over p99
 *     there, target <= 2;
 *   - GET /segment/{id}/members?limit=100: the first page, and a deep page
 *     (cursors followed to --depth), each fetched repeatedly: deep paging must
 *     cost what the first page costs (keyset pagination), so their ratio is
 *     printed;
 *   - POST /profiles/query with a trait rule and with an event-condition rule,
 *     limit 1000: the first page (repeated) and a walk over every page, whose
 *     id count is checked against SQL.
 *
 * Every loop is bounded in requests and in time. Exit status: 0 whatever the
 * figures; 1 when setup fails or a response is wrong (bad status, wrong
 * profile, a walk that disagrees with SQL).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Database } from '../../src/store/sqlite-driver.js';
import type BetterSqlite3 from 'better-sqlite3';
import { Pool } from 'undici';
import { ChildRegistry, processCpuMs, runCommand, spawnServer, stopChild } from './lib/child.js';
import { Histogram, type HistogramSummary } from './lib/histogram.js';
import { REPO_ROOT, removeTree } from './lib/targets.js';
import { intFlag } from './lib/args.js';

/** The checkout whose svc runs (--svc), and its bin/svc.js. */
let SVC_ROOT = REPO_ROOT;
let SVC_BIN = path.join(SVC_ROOT, 'bin', 'svc.js');
const REGISTER_HREF = pathToFileURL(fileURLToPath(new URL('./register.mjs', import.meta.url))).href;
const BARE_SNAPSHOT = fileURLToPath(new URL('./lib/bare-snapshot-server.ts', import.meta.url));
const API = '/api/pulse/v1';
const SEGMENT_NAME = 'bench-gold';
const SEGMENT_RULE = { trait: 'plan', op: 'eq', value: 'gold' };
const TRAIT_RULE = { all: [{ trait: 'plan', op: 'eq', value: 'gold' }, { trait: 'n', op: 'gte', value: 500 }] };
const EVENT_RULE = { event: 'add_to_cart', where: [{ property: 'sku', op: 'eq', value: 'MUG-01' }] };
const LOOKUPS = ['profile_id', 'visitor_id', 'email', 'external_id', 'email_sha256', 'phone_sha256'] as const;
type Lookup = (typeof LOOKUPS)[number];

const HELP = `usage: npm run bench:pulse -- [options]
  --profiles N       profiles to seed (default 1000000, max 100000000)
  --data DIR         reuse this data dir (seeded earlier, e.g. by a --keep run); skips seeding.
                     The segment "${SEGMENT_NAME}" is reused if present; a key is minted each run.
  --site ID          site to use in --data (default: the site with the most profiles)
  --seconds N        measured window of each closed-loop measurement (default 5, max 120)
  --warmup N         warm-up before each window, seconds (default 1, max 30)
  --server-warmup N  the server warm-up, the same for svc and the bare server, before any window: every sampled
                     identifier of every type requested two times over, for at least N seconds (default 8, max
                     120) and until 70 s after svc started (its janitor's first pass comes at 60 s); bounded by
                     180 s. svc then holds every sampled profile's pages (SQLite's and the OS's caches), has
                     compiled every look-up's path and run its workers' first passes, so the first identifier
                     type measured pays no start-up the others do not. The bare server is warmed up first (the
                     same requests, until 70 s after svc's start), then svc, whose first window follows at once
  --rounds N         rounds of GET /profile windows (default 3, max 20): each round measures every identifier
                     type and the bare server once, the order rotated by one each round; the figures are the
                     median over rounds (a fair steady-state measure, the same for svc and the bare server)
  --connections N    keep-alive connections of the GET /profile loops (default 4, max 256)
  --repeat N         fetches of each single page (first/deep page, first query page) (default 200, max 10000)
  --depth N          page (of 100) to follow the member cursors to (default 3000, max 100000)
  --max-walk-seconds N  bound of each cursor walk (default 300)
  --small N          also seed a separate data directory with N profiles and run the same GET /profile loops
                     there: p99 at the full size over p99 at N (target <= 2) (default 1000; 0 skips)
  --keep             keep the temporary data directory (reuse it with --data)
  --svc DIR          run the (built) bin/svc.js of this checkout instead of this one's, e.g. a worktree of the
                     build before, to compare runs (give each build data directories of its own)
  -h, --help         this text
  (SVC_BENCH_CPU_PROF=DIR in the environment: svc runs with --cpu-prof and writes its profile into DIR)`;

/** node flags of svc serve: --cpu-prof into SVC_BENCH_CPU_PROF when set. */
const CPU_PROF_ARGS = process.env.SVC_BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.SVC_BENCH_CPU_PROF}`] : [];

function parse(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    options: {
      profiles: { type: 'string' },
      data: { type: 'string' },
      site: { type: 'string' },
      seconds: { type: 'string' },
      warmup: { type: 'string' },
      'server-warmup': { type: 'string' },
      rounds: { type: 'string' },
      connections: { type: 'string' },
      repeat: { type: 'string' },
      depth: { type: 'string' },
      'max-walk-seconds': { type: 'string' },
      small: { type: 'string' },
      keep: { type: 'boolean', default: false },
      svc: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  return {
    help: values.help,
    profiles: intFlag('profiles', values.profiles, 1_000_000, 1, 100_000_000),
    data: values.data,
    site: values.site,
    seconds: intFlag('seconds', values.seconds, 5, 1, 120),
    warmup: intFlag('warmup', values.warmup, 1, 0, 30),
    serverWarmup: intFlag('server-warmup', values['server-warmup'], 8, 0, 120),
    rounds: intFlag('rounds', values.rounds, 3, 1, 20),
    connections: intFlag('connections', values.connections, 4, 1, 256),
    repeat: intFlag('repeat', values.repeat, 200, 1, 10_000),
    depth: intFlag('depth', values.depth, 3000, 1, 100_000),
    maxWalkSeconds: intFlag('max-walk-seconds', values['max-walk-seconds'], 300, 1, 3600),
    small: intFlag('small', values.small, 1000, 0, 1_000_000),
    keep: values.keep,
    svc: values.svc,
  };
}
type Options = ReturnType<typeof parse>;

const fmt = {
  int: (n: number) => Math.round(n).toLocaleString('en-US'),
  ms: (us: number) => (us / 1000).toFixed(2),
  s: (ms: number) => (ms / 1000).toFixed(1),
};

/** The server's CPU per request of a closed loop, when it was sampled. */
const fmtCpu = (m: { cpuUsPerRequest?: number | undefined }) => (m.cpuUsPerRequest === undefined ? 'CPU ?' : `CPU ${fmt.int(m.cpuUsPerRequest)} µs/req`);

function table(rows: string[][], right: boolean[]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((c, i) => (right[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n');
}

// ---- HTTP ----

interface Req {
  method: 'GET' | 'POST';
  path: string;
  body?: string;
}

interface Reply {
  status: number;
  text: string;
}

class Client {
  constructor(
    readonly pool: Pool,
    private readonly key: string,
  ) {}

  async send(r: Req): Promise<Reply> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.key}` };
    if (r.body !== undefined) headers['content-type'] = 'application/json';
    const res = await this.pool.request({ method: r.method, path: r.path, headers, body: r.body });
    return { status: res.statusCode, text: await res.body.text() };
  }
}

interface Measured {
  name: string;
  requests: number;
  seconds: number;
  rps: number;
  latency: HistogramSummary;
  failures: number;
  firstFailure: string | null;
  note?: string;
  /** Server CPU (user + system) over the measured window per request measured, in µs (closed loops given the server's pid). */
  cpuUsPerRequest?: number | undefined;
}

/**
 * Closed loop: `connections` workers, one request in flight each, for a warm-up
 * and then a measured window (or until `maxRequests`). `check` returns an
 * error text for a wrong answer.
 */
async function closedLoop(
  client: Client,
  name: string,
  o: { connections: number; warmupSeconds: number; seconds: number; maxRequests: number; cpuPid?: number | undefined },
  next: (i: number) => Req,
  check: (i: number, reply: Reply) => string | null,
): Promise<Measured> {
  const hist = new Histogram();
  let sent = 0;
  let failures = 0;
  let firstFailure: string | null = null;
  let measuring = false;
  let stopped = false;
  let measureStart = 0;
  let measured = 0;
  const worker = async () => {
    while (!stopped && sent < o.maxRequests) {
      const i = sent++;
      const req = next(i);
      const t0 = performance.now();
      let problem: string | null;
      try {
        const reply = await client.send(req);
        problem = check(i, reply);
      } catch (err) {
        problem = `${(err as Error).name}: ${(err as Error).message}`;
        await new Promise((r) => setTimeout(r, 20));
      }
      const t1 = performance.now();
      if (problem !== null) {
        failures++;
        firstFailure ??= `${req.method} ${req.path}: ${problem}`.slice(0, 500);
      }
      if (measuring && t0 >= measureStart) {
        hist.record((t1 - t0) * 1000);
        measured++;
      }
    }
  };
  const all = Promise.all(Array.from({ length: o.connections }, worker));
  const race = (ms: number) => {
    let timer: NodeJS.Timeout | undefined;
    return Promise.race([all.then(() => 'done' as const), new Promise<'time'>((r) => (timer = setTimeout(() => r('time'), ms)))]).finally(() =>
      clearTimeout(timer),
    );
  };
  if (o.warmupSeconds > 0) await race(o.warmupSeconds * 1000);
  measuring = true;
  measureStart = performance.now();
  const cpu0 = processCpuMs(o.cpuPid);
  await race(o.seconds * 1000);
  const end = performance.now();
  const cpu1 = processCpuMs(o.cpuPid);
  measuring = false;
  stopped = true;
  await race(30_000);
  const seconds = (end - measureStart) / 1000;
  const cpuUsPerRequest = cpu0 !== null && cpu1 !== null && measured > 0 ? ((cpu1 - cpu0) * 1000) / measured : undefined;
  return { name, requests: measured, seconds, rps: seconds > 0 ? measured / seconds : 0, latency: hist.summary(), failures, firstFailure, cpuUsPerRequest };
}

/**
 * Requests one after another, taking `entries` in turn (so drift of the host
 * affects each alike): 3 unmeasured rounds, then `count` measured rounds,
 * bounded by `maxSeconds`. One result per entry.
 */
async function interleaved(
  client: Client,
  entries: { name: string; req: Req }[],
  count: number,
  maxSeconds: number,
  check: (r: Reply) => string | null,
): Promise<Measured[]> {
  const out = entries.map((e) => ({ e, hist: new Histogram(), failures: 0, firstFailure: null as string | null, busyMs: 0 }));
  const start = performance.now();
  for (let round = 0; round < count + 3 && performance.now() - start < maxSeconds * 1000; round++) {
    for (const m of out) {
      const t0 = performance.now();
      let problem: string | null;
      try {
        problem = check(await client.send(m.e.req));
      } catch (err) {
        problem = `${(err as Error).name}: ${(err as Error).message}`;
      }
      const dt = performance.now() - t0;
      if (problem !== null) {
        m.failures++;
        m.firstFailure ??= `${m.e.req.method} ${m.e.req.path}: ${problem}`.slice(0, 500);
      }
      if (round >= 3) {
        m.hist.record(dt * 1000);
        m.busyMs += dt;
      }
    }
  }
  return out.map((m) => ({
    name: m.e.name,
    requests: m.hist.count,
    seconds: m.busyMs / 1000,
    rps: m.busyMs > 0 ? m.hist.count / (m.busyMs / 1000) : 0,
    latency: m.hist.summary(),
    failures: m.failures,
    firstFailure: m.firstFailure,
  }));
}

async function repeated(client: Client, name: string, req: Req, count: number, maxSeconds: number, check: (r: Reply) => string | null): Promise<Measured> {
  return (await interleaved(client, [{ name, req }], count, maxSeconds, check))[0]!;
}

function pageCheck(r: Reply): string | null {
  if (r.status !== 200) return `status ${r.status}: ${r.text.slice(0, 200)}`;
  return null;
}

// ---- setup ----

interface Sample {
  profileId: string;
  values: Partial<Record<Lookup, string>>;
}

/** Random existing identifiers of a site, read from the database (read-only). */
function sampleIdentifiers(dataDir: string, siteId: string, want: number): Record<Lookup, Sample[]> {
  const db = new Database(path.join(dataDir, 'svc.db'), { readonly: true, fileMustExist: true });
  try {
    const maxRowid = (db.prepare('SELECT max(rowid) AS m FROM profiles').get() as { m: number | null }).m ?? 0;
    const profile = db.prepare<[number], { id: string; site_id: string; merged_into: string | null }>('SELECT id, site_id, merged_into FROM profiles WHERE rowid = ?');
    const identities = db.prepare<[string], { kind: string; value: string }>('SELECT kind, value FROM identities WHERE profile_id = ?');
    const hashes = db.prepare<[string], { kind: string; hash: string }>('SELECT kind, hash FROM identity_hashes WHERE profile_id = ?');
    const out = Object.fromEntries(LOOKUPS.map((k) => [k, [] as Sample[]])) as Record<Lookup, Sample[]>;
    const seen = new Set<string>();
    for (let attempt = 0; attempt < want * 50 && LOOKUPS.some((k) => out[k].length < want); attempt++) {
      const row = profile.get(1 + Math.floor(Math.random() * maxRowid));
      if (!row || row.site_id !== siteId || row.merged_into !== null || seen.has(row.id)) continue;
      seen.add(row.id);
      const values: Partial<Record<Lookup, string>> = { profile_id: row.id };
      for (const i of identities.all(row.id)) {
        if (i.kind === 'visitor') values.visitor_id ??= i.value;
        else if (i.kind === 'email') values.email ??= i.value;
        else if (i.kind === 'external_id') values.external_id ??= i.value;
      }
      for (const h of hashes.all(row.id)) {
        if (h.kind === 'email_sha256') values.email_sha256 ??= h.hash;
        else if (h.kind === 'phone_sha256') values.phone_sha256 ??= h.hash;
      }
      for (const k of LOOKUPS) if (values[k] !== undefined && out[k].length < want) out[k].push({ profileId: row.id, values });
    }
    return out;
  } finally {
    db.close();
  }
}

function readOnly<T>(dataDir: string, fn: (db: BetterSqlite3.Database) => T): T {
  const db = new Database(path.join(dataDir, 'svc.db'), { readonly: true, fileMustExist: true });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

/** Runs `svc seed`, passing its progress lines through; resolves with its JSON. */
function runSeed(registry: ChildRegistry, args: string[], timeoutMs: number, log: (s: string) => void): Promise<{ seconds: number; profiles: number; events: number }> {
  return new Promise((resolve, reject) => {
    const child = registry.add(spawn(process.execPath, [SVC_BIN, 'seed', ...args, '--json'], { cwd: SVC_ROOT, stdio: ['ignore', 'pipe', 'pipe'] }));
    let out = '';
    let err = '';
    child.stdout!.setEncoding('utf8').on('data', (c: string) => (out += c));
    child.stderr!.setEncoding('utf8').on('data', (c: string) => {
      err = (err + c).slice(-8192);
      for (const line of c.split('\n')) if (line.trim()) log(`  ${line.trim()}`);
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`svc seed: no exit within ${timeoutMs} ms`));
    }, timeoutMs);
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      if (code !== 0) reject(new Error(`svc seed exited ${code}: ${err.trim()}`));
      else resolve(JSON.parse(out) as { seconds: number; profiles: number; events: number });
    });
  });
}

/** Requests of the server warm-up: every sampled identifier of every type in turn (the same list for the bare server). */
function warmupPaths(samples: Record<Lookup, Sample[]>): string[] {
  const kinds = LOOKUPS.filter((k) => samples[k].length > 0);
  const longest = Math.max(0, ...kinds.map((k) => samples[k].length));
  const out: string[] = [];
  for (let i = 0; i < longest; i++) {
    for (const k of kinds) {
      const s = samples[k][i];
      if (s) out.push(`${API}/profile?${k}=${encodeURIComponent(s.values[k]!)}`);
    }
  }
  return out;
}

/**
 * The server warm-up, the same for svc and the bare server: `paths` requested over `connections` keep-alive
 * connections, WARMUP_PASSES times over and for at least `seconds` (whichever ends later), bounded by
 * `maxSeconds`. On svc it reads every sampled profile (its pages into SQLite's and the OS's caches) and compiles
 * every look-up's path before any window, so the first identifier type measured pays no start-up the others
 * do not. Returns the requests sent and the seconds taken.
 */
async function serverWarmup(client: Client, paths: string[], connections: number, seconds: number, maxSeconds: number): Promise<{ requests: number; seconds: number }> {
  const start = performance.now();
  const want = paths.length * WARMUP_PASSES;
  let sent = 0;
  const worker = async () => {
    for (;;) {
      const elapsed = performance.now() - start;
      if (elapsed >= maxSeconds * 1000 || (sent >= want && elapsed >= seconds * 1000) || paths.length === 0) return;
      const i = sent++;
      try {
        await client.send({ method: 'GET', path: paths[i % paths.length]! });
      } catch {
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  };
  await Promise.all(Array.from({ length: connections }, worker));
  return { requests: sent, seconds: (performance.now() - start) / 1000 };
}
/** Passes of the server warm-up over every sampled identifier. */
const WARMUP_PASSES = 2;

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 === 1 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** One figure of several rounds of a closed loop: the median round's req/s and CPU, latency of the median round by req/s. */
function medianOf(name: string, runs: Measured[]): Measured {
  const byRps = [...runs].sort((a, b) => a.rps - b.rps);
  const mid = byRps[(byRps.length - 1) >> 1]!;
  const cpus = runs.map((r) => r.cpuUsPerRequest).filter((c): c is number => c !== undefined);
  const failures = runs.reduce((n, r) => n + r.failures, 0);
  return {
    ...mid,
    name,
    requests: runs.reduce((n, r) => n + r.requests, 0),
    rps: median(runs.map((r) => r.rps)),
    failures,
    firstFailure: runs.find((r) => r.firstFailure !== null)?.firstFailure ?? null,
    cpuUsPerRequest: cpus.length > 0 ? median(cpus) : undefined,
  };
}

/** The bare baseline measured in the same rounds as svc's identifier types. */
interface BareTarget {
  client: Client;
  pid: number | undefined;
  /** The length its answers must have. */
  length: number;
}

/**
 * GET /profile by each identifier type, closed loop; the answer must be the sampled profile. The server (and
 * the bare server, when given: it gets the same warm-up) is warmed up first (serverWarmup); then --rounds
 * rounds, each measuring every identifier type (and the bare server) once, the order rotated by one between
 * rounds so that no type is always measured first or right after another; each window has its own --warmup.
 * The figures are the median over rounds per type.
 */
async function profileLoops(
  client: Client,
  samples: Record<Lookup, Sample[]>,
  opts: Options,
  suffix: string,
  log: (s: string) => void,
  serverPid: number | undefined,
  serverStarted: number,
  bare?: BareTarget,
): Promise<{ measured: Measured[]; bare: Measured | null; problems: string[] }> {
  const problems: string[] = [];
  const paths = warmupPaths(samples);
  if (opts.serverWarmup > 0) {
    const maxSeconds = Math.max(opts.serverWarmup, SERVER_WARMUP_MAX_SECONDS);
    // Past the first passes of svc's workers: the janitor's first retention pass comes 60 s after the start (a
    // burst of server CPU that would land in whichever window runs then). The bare server is warmed up first,
    // until then (the same requests), and svc's own warm-up ends right before its first window: a server left idle
    // for ~70 s after its warm-up paid 2-3x the CPU a request over its next ~1,500 requests (no pread: not SQLite's
    // cache), more than a window's own warm-up absorbs.
    const workersDone = () => Math.max(0, WORKERS_FIRST_PASSES_SECONDS - (performance.now() - serverStarted) / 1000);
    let bareSeconds = 0;
    if (bare) {
      const b = await serverWarmup(bare.client, paths, opts.connections, Math.max(opts.serverWarmup, workersDone()), maxSeconds);
      bareSeconds = b.seconds;
      log(`  bare server warm-up: ${fmt.int(b.requests)} requests in ${b.seconds.toFixed(1)} s (every sampled identifier's request ${WARMUP_PASSES}x, at least ${opts.serverWarmup} s and until ${WORKERS_FIRST_PASSES_SECONDS} s after svc's start)`);
    }
    const w = await serverWarmup(client, paths, opts.connections, Math.max(opts.serverWarmup, workersDone()), maxSeconds);
    log(`  server warm-up: ${fmt.int(w.requests)} requests in ${w.seconds.toFixed(1)} s (every sampled identifier ${WARMUP_PASSES}x, at least ${opts.serverWarmup} s and until ${WORKERS_FIRST_PASSES_SECONDS} s after the start)${suffix}`);
    if (bare && bareSeconds < w.seconds) log(`  note: the bare server's warm-up was shorter than svc's (${bareSeconds.toFixed(1)} s against ${w.seconds.toFixed(1)} s)`);
  }
  const kinds: Lookup[] = [];
  for (const kind of LOOKUPS) {
    if (samples[kind].length === 0) problems.push(`no ${kind} values to look up${suffix}`);
    else kinds.push(kind);
  }
  const BARE = 'bare' as const;
  const targets: (Lookup | typeof BARE)[] = bare ? [...kinds, BARE] : [...kinds];
  const runs = new Map<string, Measured[]>(targets.map((t) => [t, []]));
  for (let round = 0; round < opts.rounds; round++) {
    const sequence = targets.map((_, i) => targets[(i + round) % targets.length]!);
    for (const t of sequence) {
      let m: Measured;
      if (t === BARE) {
        m = await closedLoop(
          bare!.client,
          'bare node:http, fixed snapshot',
          { connections: opts.connections, warmupSeconds: opts.warmup, seconds: opts.seconds, maxRequests: 2_000_000, cpuPid: bare!.pid },
          () => ({ method: 'GET', path: `${API}/profile?profile_id=x` }),
          (_, r) => (r.status === 200 && r.text.length === bare!.length ? null : `status ${r.status}`),
        );
        log(`  ${opts.rounds > 1 ? `round ${round + 1} ` : ''}bare snapshot ${fmt.int(m.rps).padStart(7)} req/s  p50 ${fmt.ms(m.latency.p50Us)} ms  p99 ${fmt.ms(m.latency.p99Us)} ms  ${fmtCpu(m)}`);
      } else {
        const list = samples[t];
        const order = list.map(() => Math.floor(Math.random() * list.length));
        m = await closedLoop(
          client,
          `GET /profile?${t}`,
          { connections: opts.connections, warmupSeconds: opts.warmup, seconds: opts.seconds, maxRequests: 2_000_000, cpuPid: serverPid },
          (i) => ({ method: 'GET', path: `${API}/profile?${t}=${encodeURIComponent(list[order[i % order.length]!]!.values[t]!)}` }),
          (i, r) => {
            if (r.status !== 200) return `status ${r.status}: ${r.text.slice(0, 200)}`;
            const want = list[order[i % order.length]!]!.profileId;
            const got = (JSON.parse(r.text) as { profile_id?: string }).profile_id;
            return got === want ? null : `expected ${want}, got ${got}`;
          },
        );
        log(`  ${opts.rounds > 1 ? `round ${round + 1} ` : ''}${t.padEnd(13)} ${fmt.int(m.rps).padStart(7)} req/s  p50 ${fmt.ms(m.latency.p50Us)} ms  p99 ${fmt.ms(m.latency.p99Us)} ms  ${fmtCpu(m)}  (${fmt.int(m.requests)} requests, ${m.failures} wrong)${suffix}`);
      }
      runs.get(t)!.push(m);
    }
  }
  const measured = kinds.map((k) => medianOf(`GET /profile?${k}`, runs.get(k)!));
  if (opts.rounds > 1) {
    log(`  median of ${opts.rounds} rounds:`);
    for (const m of measured) log(`  ${m.name.slice('GET /profile?'.length).padEnd(13)} ${fmt.int(m.rps).padStart(7)} req/s  ${fmtCpu(m)}${suffix}`);
  }
  const bareMeasured = bare ? medianOf('bare node:http, fixed snapshot', runs.get(BARE)!) : null;
  if (bareMeasured && opts.rounds > 1) log(`  bare snapshot ${fmt.int(bareMeasured.rps).padStart(7)} req/s  ${fmtCpu(bareMeasured)}`);
  return { measured, bare: bareMeasured, problems };
}
/** Bound of the server warm-up (its passes over every sample stop here even when unfinished). */
const SERVER_WARMUP_MAX_SECONDS = 180;
/** Seconds after svc's start by which its workers' first passes are done (the janitor's comes at 60 s). */
const WORKERS_FIRST_PASSES_SECONDS = 70;

/** A separate data directory seeded with --small profiles, served alone, read by the same loops. */
async function smallDataset(
  registry: ChildRegistry,
  tmpRoot: string,
  opts: Options,
  env: NodeJS.ProcessEnv,
  log: (s: string) => void,
): Promise<{ measured: Measured[]; problems: string[] }> {
  const dataDir = path.join(tmpRoot, 'small');
  const svc = async (args: string[]) => {
    const r = await runCommand(registry, process.execPath, [SVC_BIN, ...args], { env, cwd: SVC_ROOT, timeoutMs: 120_000 });
    if (r.code !== 0) throw new Error(`svc ${args.join(' ')} exited ${r.code}: ${r.stderr.trim() || r.stdout.trim()}`);
    return r.stdout;
  };
  log(`\n[profile @ ${fmt.int(opts.small)}] a separate data directory seeded with ${fmt.int(opts.small)} profiles, the same GET /profile loops`);
  const siteId = (JSON.parse(await svc(['site', 'create', '--name', 'bench-pulse-small', '--data', dataDir, '--json'])) as { site_id: string }).site_id;
  await runSeed(registry, ['--site', siteId, '--profiles', String(opts.small), '--seed', '1', '--data', dataDir], 10 * 60_000, () => undefined);
  const key = (JSON.parse(await svc(['key', 'mint', '--site', siteId, '--scopes', 'profile:read,profile:read:pii,segment:read', '--data', dataDir, '--json'])) as { key: string }).key;
  const samples = sampleIdentifiers(dataDir, siteId, Math.min(1000, opts.small));
  const serverStarted = performance.now();
  const server = await spawnServer(registry, {
    name: 'svc-small',
    command: process.execPath,
    args: [...CPU_PROF_ARGS, SVC_BIN, 'serve', '--host', '127.0.0.1', '--port', '0', '--data', dataDir],
    env,
    cwd: SVC_ROOT,
    ready: /^svc listening on (http:\/\/127\.0\.0\.1:\d+)$/,
    timeoutMs: 60_000,
  });
  const pool = new Pool(server.url, { connections: opts.connections, pipelining: 1, keepAliveTimeout: 60_000 });
  try {
    return await profileLoops(new Client(pool, key), samples, opts, ` @ ${fmt.int(opts.small)}`, log, server.child.pid, serverStarted);
  } finally {
    await pool.destroy();
    await stopChild(server.child, 15_000);
  }
}

async function main(): Promise<number> {
  let opts: Options;
  try {
    opts = parse(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`bench:pulse: ${(err as Error).message}\n${HELP}\n`);
    return 2;
  }
  if (opts.help) {
    process.stdout.write(`${HELP}\n`);
    return 0;
  }
  if (opts.svc !== undefined) {
    SVC_ROOT = path.resolve(opts.svc);
    SVC_BIN = path.join(SVC_ROOT, 'bin', 'svc.js');
  }

  const registry = new ChildRegistry();
  const tmpRoot = mkdtempSync(path.join(os.tmpdir(), 'svc-bench-pulse-'));
  const pools: Pool[] = [];
  const cleanup = () => {
    registry.killAll('SIGKILL');
    if (!opts.keep) removeTree(tmpRoot);
  };
  process.once('exit', cleanup);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(sig, () => {
      process.stderr.write(`\nbench:pulse: ${sig}, stopping every child process\n`);
      process.exit(130);
    });
  }
  const log = (line: string) => process.stdout.write(`${line}\n`);
  const env: NodeJS.ProcessEnv = { ...process.env, SVC_RATE_LIMIT: 'off', SVC_LOG_LEVEL: 'warn' };
  const svc = async (args: string[], timeoutMs = 60_000) => {
    const r = await runCommand(registry, process.execPath, [SVC_BIN, ...args], { env, cwd: SVC_ROOT, timeoutMs });
    if (r.code !== 0) throw new Error(`svc ${args.join(' ')} exited ${r.code}: ${r.stderr.trim() || r.stdout.trim()}`);
    return r.stdout;
  };

  log(`bench:pulse  node ${process.version}, ${os.cpus().length} CPU(s) (${os.cpus()[0]?.model.trim() ?? '?'}), ${os.platform()} ${os.release()}`);
  if (SVC_ROOT !== REPO_ROOT) log(`svc: ${SVC_BIN}`);
  const failures: string[] = [];
  const results: Measured[] = [];
  const facts: string[][] = [];

  // --- data ---
  let dataDir: string;
  let siteId: string;
  if (opts.data) {
    dataDir = path.resolve(opts.data);
    const sites = readOnly(dataDir, (db) =>
      db.prepare<[], { site_id: string; n: number }>('SELECT site_id, count(*) AS n FROM profiles GROUP BY site_id ORDER BY n DESC').all(),
    );
    const chosen = opts.site ? sites.find((s) => s.site_id === opts.site) : sites[0];
    if (!chosen) {
      log(`bench:pulse: ${opts.site ? `no profiles in site ${opts.site}` : 'no profiles'} in ${dataDir}`);
      return 1;
    }
    siteId = chosen.site_id;
    log(`data: ${dataDir} (reused), site ${siteId} with ${fmt.int(chosen.n)} profiles`);
  } else {
    dataDir = path.join(tmpRoot, 'data');
    log(`data: ${dataDir}${opts.keep ? ' (kept)' : ' (removed at exit)'}`);
    siteId = (JSON.parse(await svc(['site', 'create', '--name', 'bench-pulse', '--data', dataDir, '--json'])) as { site_id: string }).site_id;
    log(`\n[seed] svc seed --profiles ${opts.profiles} (site ${siteId})`);
    const t0 = performance.now();
    const seeded = await runSeed(registry, ['--site', siteId, '--profiles', String(opts.profiles), '--seed', '1', '--data', dataDir], 30 * 60_000, log);
    const wall = performance.now() - t0;
    log(`  seeded ${fmt.int(seeded.profiles)} profiles, ${fmt.int(seeded.events)} events in ${seeded.seconds.toFixed(1)} s (command wall time ${fmt.s(wall)} s)`);
    facts.push(['svc seed', `${fmt.int(seeded.profiles)} profiles`, `${seeded.seconds.toFixed(1)} s seeding, ${fmt.s(wall)} s wall`]);
  }
  const counts = readOnly(dataDir, (db) => ({
    profiles: (db.prepare('SELECT count(*) AS n FROM profiles WHERE site_id = ?').get(siteId) as { n: number }).n,
    events: (db.prepare('SELECT count(*) AS n FROM events WHERE site_id = ?').get(siteId) as { n: number }).n,
  }));
  log(`dataset: ${fmt.int(counts.profiles)} profiles, ${fmt.int(counts.events)} events in site ${siteId}`);

  // --- segment ---
  const segments = JSON.parse(await svc(['segment', 'list', '--site', siteId, '--data', dataDir, '--json'])) as { id: string; name: string; members: number }[];
  let segment = segments.find((s) => s.name === SEGMENT_NAME);
  if (segment) {
    log(`\n[segment] reusing ${segment.id} "${SEGMENT_NAME}" (${fmt.int(segment.members)} members)`);
  } else {
    log(`\n[segment] svc segment create --name ${SEGMENT_NAME} --rule '${JSON.stringify(SEGMENT_RULE)}'`);
    const t0 = performance.now();
    segment = JSON.parse(
      await svc(['segment', 'create', '--site', siteId, '--name', SEGMENT_NAME, '--rule', JSON.stringify(SEGMENT_RULE), '--data', dataDir, '--json'], 30 * 60_000),
    ) as { id: string; name: string; members: number };
    const ms = performance.now() - t0;
    log(`  ${segment.id}: ${fmt.int(segment.members)} members, backfilled in ${fmt.s(ms)} s (command wall time)`);
    facts.push(['svc segment create (backfill)', `${fmt.int(segment.members)} members`, `${fmt.s(ms)} s`]);
  }

  // --- key, samples, server ---
  const key = (JSON.parse(
    await svc(['key', 'mint', '--site', siteId, '--scopes', 'profile:read,profile:read:pii,segment:read', '--name', 'bench:pulse', '--data', dataDir, '--json']),
  ) as { key: string }).key;
  const SAMPLES = 1000;
  const samples = sampleIdentifiers(dataDir, siteId, SAMPLES);
  log(`samples: ${LOOKUPS.map((k) => `${k} ${samples[k].length}`).join(', ')}`);

  const serverStarted = performance.now();
  const server = await spawnServer(registry, {
    name: 'svc',
    command: process.execPath,
    args: [...CPU_PROF_ARGS, SVC_BIN, 'serve', '--host', '127.0.0.1', '--port', '0', '--data', dataDir],
    env,
    cwd: SVC_ROOT,
    ready: /^svc listening on (http:\/\/127\.0\.0\.1:\d+)$/,
    errorPattern: /"level":(50|60)\b/,
    timeoutMs: 60_000,
  });
  log(`server: pid ${server.child.pid}, ${server.url}, SVC_RATE_LIMIT=off`);

  // Segment creation wrote a segment.changed outbox row per member; let the server's webhook
  // fan-out drain them before measuring, so it does not compete with the requests.
  const drainStart = performance.now();
  for (;;) {
    const pending = readOnly(dataDir, (db) =>
      (db.prepare("SELECT coalesce((SELECT max(id) FROM outbox), 0) - coalesce((SELECT last_id FROM outbox_cursor WHERE name = 'webhooks'), 0) AS n").get() as { n: number }).n,
    );
    if (pending <= 0) break;
    if (performance.now() - drainStart > 300_000) {
      log(`  note: ${fmt.int(pending)} outbox rows still pending after 300 s; measuring anyway`);
      break;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  if (performance.now() - drainStart > 500) log(`outbox drained by the server in ${fmt.s(performance.now() - drainStart)} s`);

  const profileP99 = new Map<string, number>();
  const cpu0 = processCpuMs(server.child.pid);
  const wall0 = performance.now();
  const pool = (connections: number) => {
    const p = new Pool(server.url, { connections, pipelining: 1, keepAliveTimeout: 60_000, keepAliveMaxTimeout: 60_000, headersTimeout: 120_000, bodyTimeout: 120_000 });
    pools.push(p);
    return new Client(p, key);
  };

  try {
    // --- GET /profile per identifier type, and the bare baseline (node:http answering one fixed snapshot of the
    // same size) measured in the same rounds, after the same warm-up ---
    const snapshot = await pool(1).send({ method: 'GET', path: `${API}/profile?profile_id=${encodeURIComponent(samples.profile_id[0]!.profileId)}` });
    if (snapshot.status !== 200) throw new Error(`snapshot for the bare baseline: status ${snapshot.status}`);
    const bodyFile = path.join(tmpRoot, 'snapshot.json');
    writeFileSync(bodyFile, snapshot.text);
    const bareServer = await spawnServer(registry, {
      name: 'bare-snapshot',
      command: process.execPath,
      args: ['--import', REGISTER_HREF, BARE_SNAPSHOT, '--body', bodyFile],
      cwd: REPO_ROOT,
      ready: /^bare-snapshot listening on (http:\/\/127\.0\.0\.1:\d+)$/,
    });
    try {
      const barePool = new Pool(bareServer.url, { connections: opts.connections, pipelining: 1, keepAliveTimeout: 60_000 });
      pools.push(barePool);
      log(
        `\n[profile] GET ${API}/profile, ${opts.connections} connections; svc and the bare server each warmed up alike (every sampled identifier ` +
          `${WARMUP_PASSES}x and at least ${opts.serverWarmup} s); then ${opts.rounds} round(s) over every identifier type and the bare server, ` +
          `the order rotated each round, warm-up ${opts.warmup} s and window ${opts.seconds} s each`,
      );
      const profileRuns = await profileLoops(pool(opts.connections), samples, opts, '', log, server.child.pid, serverStarted, {
        client: new Client(barePool, key),
        pid: bareServer.child.pid,
        length: snapshot.text.length,
      });
      results.push(...profileRuns.measured);
      failures.push(...profileRuns.problems);
      for (const m of profileRuns.measured) profileP99.set(m.name, m.latency.p99Us);
      const m = profileRuns.bare!;
      m.note = `${Buffer.byteLength(snapshot.text)} bytes a snapshot`;
      results.push(m);
      for (const p of profileRuns.measured) {
        const q = m.rps > 0 ? p.rps / m.rps : 0;
        p.note = `${q.toFixed(2)} x bare`;
      }
      const worst = Math.min(...profileRuns.measured.map((p) => (m.rps > 0 ? p.rps / m.rps : 0)));
      log(`  target GET /profile >= 0.30 x bare at ${fmt.int(counts.profiles)} profiles: worst identifier type ${worst.toFixed(2)} (${worst >= 0.3 ? 'met' : 'NOT met'}; informational)`);
    } finally {
      await stopChild(bareServer.child, 5_000);
    }

    // --- segment members: first page vs deep page ---
    const one = pool(1);
    const membersPath = (cursor?: string) => `${API}/segment/${segment.id}/members?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const maxDepth = Math.max(1, Math.min(opts.depth, Math.floor((segment.members - 1) / 100)));
    log(`\n[members] GET ${API}/segment/${segment.id}/members?limit=100: cursors followed to page ${fmt.int(maxDepth + 1)}, then that page and the first page fetched in turn, ${opts.repeat} times each`);
    let cursor: string | undefined;
    let depth = 0;
    const walkStart = performance.now();
    let walkIds = 0;
    while (depth < maxDepth && performance.now() - walkStart < opts.maxWalkSeconds * 1000) {
      const r = await one.send({ method: 'GET', path: membersPath(cursor) });
      if (r.status !== 200) {
        failures.push(`members walk: status ${r.status} at page ${depth + 1}`);
        break;
      }
      const body = JSON.parse(r.text) as { profile_ids: string[]; next_cursor: string | null };
      walkIds += body.profile_ids.length;
      if (!body.next_cursor) break;
      cursor = body.next_cursor;
      depth++;
    }
    const walkMs = performance.now() - walkStart;
    log(`  walked ${fmt.int(depth)} pages (${fmt.int(walkIds)} ids) in ${fmt.s(walkMs)} s (${fmt.ms((walkMs * 1000) / Math.max(1, depth))} ms a page)`);
    // The first page and the deep page, fetched in turn.
    const [first, deep] = (await interleaved(
      one,
      [
        { name: 'members: first page', req: { method: 'GET', path: membersPath() } },
        { name: `members: page ${depth + 1}`, req: { method: 'GET', path: membersPath(cursor) } },
      ],
      opts.repeat,
      120,
      pageCheck,
    )) as [Measured, Measured];
    results.push(first, deep);
    const ratio = first.latency.p50Us > 0 ? deep.latency.p50Us / first.latency.p50Us : NaN;
    deep.note = `deep/first p50 ${ratio.toFixed(2)}`;
    log(`  first page p50 ${fmt.ms(first.latency.p50Us)} ms p99 ${fmt.ms(first.latency.p99Us)} ms; page ${fmt.int(depth + 1)} p50 ${fmt.ms(deep.latency.p50Us)} ms p99 ${fmt.ms(deep.latency.p99Us)} ms; ratio deep/first (p50) ${ratio.toFixed(2)}`);

    // --- POST /profiles/query ---
    for (const [label, rule, sqlCount] of [
      [
        'trait rule',
        TRAIT_RULE,
        (db: BetterSqlite3.Database) =>
          (db
            .prepare(
              "SELECT count(*) AS n FROM profiles WHERE site_id = ? AND merged_into IS NULL AND json_extract(traits, '$.plan') = 'gold' AND CAST(json_extract(traits, '$.n') AS REAL) >= 500",
            )
            .get(siteId) as { n: number }).n,
      ],
      [
        'event rule',
        EVENT_RULE,
        (db: BetterSqlite3.Database) =>
          (db
            .prepare(
              "SELECT count(DISTINCT e.profile_id) AS n FROM events e JOIN profiles p ON p.id = e.profile_id WHERE e.site_id = ? AND e.type = 'add_to_cart' AND json_extract(e.body, '$.sku') = 'MUG-01' AND p.merged_into IS NULL",
            )
            .get(siteId) as { n: number }).n,
      ],
    ] as const) {
      const body = (c?: string) => JSON.stringify({ rule, limit: 1000, ...(c ? { cursor: c } : {}) });
      log(`\n[query] POST ${API}/profiles/query (${label}) ${JSON.stringify(rule)} limit 1000`);
      const firstPage = await repeated(one, `query ${label}: first page`, { method: 'POST', path: `${API}/profiles/query`, body: body() }, Math.max(1, Math.min(opts.repeat, 50)), 60, pageCheck);
      results.push(firstPage);
      log(`  first page: p50 ${fmt.ms(firstPage.latency.p50Us)} ms p99 ${fmt.ms(firstPage.latency.p99Us)} ms (${firstPage.requests} fetches)`);
      const hist = new Histogram();
      let c: string | undefined;
      let pages = 0;
      let ids = 0;
      let complete = false;
      const t0 = performance.now();
      while (pages < 100_000 && performance.now() - t0 < opts.maxWalkSeconds * 1000) {
        const s = performance.now();
        const r = await one.send({ method: 'POST', path: `${API}/profiles/query`, body: body(c) });
        hist.record((performance.now() - s) * 1000);
        if (r.status !== 200) {
          failures.push(`query ${label} walk: status ${r.status} at page ${pages + 1}: ${r.text.slice(0, 200)}`);
          break;
        }
        const page = JSON.parse(r.text) as { profile_ids: string[]; next_cursor: string | null };
        pages++;
        ids += page.profile_ids.length;
        if (!page.next_cursor) {
          complete = true;
          break;
        }
        c = page.next_cursor;
      }
      const walkMsQ = performance.now() - t0;
      const expected = readOnly(dataDir, sqlCount);
      const walk: Measured = {
        name: `query ${label}: walk all pages`,
        requests: pages,
        seconds: walkMsQ / 1000,
        rps: pages / (walkMsQ / 1000),
        latency: hist.summary(),
        failures: 0,
        firstFailure: null,
        note: `${fmt.int(ids)} ids in ${fmt.s(walkMsQ)} s${complete ? '' : ' (stopped by the bound)'}; SQL count ${fmt.int(expected)}`,
      };
      if (complete && ids !== expected) {
        walk.failures = 1;
        walk.firstFailure = `walk returned ${ids} ids, SQL counts ${expected}`;
      }
      results.push(walk);
      log(`  walk: ${fmt.int(pages)} pages, ${fmt.int(ids)} ids in ${fmt.s(walkMsQ)} s; per page p50 ${fmt.ms(walk.latency.p50Us)} ms p99 ${fmt.ms(walk.latency.p99Us)} ms; SQL count ${fmt.int(expected)} (${complete ? (ids === expected ? 'match' : 'MISMATCH') : 'incomplete'})`);
    }
  } finally {
    const cpu = processCpuMs(server.child.pid);
    if (cpu !== null && cpu0 !== null) log(`\nserver CPU during the measurements: ${Math.round(((cpu - cpu0) / (performance.now() - wall0)) * 100)}% of one core`);
    await Promise.all(pools.map((p) => p.destroy()));
    const stopped = await stopChild(server.child, 15_000);
    if (stopped.killed) log('note: the server did not stop within 15 s; killed');
    if (server.stderr.errorLines > 0) log(`note: the server logged ${server.stderr.errorLines} error line(s); last: ${server.stderr.lastLines(3)}`);
  }

  // --- the same reads at a small size: p99 must not grow with the data set ---
  if (opts.small > 0 && profileP99.size > 0) {
    try {
      const small = await smallDataset(registry, tmpRoot, opts, env, log);
      for (const m of small.measured) {
        const big = profileP99.get(m.name);
        const q = big !== undefined && m.latency.p99Us > 0 ? big / m.latency.p99Us : NaN;
        m.note = `p99 ${fmt.int(counts.profiles)} / ${fmt.int(opts.small)} = ${q.toFixed(2)}`;
        m.name = `${m.name} @ ${fmt.int(opts.small)}`;
        results.push(m);
      }
      failures.push(...small.problems);
      const ratios = small.measured.map((m) => Number(m.note!.split('= ')[1]));
      const worst = Math.max(...ratios.filter((r) => Number.isFinite(r)));
      log(`target p99 at ${fmt.int(counts.profiles)} profiles <= 2 x p99 at ${fmt.int(opts.small)}: worst identifier type ${worst.toFixed(2)} (${worst <= 2 ? 'met' : 'NOT met'}; informational)`);
    } catch (err) {
      failures.push(`small data set: ${(err as Error).message}`);
    }
  }

  // --- summary ---
  log('');
  for (const f of facts) log(`${f[0]}: ${f[1]}, ${f[2]}`);
  const lines: string[][] = [['measurement', 'requests', 'req/s', 'p50 ms', 'p99 ms', 'max ms', 'CPU µs/req', 'wrong', 'note']];
  for (const m of results) {
    const cpu = m.cpuUsPerRequest === undefined ? '' : fmt.int(m.cpuUsPerRequest);
    lines.push([m.name, fmt.int(m.requests), fmt.int(m.rps), fmt.ms(m.latency.p50Us), fmt.ms(m.latency.p99Us), fmt.ms(m.latency.maxUs), cpu, String(m.failures), m.note ?? '']);
    if (m.failures > 0) failures.push(`${m.name}: ${m.failures} wrong; first: ${m.firstFailure}`);
  }
  log(table(lines, [false, true, true, true, true, true, true, true, false]));
  if (failures.length) {
    log(`\n${failures.length} problem(s):\n  ${failures.join('\n  ')}`);
    return 1;
  }
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`bench:pulse: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);

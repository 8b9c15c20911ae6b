/**
 * Webhook delivery benchmark (never part of the pass/fail suite):
 *
 *   npm run bench:webhooks [-- --seconds 10 --connections 16 --backlog 100000 --only steady,backlog]
 *   npm run bench:webhooks -- --database-url postgres://user@127.0.0.1:5432/db --destinations 2
 *
 * Every process runs on its own: a local receiver (node:http on 127.0.0.1,
 * lib/webhook-receiver.ts) that answers 200 at once and records, for every
 * request, its arrival time, X-SVC-Delivery id and the event it carries; a
 * load generator (lib/webhook-load.ts); svc itself. Figures are measured
 * against a baseline taken in the same run, because the host is shared.
 *
 * 1. baseline: a bare undici POST loop to the receiver with svc's
 *    per-destination concurrency (SVC_WEBHOOK_CONCURRENCY, default 16) and a
 *    body of the size svc delivers: deliveries/s the transport alone allows.
 *    It runs first and again last; ratios use the mean of the two runs.
 * 2. steady (svc serve --allow-private-destinations, SVC_RATE_LIMIT=off, one
 *    destination subscribed to every event):
 *    a. max: pageviews POSTed to /api/events over N connections as fast as
 *       svc acknowledges them for T s; deliveries/s at the receiver during
 *       the window (ratio to the baseline, target >= 0.5) and
 *       acknowledged-to-delivered latency (which includes queueing when
 *       ingestion outruns delivery).
 *    b. paced: pageviews at a fixed rate (--rate, default half of what 2a
 *       delivered) for T s: latency at a load svc sustains.
 * 3. backlog: a fresh svc; the receiver holds every answer for --hold-ms
 *    (a slow receiver: nothing fails, almost nothing is delivered) while
 *    --backlog pageviews are ingested as fast as possible; then it answers at
 *    once and the bench times the drain: time, rate, svc RSS every 100 ms
 *    (start, middle, end, peak), and checks that every event arrived
 *    (distinct X-SVC-Delivery ids) and how many arrived twice.
 *
 *    Why not "disable the destination, ingest, enable it": the fan-out only
 *    creates deliveries for destinations enabled at that moment, so events
 *    ingested while a destination is disabled are never delivered to it.
 *    A running server does pick up --enable (within about a second), but
 *    there would be nothing to drain.
 *
 *    With --destinations N the backlog phases subscribe N destinations to
 *    every event (each posting to a path of its own, /hook/0 .. /hook/N-1,
 *    counted apart by the receiver): N deliveries per event, N lanes of
 *    SVC_WEBHOOK_CONCURRENCY each. Default 1, as before.
 * 4. backlog-pg, backlog-pg-2x (with --database-url URL): the same backlog
 *    drain with svc on PostgreSQL: one instance, then two `svc serve` on the
 *    same schema and the same data directory (the secret key they must
 *    share), ingestion connections split between them round-robin, both
 *    running the webhook workers. Outbox rows are claimed with SKIP LOCKED by
 *    either instance, but a destination's deliveries are sent only by the
 *    instance holding its lease: with one destination one instance sends
 *    everything (the output says so), and --destinations N gives two
 *    instances lanes to share (which instance takes which lease is a race;
 *    the output shows how many deliveries each instance sent, from the
 *    sockets they came over). Each phase runs on a fresh schema
 *    bench_<pid>_<phase> (svc's `schema` URL parameter), dropped afterwards
 *    unless --keep. Deliveries/s, lost, duplicates and the ratio to the bare
 *    baseline of the same run are reported next to the SQLite drain, with
 *    the CPU of the PostgreSQL backends serving svc (server on this host).
 *    The steady phases stay on SQLite.
 *
 * Exit status: 0 whatever the figures; 1 when a server fails to start, a
 * phase cannot run, PostgreSQL is unreachable, or an acknowledged event never
 * reaches the receiver (of every destination).
 */
import { mkdirSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadConfig } from '../../src/config.js';
import { ChildRegistry, GroupCpu, hostCpuPercent, hostCpuTicks, processCpuMs } from './lib/child.js';
import { Histogram } from './lib/histogram.js';
import { forkWorker, type IpcWorker } from './lib/ipc.js';
import { BenchSchemas, databaseUrlError, redact } from './lib/pg.js';
import { readVm, RssSampler } from './lib/rss.js';
import { localPgPort, pgBackendPids, PortOwners } from './lib/sockets.js';
import { startSvc, type SvcInstance } from './lib/svc-webhooks.js';
import { removeTree } from './lib/targets.js';
import type { IngestJob, JobResult, PostJob } from './lib/webhook-load.js';
import type { RangeStats } from './lib/webhook-receiver.js';
import { UsageError, intFlag } from './lib/args.js';

const RECEIVER_FILE = fileURLToPath(new URL('./lib/webhook-receiver.ts', import.meta.url));
const LOAD_FILE = fileURLToPath(new URL('./lib/webhook-load.ts', import.meta.url));
const SECRET = 's3cret-bench-webhooks';
const PHASES = ['steady', 'backlog', 'backlog-pg', 'backlog-pg-2x'] as const;
type Phase = (typeof PHASES)[number];
type BacklogPhase = Exclude<Phase, 'steady'>;
const PG_PHASES: readonly Phase[] = ['backlog-pg', 'backlog-pg-2x'];

/** The backlog drains: storage and number of `svc serve` instances. */
const BACKLOG_VARIANTS: Record<BacklogPhase, { pg: boolean; instances: number; label: string }> = {
  backlog: { pg: false, instances: 1, label: 'SQLite' },
  'backlog-pg': { pg: true, instances: 1, label: 'PostgreSQL x1' },
  'backlog-pg-2x': { pg: true, instances: 2, label: 'PostgreSQL x2' },
};

const HELP = `usage: npm run bench:webhooks -- [options]
  --seconds N         measured window of the baseline and of each steady phase (default 10, max 600)
  --warmup N          warm-up before the baseline and the steady phases, seconds (default 2, max 120)
  --connections N     ingestion connections to svc (default 16, max 1024)
  --rate N            events/s of the paced steady phase (default 0: half of the ingest rate svc
                      acknowledged in the max phase)
  --paced-seconds N   length of the paced steady phase (default 60, max 600); its target: the backlog
                      when ingestion stops is under one second's worth of events
  --backlog N         events of the backlog drain (default 100000, max 5000000)
  --destinations N    destinations of the backlog phases, each subscribed to every event: N deliveries
                      per event, N lanes two instances can share (default 1, max 32)
  --database-url URL  also run the backlog drain on PostgreSQL (postgres://user@host:5432/db): backlog-pg,
                      one instance, and backlog-pg-2x, two instances on one database, both draining;
                      each on a fresh schema bench_<pid>_<phase>, dropped afterwards (SVC_DATABASE_URL is
                      not read: give the flag)
  --hold-ms N         how long the receiver holds each answer while the backlog builds (default 2000, max 4000)
  --drain-timeout N   longest wait for deliveries to arrive, seconds (default 600, max 3600)
  --max-requests N    per phase cap on requests of the baseline and steady phases (default 1000000)
  --sessions N        distinct session_ids the events rotate through (default 10000)
  --only a,b          run only these phases after the baseline (steady, backlog, and with --database-url
                      backlog-pg, backlog-pg-2x; default: all of them)
  --cpu-prof DIR      run svc with node --cpu-prof, profiles written to DIR
  --keep              keep the temporary data directories (and the PostgreSQL schemas)
  -h, --help          this text
svc's per-destination concurrency comes from SVC_WEBHOOK_CONCURRENCY (default 16); the baseline uses the same
(one destination's worth: with --destinations N svc may have N times as many deliveries in flight).`;

function parse(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    options: {
      seconds: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string' },
      rate: { type: 'string' },
      'paced-seconds': { type: 'string' },
      backlog: { type: 'string' },
      destinations: { type: 'string' },
      'database-url': { type: 'string' },
      'hold-ms': { type: 'string' },
      'drain-timeout': { type: 'string' },
      'max-requests': { type: 'string' },
      sessions: { type: 'string' },
      only: { type: 'string' },
      'cpu-prof': { type: 'string' },
      keep: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  const only = values.only?.split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = only?.filter((p) => !(PHASES as readonly string[]).includes(p)) ?? [];
  if (unknown.length) throw new UsageError(`--only: unknown phase(s) ${unknown.join(', ')}; known: ${PHASES.join(', ')}`);
  const databaseUrl = values['database-url'];
  if (databaseUrl !== undefined) {
    const bad = databaseUrlError(databaseUrl);
    if (bad) throw new UsageError(bad);
  }
  const needUrl = only?.filter((p) => PG_PHASES.includes(p as Phase)) ?? [];
  if (needUrl.length && databaseUrl === undefined) throw new UsageError(`--only: ${needUrl.join(', ')} ${needUrl.length > 1 ? 'need' : 'needs'} --database-url`);
  const phases = new Set<Phase>((only as Phase[] | undefined) ?? PHASES.filter((p) => databaseUrl !== undefined || !PG_PHASES.includes(p)));
  return {
    help: values.help,
    seconds: intFlag('seconds', values.seconds, 10, 1, 600),
    warmup: intFlag('warmup', values.warmup, 2, 0, 120),
    connections: intFlag('connections', values.connections, 16, 1, 1024),
    rate: intFlag('rate', values.rate, 0, 0, 1_000_000),
    pacedSeconds: intFlag('paced-seconds', values['paced-seconds'], 60, 1, 600),
    backlog: intFlag('backlog', values.backlog, 100_000, 1, 5_000_000),
    destinations: intFlag('destinations', values.destinations, 1, 1, 32),
    databaseUrl,
    holdMs: intFlag('hold-ms', values['hold-ms'], 2_000, 0, 4_000),
    drainTimeout: intFlag('drain-timeout', values['drain-timeout'], 600, 1, 3_600),
    maxRequests: intFlag('max-requests', values['max-requests'], 1_000_000, 1, 10_000_000),
    sessions: intFlag('sessions', values.sessions, 10_000, 1, 1_000_000),
    phases,
    cpuProf: values['cpu-prof'],
    keep: values.keep,
  };
}
type Options = ReturnType<typeof parse>;

const fmt = {
  int: (n: number) => Math.round(n).toLocaleString('en-US'),
  ms: (us: number) => (us / 1000).toFixed(2),
  s: (ms: number) => (ms / 1000).toFixed(2),
  pct: (n: number | null | undefined) => (n === null || n === undefined || !Number.isFinite(n) ? '-' : `${Math.round(n)}%`),
  mb: (kb: number | null | undefined) => (kb === null || kb === undefined ? '-' : `${(kb / 1024).toFixed(1)} MiB`),
};

function table(rows: string[][], right: boolean[]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows
    .map((r) => r.map((c, i) => (right[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd())
    .join('\n');
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const epochNow = () => performance.timeOrigin + performance.now();

/** What one phase produced, for the summary table. */
interface PhaseRow {
  name: string;
  deliveriesPerSec: number | null;
  /** Whether deliveries/s is a capacity worth comparing with the baseline (not for a paced phase). */
  compare: boolean;
  /** Latency of the phase: round trip for the baseline, acknowledged-to-delivered for svc. */
  p50Us: number | null;
  p99Us: number | null;
  ingestPerSec: number | null;
  svcCpu: number | null;
  /** CPU of the PostgreSQL backends serving svc during the drain (server on this host), % of one core. */
  pgCpu?: number | null;
  /** Acknowledged events (x destinations) that never arrived; null where nothing is checked (the baseline). */
  lost: number | null;
  /** Requests repeating a delivery id, plus events that arrived under several delivery ids (per destination). */
  duplicates: number | null;
  notes: string[];
  /** The line the summary prints for a backlog phase. */
  summary?: string;
  /** Several instances: the share of the drain's requests each sent. */
  split?: string;
}

/** Allocates disjoint sequence-number ranges, one per phase, so late or repeated deliveries are never miscounted. */
class SeqSpace {
  private next = 0;
  take(size: number): { from: number; to: number } {
    const r = { from: this.next, to: this.next + size };
    this.next += size + 1_000;
    return r;
  }
}

interface Ctx {
  opts: Options;
  registry: ChildRegistry;
  tmpRoot: string;
  receiver: IpcWorker;
  hookUrl: string;
  /** The schemas of the PostgreSQL phases (null without --database-url). */
  schemas: BenchSchemas | null;
  concurrency: number;
  seqs: SeqSpace;
  log: (line: string) => void;
  failures: string[];
}

function stats(ctx: Ctx, name: string): Promise<RangeStats> {
  return ctx.receiver.request<RangeStats>({ type: 'stats', name }, 30_000);
}

/** The stats of several ranges (one per destination, same sequence numbers) added up: counts summed, times merged. */
async function statsOf(ctx: Ctx, names: string[]): Promise<RangeStats> {
  const all = await Promise.all(names.map((n) => stats(ctx, n)));
  if (all.length === 1) return all[0]!;
  const sum = (f: (s: RangeStats) => number) => all.reduce((a, s) => a + f(s), 0);
  const times = (f: (s: RangeStats) => number | null) => all.map(f).filter((t): t is number => t !== null);
  const min = (f: (s: RangeStats) => number | null) => (times(f).length ? Math.min(...times(f)) : null);
  const max = (f: (s: RangeStats) => number | null) => (times(f).length ? Math.max(...times(f)) : null);
  return {
    ...all[0]!,
    name: names.join('+'),
    requests: sum((s) => s.requests),
    distinctDeliveries: sum((s) => s.distinctDeliveries),
    distinctEvents: sum((s) => s.distinctEvents),
    duplicateRequests: sum((s) => s.duplicateRequests),
    eventsWithSeveralDeliveryIds: sum((s) => s.eventsWithSeveralDeliveryIds),
    missingDeliveryId: sum((s) => s.missingDeliveryId),
    bytes: sum((s) => s.bytes),
    firstAt: min((s) => s.firstAt),
    lastNewAt: max((s) => s.lastNewAt),
    lastAt: max((s) => s.lastAt),
    signaturesChecked: sum((s) => s.signaturesChecked),
    badSignatures: sum((s) => s.badSignatures),
  };
}

async function runLoad(ctx: Ctx, job: PostJob | IngestJob, limitMs: number): Promise<JobResult> {
  const worker = await forkWorker(ctx.registry, LOAD_FILE, `load generator (${job.type})`);
  try {
    return await worker.request<JobResult>({ ...job }, limitMs);
  } finally {
    worker.close();
  }
}

/**
 * Waits until the receiver has seen `expected` distinct events over the ranges
 * `names` (added up: one range per destination), an svc process dies, or
 * `timeoutMs` passes. Prints progress every 5 s.
 */
async function waitForEvents(
  ctx: Ctx,
  names: string | string[],
  expected: number,
  timeoutMs: number,
  svc: SvcInstance,
  progress: (s: RangeStats, elapsedMs: number) => string = (s) => `${fmt.int(s.distinctEvents)}/${fmt.int(expected)} delivered`,
  pollMs = 200,
): Promise<{ stats: RangeStats; complete: boolean; why: string | null }> {
  const start = Date.now();
  let lastPrint = start;
  for (;;) {
    const s = await statsOf(ctx, typeof names === 'string' ? [names] : names);
    if (s.distinctEvents >= expected) return { stats: s, complete: true, why: null };
    const now = Date.now();
    if (svc.exited()) return { stats: s, complete: false, why: 'an svc process exited' };
    if (now - start >= timeoutMs) return { stats: s, complete: false, why: `gave up after ${fmt.s(timeoutMs)} s` };
    if (now - lastPrint >= 5_000) {
      lastPrint = now;
      ctx.log(`    ... ${progress(s, now - start)}`);
    }
    await sleep(pollMs);
  }
}

/** Acknowledged-to-delivered latency and window counts of one steady phase. */
function analyse(acks: number[], arrivals: number[], windowStart: number, windowEnd: number) {
  const hist = new Histogram();
  let acked = 0;
  let delivered = 0;
  let missing = 0;
  let beforeAck = 0;
  let deliveredInWindow = 0;
  let lastArrival = 0;
  for (let i = 0; i < acks.length; i++) {
    const arrived = arrivals[i] ?? -1;
    if (arrived >= windowStart && arrived <= windowEnd) deliveredInWindow++;
    const ack = acks[i]!;
    if (ack < 0) continue;
    acked++;
    if (arrived < 0) {
      missing++;
      continue;
    }
    delivered++;
    if (arrived > lastArrival) lastArrival = arrived;
    const ms = arrived - ack;
    if (ms < 0) beforeAck++;
    hist.record(Math.max(0, ms) * 1000);
  }
  return { acked, delivered, missing, beforeAck, deliveredInWindow, lastArrival, latency: hist.summary() };
}

function loadNotes(r: JobResult): string[] {
  const notes: string[] = [];
  if (r.errors) notes.push(`${r.errors} request error(s), first: ${r.firstError}`);
  if (r.non2xx) notes.push(`${r.non2xx} non-2xx answer(s), first: ${r.firstNon2xx}`);
  if (r.unfinished) notes.push(`${r.unfinished} request(s) unanswered when the generator gave up`);
  return notes;
}

async function baseline(ctx: Ctx, name: string, store = false): Promise<PhaseRow> {
  const { opts } = ctx;
  const recordDir = store ? mkdtempSync(path.join(ctx.tmpRoot, `${name}-`)) : undefined;
  const range = ctx.seqs.take(opts.maxRequests);
  await ctx.receiver.request({ type: 'track', name, ...range }, 10_000);
  ctx.log(
    `\n[${name}] bare undici POST loop -> receiver${store ? ", each outcome stored durably (svc's health_log table, group commit, WAL fsync; all on disk before the run ends)" : ''}, ` +
      `${ctx.concurrency} in flight, Agent connections ${ctx.concurrency * 4} (host load average ${os.loadavg()[0]!.toFixed(2)})`,
  );
  const before = await stats(ctx, name);
  const t0 = Date.now();
  const r = await runLoad(
    ctx,
    {
      type: 'post',
      url: ctx.hookUrl,
      siteId: 'site_BENCHbareSERVER0',
      concurrency: ctx.concurrency,
      connections: ctx.concurrency * 4,
      warmupSeconds: opts.warmup,
      seconds: opts.seconds,
      maxRequests: opts.maxRequests,
      seqBase: range.from,
      sessions: opts.sessions,
      drainSeconds: 30,
      ...(recordDir ? { recordDir } : {}),
    },
    (opts.warmup + opts.seconds + 90) * 1000,
  );
  const after = await stats(ctx, name);
  const receiverCpu = ((after.cpuMs - before.cpuMs) / (Date.now() - t0)) * 100;
  const notes = loadNotes(r);
  ctx.log(
    `  body ${r.bodyBytes} bytes; ${fmt.int(r.measured)} deliveries in ${r.measuredSeconds.toFixed(2)} s = ${fmt.int(r.rate)}/s; ` +
      `round trip ms p50 ${fmt.ms(r.latency.p50Us)} p99 ${fmt.ms(r.latency.p99Us)} max ${fmt.ms(r.latency.maxUs)}`,
  );
  ctx.log(
    `  receiver: ${fmt.int(after.requests)} requests (generator sent ${fmt.int(r.sent)}, ${fmt.int(r.ok)} answered 200); ` +
      `CPU receiver ~${fmt.pct(receiverCpu)}, generator ${fmt.pct(r.cpuPercent)} of one core`,
  );
  if (after.requests !== r.ok) notes.push(`receiver counted ${after.requests} requests, generator ${r.ok} answers`);
  for (const n of notes) ctx.log(`  note: ${n}`);
  return {
    name: `${name}: bare undici -> receiver${store ? ' + durable outcome' : ''}`,
    deliveriesPerSec: r.rate,
    compare: true,
    p50Us: r.latency.p50Us,
    p99Us: r.latency.p99Us,
    ingestPerSec: null,
    svcCpu: null,
    lost: null,
    duplicates: null,
    notes,
  };
}

/** One steady phase: ingest for the window, wait for every acknowledged event to arrive, match acknowledgements with arrivals. */
async function steadyPhase(
  ctx: Ctx,
  svc: SvcInstance,
  name: string,
  label: string,
  rate: number,
  seconds: number,
): Promise<PhaseRow & { deliveredPerSec: number; backlogAtEnd: number }> {
  const { opts } = ctx;
  const range = ctx.seqs.take(opts.maxRequests);
  await ctx.receiver.request({ type: 'track', name, ...range, secret: SECRET }, 10_000);
  ctx.log(`\n[${name}] ${label} (host load average ${os.loadavg()[0]!.toFixed(2)})`);
  const cpu0 = processCpuMs(svc.pid);
  const t0 = Date.now();
  const r = await runLoad(
    ctx,
    {
      type: 'ingest',
      origins: [svc.url],
      siteId: svc.siteId,
      connections: opts.connections,
      rate,
      seconds,
      maxRequests: opts.maxRequests,
      seqBase: range.from,
      sessions: opts.sessions,
      recordAcks: true,
      drainSeconds: 30,
    },
    (seconds + 90) * 1000,
  );
  const cpu1 = processCpuMs(svc.pid);
  const svcCpu = cpu0 !== null && cpu1 !== null ? ((cpu1 - cpu0) / (Date.now() - t0)) * 100 : null;
  const atWindowEnd = await stats(ctx, name);
  const notes = loadNotes(r);
  const ackedCount = r.acks!.filter((a) => a >= 0).length;
  ctx.log(
    `  ingestion: ${fmt.int(r.sent)} sent, ${fmt.int(ackedCount)} acknowledged (201) in ${r.measuredSeconds.toFixed(2)} s = ${fmt.int(ackedCount / r.measuredSeconds)}/s; ` +
      `round trip ms p50 ${fmt.ms(r.latency.p50Us)} p99 ${fmt.ms(r.latency.p99Us)}; body ${r.bodyBytes} bytes; generator CPU ${fmt.pct(r.cpuPercent)}`,
  );
  ctx.log(`  delivered when ingestion stopped: ${fmt.int(atWindowEnd.distinctEvents)} (backlog ${fmt.int(ackedCount - atWindowEnd.distinctEvents)}); waiting for the rest`);
  const waitStart = Date.now();
  const waited = await waitForEvents(ctx, name, ackedCount, opts.drainTimeout * 1000, svc);
  const tailMs = Date.now() - waitStart;
  await sleep(300); // late duplicates
  const final = await stats(ctx, name);
  const arrivals = await ctx.receiver.request<number[]>({ type: 'arrivals', name, count: r.acks!.length }, 60_000);
  const a = analyse(r.acks!, arrivals, r.windowStart, r.windowEnd);
  const deliveredPerSec = a.deliveredInWindow / r.measuredSeconds;
  ctx.log(
    `  receiver: ${fmt.int(a.deliveredInWindow)} delivered inside the window = ${fmt.int(deliveredPerSec)}/s; all ${fmt.int(a.delivered)}/${fmt.int(a.acked)} ` +
      `acknowledged events delivered ${fmt.s(Math.max(0, a.lastArrival - r.windowStart))} s after the window opened (tail ${fmt.s(tailMs)} s); ` +
      `svc CPU ${fmt.pct(svcCpu)} of one core during ingestion`,
  );
  ctx.log(
    `  acknowledged -> delivered ms: p50 ${fmt.ms(a.latency.p50Us)} p90 ${fmt.ms(a.latency.p90Us)} p99 ${fmt.ms(a.latency.p99Us)} ` +
      `p99.9 ${fmt.ms(a.latency.p999Us)} max ${fmt.ms(a.latency.maxUs)}${a.beforeAck ? ` (${a.beforeAck} arrived before the client read the 201; counted as 0)` : ''}`,
  );
  ctx.log(
    `  ${fmt.int(final.requests)} requests, ${fmt.int(final.distinctDeliveries)} distinct delivery ids, ${final.duplicateRequests} duplicate(s); ` +
      `mean delivery body ${final.requests ? Math.round(final.bytes / final.requests) : 0} bytes; signatures checked ${final.signaturesChecked}, bad ${final.badSignatures}`,
  );
  if (!waited.complete || a.missing > 0) {
    const why = `${name}: ${a.missing} acknowledged event(s) never reached the receiver (${waited.why ?? 'complete count reached, but some acknowledged ones are missing'})`;
    ctx.failures.push(why);
    notes.push(why);
  }
  if (final.badSignatures) notes.push(`${final.badSignatures} bad signature(s) of ${final.signaturesChecked} checked`);
  if (final.duplicateRequests) notes.push(`${final.duplicateRequests} duplicate request(s)`);
  if (deliveredPerSec < (ackedCount / r.measuredSeconds) * 0.9) {
    notes.push(`delivery did not keep up with ingestion (backlog ${fmt.int(ackedCount - atWindowEnd.distinctEvents)} at window end): latency includes queueing`);
  }
  for (const n of notes) ctx.log(`  note: ${n}`);
  return {
    name: label,
    deliveriesPerSec: deliveredPerSec,
    compare: rate === 0,
    deliveredPerSec,
    backlogAtEnd: Math.max(0, ackedCount - atWindowEnd.distinctEvents),
    p50Us: a.latency.p50Us,
    p99Us: a.latency.p99Us,
    ingestPerSec: ackedCount / r.measuredSeconds,
    svcCpu,
    lost: a.missing,
    duplicates: final.duplicateRequests + final.eventsWithSeveralDeliveryIds,
    notes,
  };
}

async function steady(ctx: Ctx, bareRate: number | null): Promise<PhaseRow[]> {
  const { opts } = ctx;
  ctx.log(`\n[steady] svc serve, one destination (all events) -> receiver`);
  let svc: SvcInstance;
  try {
    svc = await startSvc({ registry: ctx.registry, tmpRoot: ctx.tmpRoot, name: 'svc-steady', log: ctx.log, ...profArgs(opts, 'steady') });
  } catch (err) {
    ctx.failures.push(`steady: svc failed to start: ${(err as Error).message}`);
    ctx.log(`  FAILED: ${(err as Error).message}`);
    return [];
  }
  const rows: PhaseRow[] = [];
  try {
    const dest = await svc.addDestination(ctx.hookUrl, SECRET);
    ctx.log(`  destination ${dest} -> ${ctx.hookUrl}`);
    if (opts.warmup > 0) {
      const warm = await steadyPhaseQuiet(ctx, svc, opts.warmup);
      ctx.log(`  warm-up: ${fmt.int(warm)} events ingested and delivered`);
    }
    const max = await steadyPhase(ctx, svc, 'steady-max', `svc steady, ${opts.connections} conns flat out`, 0, opts.seconds);
    rows.push(max);
    if (bareRate) ctx.log(`  svc deliveries/s / bare undici deliveries/s (first baseline) = ${(max.deliveredPerSec / bareRate).toFixed(2)}`);
    // Issue 22: at half of svc's maximum ingest rate, delivery keeps up (backlog under one second's worth at the end).
    const rate = opts.rate || Math.max(1, Math.round((max.ingestPerSec ?? max.deliveredPerSec) / 2));
    const paced = await steadyPhase(ctx, svc, 'steady-paced', `svc steady, paced ${fmt.int(rate)}/s for ${opts.pacedSeconds} s`, rate, opts.pacedSeconds);
    rows.push(paced);
    const worth = paced.backlogAtEnd / rate;
    ctx.log(
      `  target backlog at the end of the paced phase < 1 s of events: ${fmt.int(paced.backlogAtEnd)} events = ${worth.toFixed(2)} s ` +
        `(${worth < 1 ? 'met' : 'NOT met'}; informational); acknowledged -> delivered p50 ${paced.p50Us === null ? '-' : fmt.ms(paced.p50Us)} ms, ` +
        `p99 ${paced.p99Us === null ? '-' : fmt.ms(paced.p99Us)} ms`,
    );
  } catch (err) {
    ctx.failures.push(`steady: ${(err as Error).message}`);
    ctx.log(`  FAILED: ${(err as Error).message}`);
  } finally {
    const note = await svc.stop();
    if (note) ctx.log(`  note: svc ${note}`);
    if (svc.stderr.errorLines > 0) ctx.log(`  note: svc logged ${svc.stderr.errorLines} error line(s); last: ${svc.stderr.lastLines(3)}`);
  }
  return rows;
}

/** Warm-up: ingest closed-loop for `seconds` and wait for the deliveries; resolves with the number of events. */
async function steadyPhaseQuiet(ctx: Ctx, svc: SvcInstance, seconds: number): Promise<number> {
  const range = ctx.seqs.take(ctx.opts.maxRequests);
  await ctx.receiver.request({ type: 'track', name: 'steady-warmup', ...range }, 10_000);
  const r = await runLoad(
    ctx,
    {
      type: 'ingest',
      origins: [svc.url],
      siteId: svc.siteId,
      connections: ctx.opts.connections,
      rate: 0,
      seconds,
      maxRequests: ctx.opts.maxRequests,
      seqBase: range.from,
      sessions: ctx.opts.sessions,
      recordAcks: false,
      drainSeconds: 30,
    },
    (seconds + 90) * 1000,
  );
  const waited = await waitForEvents(ctx, 'steady-warmup', r.ok, ctx.opts.drainTimeout * 1000, svc);
  if (!waited.complete) throw new Error(`warm-up deliveries incomplete: ${waited.stats.distinctEvents}/${r.ok} (${waited.why})`);
  return r.ok;
}

/** CPU each process has used so far (ms); null for one that cannot be read. */
function cpuOf(pids: (number | undefined)[]): (number | null)[] {
  return pids.map((pid) => processCpuMs(pid));
}
const cpuPercent = (a: (number | null)[], b: (number | null)[], ms: number): (number | null)[] =>
  a.map((x, i) => (x !== null && b[i] !== null && b[i] !== undefined && ms > 0 ? ((b[i]! - x) / ms) * 100 : null));
const sumOrNull = (xs: (number | null)[]): number | null => (xs.some((x) => x === null) ? null : xs.reduce<number>((t, x) => t + x!, 0));

/** Requests per remote port over the ranges `names`. */
async function peers(ctx: Ctx, names: string[]): Promise<[number, number][]> {
  const merged = new Map<number, number>();
  for (const name of names) {
    for (const [port, n] of await ctx.receiver.request<[number, number][]>({ type: 'peers', name }, 30_000)) merged.set(port, (merged.get(port) ?? 0) + n);
  }
  return [...merged];
}

/**
 * A backlog drain: a fresh svc (SQLite, or PostgreSQL with one or two
 * instances) with --destinations destinations; the receiver holds its answers
 * while the backlog is ingested, then answers at once and the drain is timed.
 */
async function backlog(ctx: Ctx, bareRate: number | null, phase: BacklogPhase): Promise<PhaseRow[]> {
  const { opts } = ctx;
  const v = BACKLOG_VARIANTS[phase];
  const n = opts.backlog;
  const d = opts.destinations;
  const where = v.pg ? `on PostgreSQL, ${v.instances === 1 ? 'one instance' : `${v.instances} instances on one schema and one data directory, both draining`}` : 'on SQLite';
  ctx.log(
    `\n[${phase}] fresh svc ${where}; ${d} destination(s) subscribed to every event; the receiver holds answers ${opts.holdMs} ms ` +
      `while ${fmt.int(n)} pageviews are ingested, then answers at once (host load average ${os.loadavg()[0]!.toFixed(2)})`,
  );
  if (v.instances > 1 && d === 1) {
    ctx.log(
      `  note: ONE destination: only the instance holding its lease sends its deliveries, so one instance drains it (the other ingests and fans out); ` +
        `--destinations N gives the instances N lanes to share`,
    );
  } else if (v.instances > 1) {
    ctx.log(`  note: each destination is drained by the one instance holding its lease; which instance takes which of the ${d} leases is a race`);
  }
  let schema: string | null = null;
  let databaseUrl: string | undefined;
  if (v.pg) {
    try {
      const fresh = await ctx.schemas!.fresh(phase);
      schema = fresh.schema;
      databaseUrl = fresh.url;
      if (fresh.leftover) ctx.log(`  dropped a schema ${schema} left over by an earlier run`);
    } catch (err) {
      ctx.failures.push(`${phase}: PostgreSQL: ${(err as Error).message}`);
      ctx.log(`  FAILED: PostgreSQL: ${(err as Error).message}`);
      return [];
    }
  }
  const dropSchema = async () => {
    if (schema === null) return;
    const note = await ctx.schemas!.drop(schema);
    if (note) ctx.log(`  note: ${note}`);
  };
  let svc: SvcInstance;
  try {
    svc = await startSvc({
      registry: ctx.registry,
      tmpRoot: ctx.tmpRoot,
      name: `svc-${phase}`,
      log: ctx.log,
      instances: v.instances,
      ...(databaseUrl !== undefined ? { databaseUrl } : {}),
      ...profArgs(opts, phase),
    });
  } catch (err) {
    ctx.failures.push(`${phase}: svc failed to start: ${(err as Error).message}`);
    ctx.log(`  FAILED: ${(err as Error).message}`);
    await dropSchema();
    return [];
  }
  const procs = svc.processes;
  const pids = procs.map((p) => p.pid);
  // The PostgreSQL backends serving svc's connections, when the server is on this host.
  const pgPort = v.pg && opts.databaseUrl !== undefined ? localPgPort(opts.databaseUrl) : null;
  const pgCpu = () => (pgPort === null ? null : new GroupCpu(() => pgBackendPids(pids.filter((p): p is number => p !== undefined), pgPort)).start());
  const rssNow = () => procs.map((p) => fmt.mb(readVm(p.pid))).join(' + ');
  const notes: string[] = [];
  let row: PhaseRow | null = null;
  try {
    const range = ctx.seqs.take(n);
    const hook = new URL(ctx.hookUrl);
    // One receiver range per destination, over the same sequence numbers, told apart by the path.
    const names = Array.from({ length: d }, (_, k) => `${phase}#${k}`);
    for (let k = 0; k < d; k++) {
      await ctx.receiver.request({ type: 'track', name: names[k], ...range, secret: SECRET, path: `${hook.pathname}/${k}` }, 10_000);
    }
    await ctx.receiver.request({ type: 'mode', mode: 'hold', holdMs: opts.holdMs }, 10_000);
    const destIds: string[] = [];
    for (let k = 0; k < d; k++) destIds.push(await svc.addDestination(`${ctx.hookUrl}/${k}`, SECRET));
    ctx.log(`  destination(s) ${destIds.join(', ')} -> ${ctx.hookUrl}/{0..${d - 1}}; svc RSS at start ${rssNow()}`);
    const ingestLimit = 600;
    const cpuIngest0 = cpuOf(pids);
    const pgIngest = pgCpu();
    const r = await runLoad(
      ctx,
      {
        type: 'ingest',
        origins: procs.map((p) => p.url),
        siteId: svc.siteId,
        connections: opts.connections,
        rate: 0,
        seconds: ingestLimit,
        maxRequests: n,
        seqBase: range.from,
        sessions: opts.sessions,
        recordAcks: false,
        drainSeconds: 30,
      },
      (ingestLimit + 90) * 1000,
    );
    const ingestCpu = sumOrNull(cpuPercent(cpuIngest0, cpuOf(pids), r.measuredSeconds * 1000));
    const ingestPgCpu = pgIngest?.end();
    notes.push(...loadNotes(r));
    const expectedEvents = r.ok;
    const expected = expectedEvents * d;
    ctx.log(
      `  ingestion: ${fmt.int(r.ok)}/${fmt.int(n)} acknowledged in ${r.measuredSeconds.toFixed(2)} s = ${fmt.int(r.ok / r.measuredSeconds)}/s ` +
        `(stopped by ${r.stoppedBy}${procs.length > 1 ? `, connections split over ${procs.length} instances` : ''}); svc CPU ${fmt.pct(ingestCpu)}` +
        `${pgIngest ? `, PostgreSQL backends ${fmt.pct(ingestPgCpu)}` : ''}`,
    );
    if (r.ok < n) notes.push(`${phase}: only ${r.ok} of ${n} events were acknowledged; the drain checks those`);
    const pre = await statsOf(ctx, names);
    ctx.log(
      `  before the drain: ${fmt.int(pre.distinctEvents)} of ${fmt.int(expected)} deliveries made (held answers), ${pre.held} held now; svc RSS ${rssNow()}`,
    );

    const owners = new PortOwners(pids, Number(hook.port));
    owners.sample();
    const ownerTimer = setInterval(() => owners.sample(), 250);
    ownerTimer.unref();
    const peersBefore = new Map(await peers(ctx, names));
    const rss = procs.map((p) => new RssSampler(p.pid, 100).start());
    const cpu0 = cpuOf(pids);
    const host0 = hostCpuTicks();
    const pgDrain = pgCpu();
    const drainStart = epochNow();
    const released = await ctx.receiver.request<{ released: number }>({ type: 'mode', mode: 'ok' }, 10_000);
    const waited = await waitForEvents(
      ctx,
      names,
      expected,
      opts.drainTimeout * 1000,
      svc,
      (s, elapsed) =>
        `${fmt.int(s.distinctEvents)}/${fmt.int(expected)} delivered, ${fmt.int((s.distinctEvents - pre.distinctEvents) / (elapsed / 1000))}/s so far, svc RSS ${rssNow()}`,
      100,
    );
    const cpu1 = cpuOf(pids);
    const host1 = hostCpuTicks();
    const drainPgCpu = pgDrain?.end() ?? null;
    const cpuWindowMs = epochNow() - drainStart;
    owners.sample();
    clearInterval(ownerTimer);
    for (const x of rss) x.stop();
    await sleep(2_000); // stragglers and duplicates
    const final = await statsOf(ctx, names);
    const drainEnd = waited.complete ? (waited.stats.lastNewAt ?? epochNow()) : epochNow();
    const drainMs = drainEnd - drainStart;
    const drained = waited.stats.distinctEvents - pre.distinctEvents;
    const rate = drained / (drainMs / 1000);
    const perCpu = cpuPercent(cpu0, cpu1, cpuWindowMs);
    const svcCpu = sumOrNull(perCpu);
    const hostCpu = hostCpuPercent(host0, host1);
    ctx.log(
      `  drain: released ${released.released} held; ${waited.complete ? '' : `INCOMPLETE (${waited.why}): `}` +
        `${fmt.int(drained)} deliveries in ${fmt.s(drainMs)} s = ${fmt.int(rate)}/s; svc CPU ${fmt.pct(svcCpu)} of one core` +
        `${procs.length > 1 ? ` (${perCpu.map((c, i) => `#${i + 1} ${fmt.pct(c)}`).join(', ')})` : ''}` +
        `${pgDrain ? `, PostgreSQL backends ${fmt.pct(drainPgCpu)}` : ''}; host ${fmt.pct(hostCpu)} of all ${os.cpus().length} cores busy`,
    );
    let split: string | undefined;
    if (procs.length > 1) {
      // Which instance sent what: the receiver counts requests per remote port, the ports map to the svc process owning the socket.
      const after = await peers(ctx, names);
      const during = after.map(([port, c]): [number, number] => [port, c - (peersBefore.get(port) ?? 0)]).filter(([, c]) => c > 0);
      const byOwner = owners.attribute(during);
      const total = byOwner.perProcess.reduce((a, b) => a + b, 0) + byOwner.unknown;
      const pct = (x: number) => (total ? `${Math.round((x / total) * 100)}%` : '-');
      split =
        byOwner.perProcess.map((c, i) => `#${i + 1} ${fmt.int(c)} (${pct(c)})`).join(', ') +
        (byOwner.unknown ? `, over connections not matched to an instance ${fmt.int(byOwner.unknown)} (${pct(byOwner.unknown)})` : '');
      ctx.log(`  requests during the drain by instance (from the sockets they came over): ${split}`);
    }
    const rssLine = procs
      .map((p, i) => {
        const x = rss[i]!;
        const [s0, s1, s2] = [x.at(0), x.at(0.5), x.at(1)];
        return `${procs.length > 1 ? `#${i + 1} ` : ''}start ${fmt.mb(s0?.kb)}, middle ${fmt.mb(s1?.kb)}, end ${fmt.mb(s2?.kb)}, peak ${fmt.mb(x.peakKb)}; high-water mark ${fmt.mb(readVm(p.pid, 'VmHWM'))}`;
      })
      .join(' | ');
    ctx.log(`  svc RSS during the drain (samples every 100 ms): ${rssLine}`);
    const lost = Math.max(0, expected - final.distinctEvents);
    const duplicates = final.duplicateRequests + final.eventsWithSeveralDeliveryIds;
    ctx.log(
      `  receiver: ${fmt.int(final.requests)} requests, ${fmt.int(final.distinctDeliveries)} distinct X-SVC-Delivery ids, ${fmt.int(final.distinctEvents)} distinct (event, destination) pairs ` +
        `(expected ${fmt.int(expected)} = ${fmt.int(expectedEvents)} events x ${d} destination(s)); lost ${fmt.int(lost)}; duplicates ${final.duplicateRequests}; ` +
        `events under several delivery ids ${final.eventsWithSeveralDeliveryIds}; signatures checked ${final.signaturesChecked}, bad ${final.badSignatures}`,
    );
    if (final.distinctEvents < expected || final.distinctDeliveries < expected) {
      const why = `${phase}: deliveries lost: ${fmt.int(final.distinctEvents)} distinct (event, destination) pairs and ${fmt.int(final.distinctDeliveries)} distinct delivery ids of ${fmt.int(expected)} expected${waited.why ? ` (${waited.why})` : ''}`;
      ctx.failures.push(why);
      notes.push(why);
    }
    if (final.badSignatures) notes.push(`${final.badSignatures} bad signature(s)`);
    if (!waited.complete) notes.push(`drain ${waited.why}`);
    for (const x of notes) ctx.log(`  note: ${x}`);
    if (bareRate) ctx.log(`  drain deliveries/s / bare undici deliveries/s (baseline so far) = ${(rate / bareRate).toFixed(2)}`);
    const summary =
      `${fmt.int(expected)} deliveries drained in ${fmt.s(drainMs)} s, lost ${fmt.int(lost)}, ${final.duplicateRequests} duplicate request(s), ` +
      `${fmt.int(final.distinctDeliveries)}/${fmt.int(expected)} distinct ids, peak RSS ${procs.map((_, i) => fmt.mb(rss[i]!.peakKb)).join(' + ')}` +
      (split ? `; drain requests by instance ${split}` : '');
    row = {
      name: `svc backlog drain, ${v.label}, ${fmt.int(n)} events x ${d} dest`,
      deliveriesPerSec: rate,
      compare: true,
      p50Us: null,
      p99Us: null,
      ingestPerSec: r.ok / r.measuredSeconds,
      svcCpu,
      pgCpu: drainPgCpu,
      lost,
      duplicates,
      notes,
      summary,
      ...(split ? { split } : {}),
    };
  } catch (err) {
    ctx.failures.push(`${phase}: ${(err as Error).message}`);
    ctx.log(`  FAILED: ${(err as Error).message}`);
  } finally {
    await ctx.receiver.request({ type: 'mode', mode: 'ok' }, 10_000).catch(() => undefined);
    const note = await svc.stop();
    if (note) ctx.log(`  note: svc ${note}`);
    for (const p of procs) {
      if (p.stderr.errorLines > 0) ctx.log(`  note: ${p.name} logged ${p.stderr.errorLines} error line(s); last: ${p.stderr.lastLines(3)}`);
    }
    await dropSchema();
  }
  return row ? [row] : [];
}

function profArgs(opts: Options, name: string): { nodeArgs?: string[] } {
  if (!opts.cpuProf) return {};
  const dir = path.resolve(opts.cpuProf);
  mkdirSync(dir, { recursive: true });
  return { nodeArgs: ['--cpu-prof', '--cpu-prof-dir', dir, '--cpu-prof-name', `svc-${name}-${Date.now()}.cpuprofile`] };
}

async function main(): Promise<number> {
  let opts: Options;
  try {
    opts = parse(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`bench:webhooks: ${(err as Error).message}\n${HELP}\n`);
    return 2;
  }
  if (opts.help) {
    process.stdout.write(`${HELP}\n`);
    return 0;
  }
  let concurrency: number;
  try {
    // The same setting svc reads (SVC_WEBHOOK_CONCURRENCY, default from src/config.ts); the child processes inherit this environment.
    concurrency = loadConfig({}, { SVC_WEBHOOK_CONCURRENCY: process.env.SVC_WEBHOOK_CONCURRENCY }).webhookConcurrency;
  } catch (err) {
    process.stderr.write(`bench:webhooks: SVC_WEBHOOK_CONCURRENCY: ${(err as Error).message}\n`);
    return 2;
  }

  const registry = new ChildRegistry();
  const tmpRoot = mkdtempSync(path.join(os.tmpdir(), 'svc-bench-webhooks-'));
  const cleanup = () => {
    registry.killAll('SIGKILL');
    if (!opts.keep) removeTree(tmpRoot);
  };
  process.once('exit', cleanup);
  const schemas = opts.databaseUrl !== undefined ? new BenchSchemas(opts.databaseUrl, opts.keep) : null;
  /** Exits once the schemas of this run are dropped (at most 15 s later): the 'exit' handler cannot wait for the database. */
  let stopping = false;
  const exitDroppingSchemas = (code: number) => {
    stopping = true;
    registry.killAll('SIGKILL');
    if (!schemas || schemas.remaining.length === 0 || opts.keep) process.exit(code);
    setTimeout(() => process.exit(code), 15_000).unref();
    void schemas.dropAll().then(
      (notes) => {
        for (const n of notes) process.stderr.write(`bench:webhooks: ${n}\n`);
        process.exit(code);
      },
      () => process.exit(code),
    );
  };
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(sig, () => {
      process.stderr.write(`\nbench:webhooks: ${sig}, stopping every child process\n`);
      exitDroppingSchemas(130);
    });
  }
  // Last resort: every phase is bounded on its own; this bounds the whole run.
  const backlogPhases = PHASES.filter((p): p is BacklogPhase => p !== 'steady' && opts.phases.has(p));
  const budgetS =
    2 * (opts.warmup + opts.seconds + 200) +
    (opts.phases.has('steady') ? 3 * (opts.warmup + opts.seconds + opts.drainTimeout + 150) : 0) +
    backlogPhases.length * (600 + opts.drainTimeout + 300);
  setTimeout(() => {
    process.stderr.write(`bench:webhooks: still running after ${budgetS} s; giving up\n`);
    exitDroppingSchemas(1);
  }, budgetS * 1000).unref();

  const log = (line: string) => process.stdout.write(`${line}\n`);
  log(`bench:webhooks  node ${process.version}, ${os.cpus().length} CPU(s) (${os.cpus()[0]?.model.trim() ?? '?'}), ${os.platform()} ${os.release()}, load average ${os.loadavg()[0]!.toFixed(2)}`);
  log(
    `svc per-destination concurrency ${concurrency} (SVC_WEBHOOK_CONCURRENCY); window ${opts.seconds} s, warm-up ${opts.warmup} s, ` +
      `ingestion ${opts.connections} connections, backlog ${fmt.int(opts.backlog)} x ${opts.destinations} destination(s); every process on its own`,
  );
  log(`phases: baseline, ${[...opts.phases].join(', ')}, baseline-again`);
  log(`data: ${tmpRoot}${opts.keep ? ' (kept)' : ' (removed at exit)'}`);
  if (schemas && opts.databaseUrl !== undefined) {
    try {
      const version = await schemas.check();
      log(
        `postgres: ${version} at ${redact(opts.databaseUrl)}; one schema per phase (${schemas.namePrefix}_<phase>), ` +
          `${opts.keep ? 'kept (--keep)' : 'dropped once the phase is done'}${schemas.urlHadSchema ? "; the URL's own schema parameter is replaced" : ''}`,
      );
    } catch (err) {
      log(`bench:webhooks: PostgreSQL at ${redact(opts.databaseUrl)} is not reachable: ${(err as Error).message}`);
      return 1;
    }
  }

  let receiver: IpcWorker;
  let hookUrl: string;
  try {
    receiver = await forkWorker(registry, RECEIVER_FILE, 'receiver');
    hookUrl = `${(await receiver.request<{ url: string }>({ type: 'listen' }, 10_000)).url}/hook`;
  } catch (err) {
    log(`receiver failed to start: ${(err as Error).message}`);
    return 1;
  }
  log(`receiver: pid ${receiver.pid}, ${hookUrl}`);
  const ctx: Ctx = { opts, registry, tmpRoot, receiver, hookUrl, schemas, concurrency, seqs: new SeqSpace(), log, failures: [] };

  // The baseline runs before and after the svc phases; ratios use the mean of both (the host is shared and noisy).
  const bare: PhaseRow[] = [];
  // The storing baseline (issue 22): the same loop recording each outcome durably with group commit.
  const bareStore: PhaseRow[] = [];
  const runBaseline = async (name: string) => {
    for (const store of [false, true]) {
      const label = store ? `${name}-store` : name;
      try {
        (store ? bareStore : bare).push(await baseline(ctx, label, store));
      } catch (err) {
        ctx.failures.push(`${label}: ${(err as Error).message}`);
        log(`  FAILED: ${(err as Error).message}`);
      }
    }
  };
  const mean = (list: PhaseRow[]) => {
    const rates = list.map((b) => b.deliveriesPerSec).filter((r): r is number => r !== null && r > 0);
    return rates.length ? rates.reduce((a, b) => a + b, 0) / rates.length : null;
  };
  const meanBare = () => mean(bare);
  await runBaseline('baseline');
  const svcRows: PhaseRow[] = [];
  if (opts.phases.has('steady')) svcRows.push(...(await steady(ctx, meanBare())));
  for (const phase of backlogPhases) {
    if (stopping) break; // a signal arrived: the process exits once the schemas are dropped
    svcRows.push(...(await backlog(ctx, meanBare(), phase)));
  }
  await runBaseline('baseline-again');
  receiver.close();
  if (schemas && !opts.keep) {
    for (const n of await schemas.dropAll()) log(`note: ${n}`);
  }
  const bareRate = meanBare();
  const storeRate = mean(bareStore);
  const rows = [...bare, ...bareStore, ...svcRows];

  const header = ['phase', 'deliveries/s', 'x bare', 'x bare-store', 'p50 ms', 'p99 ms', 'ingest acked/s', 'svc CPU', 'pg CPU', 'lost', 'dup'];
  const lines: string[][] = [header];
  for (const r of rows) {
    lines.push([
      r.name,
      r.deliveriesPerSec === null ? '-' : fmt.int(r.deliveriesPerSec),
      r.compare && r.deliveriesPerSec !== null && bareRate ? (r.deliveriesPerSec / bareRate).toFixed(2) : '-',
      r.compare && r.deliveriesPerSec !== null && storeRate ? (r.deliveriesPerSec / storeRate).toFixed(2) : '-',
      r.p50Us === null ? '-' : fmt.ms(r.p50Us),
      r.p99Us === null ? '-' : fmt.ms(r.p99Us),
      r.ingestPerSec === null ? '-' : fmt.int(r.ingestPerSec),
      fmt.pct(r.svcCpu),
      fmt.pct(r.pgCpu),
      r.lost === null ? '-' : fmt.int(r.lost),
      r.duplicates === null ? '-' : fmt.int(r.duplicates),
    ]);
  }
  log(
    `\nsummary: x bare = deliveries/s over the mean of the two baseline runs (${bareRate === null ? '-' : fmt.int(bareRate)}/s); ` +
      `x bare-store = over the mean of the two storing baseline runs, each outcome durably recorded (${storeRate === null ? '-' : fmt.int(storeRate)}/s); ` +
      `p50/p99 ms: round trip for the baseline, acknowledged-to-delivered for the svc steady phases; svc CPU: % of one core, summed over instances (during the drain for backlog phases); ` +
      `pg CPU: the PostgreSQL backends serving svc during the drain, % of one core; ` +
      `lost: acknowledged (event, destination) pairs never delivered; dup: repeated delivery ids + events under several ids`,
  );
  log(table(lines, header.map((_, i) => i > 0)));
  const backlogRows = rows.filter((r) => r.summary !== undefined);
  for (const b of backlogRows) log(`${b.name}: ${b.summary}`);
  const max = rows.find((r) => r.name.includes('flat out'));
  if (max?.deliveriesPerSec && bareRate) {
    const ratio = max.deliveriesPerSec / bareRate;
    log(`target svc steady deliveries/s >= 0.50 x bare undici: ${ratio.toFixed(2)} (${ratio >= 0.5 ? 'met' : 'NOT met'}; informational, never fails the run)`);
  }
  if (bareRate && backlogRows.length) {
    log(
      `backlog drain deliveries/s / bare undici: ` +
        backlogRows.map((b) => `${b.name.replace(/^svc backlog drain, /, '').replace(/, .*$/, '')} ${((b.deliveriesPerSec ?? 0) / bareRate).toFixed(2)}`).join(', ') +
        (opts.destinations > 1 ? ` (the baseline has ${concurrency} in flight, one destination's worth; svc up to ${opts.destinations} x ${concurrency})` : ''),
    );
  }
  if (storeRate && backlogRows.length) {
    log(
      `target backlog drain >= 0.80 x storing baseline: ` +
        backlogRows
          .map((b) => {
            const q = (b.deliveriesPerSec ?? 0) / storeRate;
            return `${b.name.replace(/^svc backlog drain, /, '').replace(/, .*$/, '')} ${q.toFixed(2)} (${q >= 0.8 ? 'met' : 'NOT met'})`;
          })
          .join(', ') +
        '; informational, never fails the run',
    );
  }
  const drain = (label: string) => backlogRows.find((b) => b.name.includes(`, ${label}, `))?.deliveriesPerSec;
  const [sqlite, pg1, pg2] = [drain('SQLite'), drain('PostgreSQL x1'), drain('PostgreSQL x2')];
  if (pg1 && sqlite) log(`backlog drain PostgreSQL x1 / SQLite: ${(pg1 / sqlite).toFixed(2)}`);
  if (pg2 && pg1) {
    const split = backlogRows.find((b) => b.name.includes(', PostgreSQL x2, '))?.split;
    log(
      `backlog drain PostgreSQL x2 / x1: ${(pg2 / pg1).toFixed(2)} (${opts.destinations === 1 ? 'one destination: one lease holder sends everything' : `${opts.destinations} destinations, each sent by its lease holder`}` +
        `${split ? `; drain requests by instance ${split}` : ''})`,
    );
  }
  if (ctx.failures.length) {
    log(`\nFAILED: ${ctx.failures.join('; ')}`);
    return 1;
  }
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`bench:webhooks: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);

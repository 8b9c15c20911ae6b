/**
 * CPU per ingested event on PostgreSQL without HTTP (never part of the pass/fail suite):
 *
 *   npm run build && node --import ./test/bench/register.mjs test/bench/ingest-cpu-pg.ts \
 *     --database-url postgres://postgres@127.0.0.1:5432/test [--group 64 --rounds 40 --sessions 2000 --statements]
 *
 * Opens svc's store on a fresh schema (bench_cpu_<pid>, dropped at the end), then runs `rounds` rounds
 * of `group` IngestionService.recordEvent calls submitted at once (pageviews of known sessions, one
 * session per call, as bench:ingest's load makes them), and prints per event: this process's CPU
 * (process.cpuUsage, µs), the CPU of the PostgreSQL backends serving the store's pool (/proc utime +
 * stime), statements sent.count, and per group the round trips (/metrics' figure). CPU, not wall clock: on a
 * shared host the clock measures the neighbours. With --statements, each statement text of one
 * measured group is then replayed alone (same parameters, inside BEGIN … ROLLBACK so nothing is
 * stored) `--repeat` times on a connection of its own, and its backend CPU per run printed, with
 * EXPLAIN (ANALYZE, BUFFERS) of the largest. With --profile P, a CPU profile of each measured round alone
 * (node:inspector) goes to P.<round>.cpuprofile (the profiler's own cost is in that round's CPU figure).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import net from 'node:net';
import pg from 'pg';
import { openConfiguredStore } from '../../src/store/open.js';
import { IngestionService, type RequestContext } from '../../src/domain/ingestion/service.js';
import { SegmentMembership } from '../../src/domain/segments/membership.js';
import type { GroupCommitInfo } from '../../src/store/observe.js';
import { pgBackendPids } from './lib/sockets.js';
import { processCpuMs } from './lib/child.js';
import { intFlag } from './lib/args.js';
import { watchPgStatements } from './lib/pg-statements.js';
import { buildEventBodies } from './lib/event.js';
import { execFileSync } from 'node:child_process';
import { callgrindInstructions } from './lib/callgrind.js';

const { values } = parseArgs({
  options: {
    'database-url': { type: 'string' },
    group: { type: 'string' },
    rounds: { type: 'string' },
    sessions: { type: 'string' },
    repeat: { type: 'string' },
    statements: { type: 'boolean', default: false },
    destination: { type: 'boolean', default: false },
    spread: { type: 'string' },
    warmup: { type: 'string' },
    profile: { type: 'string' },
    'alloc-profile': { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (values.help || values['database-url'] === undefined) {
  process.stdout.write('usage: ingest-cpu-pg.ts --database-url URL [--group 64] [--rounds 40] [--sessions 2000] [--statements] [--repeat 200] [--destination] [--spread 0] [--warmup 5] [--profile P] [--alloc-profile P]\n');
  process.exit(values.help ? 0 : 2);
}
const baseUrl = values['database-url'];
const groupSize = intFlag('group', values.group, 64, 1, 256);
const rounds = intFlag('rounds', values.rounds, 40, 1, 10_000);
const sessions = intFlag('sessions', values.sessions, 2000, 1, 1_000_000);
const warmup = intFlag('warmup', values.warmup, 5, 1, 100_000);
const repeat = intFlag('repeat', values.repeat, 200, 1, 100_000);
// --spread K: `group` writers, each submitting its next event 0 to K event-loop turns (random, seeded) after its
// last was acknowledged, instead of all at once: arrivals spread as HTTP requests' are, so that operations
// queue while both write lanes are busy (as under bench:ingest). 0 (the default): rounds of `group` events.
/**
 * SVC_BENCH_CALLGRIND_DIR=DIR, the bench run as `valgrind --tool=callgrind --instr-atstart=no --smc-check=all-non-file
 * --separate-threads=no --callgrind-out-file=DIR/x-%p node …`: instrumentation is switched on for each measured round
 * alone (start, seeding and warm-up run uninstrumented, so the pool's connections do not time out), and the round's
 * instructions per event (all threads: JIT compiling and GC included) are printed.
 */
const callgrindDir = process.env.SVC_BENCH_CALLGRIND_DIR;
const spread = intFlag('spread', values.spread, 0, 0, 1000);
let seed = 20;
const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);

const schema = `bench_cpu_${process.pid}`;
const url = new URL(baseUrl);
url.searchParams.set('schema', schema);
const plainUrl = new URL(baseUrl);
plainUrl.searchParams.delete('schema');

/** Statements sent through any pg client of this process (text, values), while `recording`. */
let recording: { text: string; values: unknown[] }[] | null = null;
const sent = watchPgStatements((s) => recording?.push(s));

/** Writes to PostgreSQL sockets (each one a send that wakes a backend): net.Socket's _write and _writev. */
let sends = 0;
for (const m of ['_write', '_writev'] as const) {
  const proto = net.Socket.prototype as unknown as Record<string, (...a: unknown[]) => unknown>;
  const orig = proto[m]!;
  proto[m] = function (this: net.Socket, ...a: unknown[]) {
    if (this.remotePort === Number(url.port || 5432)) sends++;
    return orig.apply(this, a);
  };
}
/** Chunks read from PostgreSQL sockets (each one a wake-up of this process by a backend's send): net.Socket's push. */
let reads = 0;
{
  const proto = net.Socket.prototype as unknown as Record<string, (...a: unknown[]) => unknown>;
  const orig = proto.push!;
  proto.push = function (this: net.Socket, ...a: unknown[]) {
    if (a[0] !== null && this.remotePort === Number(url.port || 5432)) reads++;
    return orig.apply(this, a);
  };
}

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-ingest-cpu-'));
const store = await openConfiguredStore({
  dataDir,
  synchronous: 'full',
  databaseUrl: url.toString(),
  databasePoolSize: 10,
  databaseStatementTimeoutMs: 60_000,
});
const site = await store.write((tx) => tx.sites.create({ name: 'cpu' }));
// --destination: an enabled webhook destination of every event type, so each pageview writes its outbox row (without one,
// since issue 22, none).
if (values.destination) {
  await store.write((tx) => tx.webhooks.createDestination({ siteId: site.id, url: 'https://hooks.example.com/bench', secretEnc: null, events: ['all'] }));
}
const svc = new IngestionService(store, new SegmentMembership(store));
const ctx = (): RequestContext => ({ ip: '203.0.113.9', userAgent: 'Mozilla/5.0 (X11; Linux x86_64) bench' });

const bodies = buildEventBodies(site.id, sessions).bodies.map((b) => b.toString());

/** bench:ingest's pageview of session i % sessions. */
function event(i: number) {
  const raw = bodies[i % sessions]!;
  return svc.recordEvent(JSON.parse(raw) as never, raw, ctx());
}

const groups: GroupCommitInfo[] = [];
store.onGroupCommit((g) => groups.push(g));

// Seed the sessions (new-session path), then warm up the known-session path.
for (let i = 0; i < sessions; i += 128) await Promise.all(Array.from({ length: Math.min(128, sessions - i) }, (_, k) => event(i + k)));
let n = sessions;
for (let r = 0; r < warmup; r++) await Promise.all(Array.from({ length: groupSize }, () => event(n++)));

const backends = () => pgBackendPids([process.pid], Number(url.port || 5432));
const cpuOf = (pids: number[]) => pids.reduce((a, p) => a + (processCpuMs(p) ?? 0), 0);

/**
 * --profile P: a CPU profile of each measured round alone (node:inspector), to P.<round>.cpuprofile; --alloc-profile P:
 * a sampling allocation profile of each measured round that keeps the objects the collector freed, to P.<round>.heapprofile.
 */
const session = values.profile !== undefined || values['alloc-profile'] !== undefined ? new Session() : null;
if (session !== null) {
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('HeapProfiler.enable');
}

async function measure(label: string, round: number): Promise<void> {
  groups.length = 0;
  if (values.profile !== undefined) await session!.post('Profiler.start');
  if (values['alloc-profile'] !== undefined) {
    await session!.post('HeapProfiler.startSampling', { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  }
  if (callgrindDir !== undefined) {
    execFileSync('callgrind_control', ['-z', String(process.pid)], { stdio: 'ignore' });
    execFileSync('callgrind_control', ['-i', 'on', String(process.pid)], { stdio: 'ignore' });
  }
  const pids = backends();
  const b0 = cpuOf(pids);
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const s0 = sent.count;
  const w0 = sends;
  const r0 = reads;
  if (spread === 0) for (let r = 0; r < rounds; r++) await Promise.all(Array.from({ length: groupSize }, () => event(n++)));
  else {
    let left = rounds * groupSize;
    const writer = async (): Promise<void> => {
      while (left > 0) {
        left--;
        await event(n++);
        for (let k = Math.floor(random() * (spread + 1)); k > 0; k--) await new Promise((r) => setImmediate(r));
      }
    };
    await Promise.all(Array.from({ length: groupSize }, writer));
  }
  const c1 = process.cpuUsage(c0);
  const wall = performance.now() - t0;
  let instructions = '';
  if (callgrindDir !== undefined) {
    execFileSync('callgrind_control', ['-i', 'off', String(process.pid)], { stdio: 'ignore' });
    instructions = `${(callgrindInstructions(callgrindDir, process.pid) / (rounds * groupSize)).toFixed(0)} instructions/event (callgrind), `;
  }
  if (values.profile !== undefined) writeFileSync(`${values.profile}.${round}.cpuprofile`, JSON.stringify((await session!.post('Profiler.stop')).profile));
  if (values['alloc-profile'] !== undefined) {
    writeFileSync(`${values['alloc-profile']}.${round}.heapprofile`, JSON.stringify((await session!.post('HeapProfiler.stopSampling')).profile));
  }
  const b1 = cpuOf(pids);
  const events = rounds * groupSize;
  const trips = groups.reduce((a, g) => a + g.roundTrips, 0);
  const ops = groups.reduce((a, g) => a + g.operations, 0);
  process.stdout.write(
    `${label}: ${events} events in ${groups.length} groups (${(ops / groups.length).toFixed(1)}/group), ${instructions}` +
      `svc ${((c1.user + c1.system) / events).toFixed(1)} µs/event (user ${(c1.user / events).toFixed(1)}, system ${(c1.system / events).toFixed(1)}), backends ${(((b1 - b0) * 1000) / events).toFixed(1)} µs/event ` +
      `(${pids.length} backends), ${Math.round((events * 1000) / wall)} events/s wall (the host's other work in it), ${((sent.count - s0) / events).toFixed(3)} statements/event, ${(trips / groups.length).toFixed(1)} round trips/group, ` +
      `${((sends - w0) / groups.length).toFixed(2)} sends/group, ${((reads - r0) / groups.length).toFixed(2)} reads/group\n`,
  );
}

for (let k = 0; k < 3; k++) await measure(`round ${k + 1}`, k + 1);

if (values.statements) {
  recording = [];
  const t0 = Date.now();
  await Promise.all(Array.from({ length: groupSize }, () => event(n++)));
  const texts = recording as { text: string; values: unknown[] }[];
  recording = null;
  const client = new pg.Client({ connectionString: plainUrl.toString(), application_name: 'svc-bench' });
  await client.connect();
  await client.query(`SET search_path TO ${schema}`);
  // The group committed: its event and outbox rows go, so that its inserts can run again (rolled back each time).
  await client.query('DELETE FROM events WHERE received_at >= $1', [t0]);
  await client.query('DELETE FROM outbox WHERE created_at >= $1', [t0]);
  const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  const stat = () => {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return (Number(rest[11]) + Number(rest[12])) * 10; // ms at CLK_TCK 100
  };
  process.stdout.write(`\none group's statements (${texts.length}), each alone ${repeat} times in BEGIN … ROLLBACK, backend CPU per run:\n`);
  for (const [i, s] of texts.entries()) {
    if (!/^\s*(SELECT|INSERT|UPDATE|WITH|DELETE)\b/i.test(s.text)) continue;
    const name = `cpu_${i}`;
    const run = async () => {
      await client.query('BEGIN');
      await client.query({ name, text: s.text, values: s.values });
      await client.query('ROLLBACK');
    };
    for (let w = 0; w < 3; w++) await run();
    const base0 = stat();
    for (let r = 0; r < repeat; r++) {
      await client.query('BEGIN');
      await client.query('ROLLBACK');
    }
    const base = stat() - base0;
    const t0 = stat();
    for (let r = 0; r < repeat; r++) await run();
    const us = ((stat() - t0 - base) * 1000) / repeat;
    const plans = (await client.query<{ g: string; c: string }>('SELECT generic_plans AS g, custom_plans AS c FROM pg_prepared_statements WHERE name = $1', [name])).rows[0];
    await client.query('SET plan_cache_mode = force_generic_plan');
    const g0 = stat();
    for (let r = 0; r < repeat; r++) await run();
    const usGeneric = ((stat() - g0 - base) * 1000) / repeat;
    await client.query('RESET plan_cache_mode');
    process.stdout.write(`  plans so far: generic ${plans?.g}, custom ${plans?.c}; forced generic: ${usGeneric.toFixed(0)} µs/run\n`);
    const bytes = s.values.reduce<number>((a, v) => a + (typeof v === 'string' ? v.length : 8), 0);
    process.stdout.write(`  #${i} ${us.toFixed(0)} µs/run (${(us / groupSize).toFixed(1)} µs/event), ${bytes} bytes of parameters: ${s.text.replace(/\s+/g, " ").slice(0, 3000)}\n`);
    await client.query('BEGIN');
    const plan = await client.query({ text: `EXPLAIN (ANALYZE, BUFFERS, VERBOSE OFF) ${s.text}`, values: s.values });
    await client.query('ROLLBACK');
    for (const row of plan.rows as { 'QUERY PLAN': string }[]) process.stdout.write(`      ${row['QUERY PLAN']}\n`);
  }
  await client.end();
}

await store.close();
const admin = new pg.Client({ connectionString: plainUrl.toString() });
await admin.connect();
await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
await admin.end();
rmSync(dataDir, { recursive: true, force: true });

/**
 * CPU per event of svc's ingestion without HTTP (never part of the suite): the
 * steps handleIngest runs after the body is read (UTF-8 check, JSON.parse, the
 * JSON text check, the schema, the site, recordEvent through the group-commit
 * writer with its off-thread WAL fsync), on a fresh SQLite data directory, in
 * waves of --concurrency events awaited together (a wave is one group commit,
 * as under load). process.cpuUsage() over the measured waves / events = µs of
 * CPU per event, main thread and libuv pool together.
 *
 *   node --import ./test/bench/register.mjs test/bench/ingest-cpu.ts [--events N] [--sessions N] [--concurrency N] [--rounds N]
 *
 * --sessions below --events: the measured events are of sessions seen before
 * (the common case: a returning session); --new-sessions: every measured event
 * is of a session never seen (a session and a profile are created).
 *
 * --segments N: the site has N live segments (event-count rules, alternately matching a returning session or not), so
 * each event's recompute reads the profile's memberships, each rule's match and the primary segment.
 *
 * --uncached: the writer's cached sessions are dropped before each wave, so every returning session's event reads its
 * session from the store (as after a restart, beyond MAX_CACHED_SESSIONS, or after another process's commit).
 *
 * --bare: the storing baseline of bench:ingest in-process instead (lib/durable-log.ts, as bare-store-server.ts:
 * JSON.parse, JSON.stringify, one row into a table with svc's events columns and indexes, the same group commit
 * and off-thread fsync), for svc's figure against it without HTTP.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { isUtf8 } from 'node:buffer';
import { openStore } from '../../src/store/store.js';
import { SqliteSql } from '../../src/store/sql.js';
import { WebhookDispatcher } from '../../src/webhooks/dispatcher.js';
import { pino } from 'pino';
import { SegmentMembership } from '../../src/domain/segments/membership.js';
import { IngestionService } from '../../src/domain/ingestion/service.js';
import * as schemas from '../../src/domain/ingestion/schemas.js';
import { checkJsonText } from '../../src/http/json-guard.js';
import { buildEventBodies } from './lib/event.js';
import { intFlag } from './lib/args.js';
import { DurableLog, svcTableSchema } from './lib/durable-log.js';

const { values } = parseArgs({
  options: {
    events: { type: 'string' },
    sessions: { type: 'string' },
    concurrency: { type: 'string' },
    rounds: { type: 'string' },
    'new-sessions': { type: 'boolean', default: false },
    uncached: { type: 'boolean', default: false },
    segments: { type: 'string' },
    statements: { type: 'boolean', default: false },
    dispatcher: { type: 'boolean', default: false },
    destination: { type: 'boolean', default: false },
    bare: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (values.help) {
  process.stdout.write('usage: ingest-cpu.ts [--events N (20000)] [--sessions N (2000)] [--concurrency N (64)] [--rounds N (3)] [--new-sessions] [--uncached] [--segments N] [--statements] [--dispatcher] [--destination] [--bare]\n');
  process.exit(0);
}
const events = intFlag('events', values.events, 20_000, 1, 1_000_000);
const sessions = intFlag('sessions', values.sessions, 2_000, 1, 1_000_000);
const concurrency = intFlag('concurrency', values.concurrency, 64, 1, 10_000);
const rounds = intFlag('rounds', values.rounds, 3, 1, 50);
const fresh = values['new-sessions'];
const segmentCount = intFlag('segments', values.segments, 0, 0, 100);

// --statements: counts the statements per event by SQL text (SqliteSql's calls), printed after the rounds.
const counted = new Map<string, number>();
if (values.statements) {
  const proto = SqliteSql.prototype as unknown as Record<string, (this: unknown, sql: string, ...rest: unknown[]) => unknown>;
  for (const m of ['get', 'all', 'run', 'getEach', 'runEach']) {
    const orig = proto[m]!;
    proto[m] = function (this: unknown, sql: string, ...rest: unknown[]) {
      counted.set(sql, (counted.get(sql) ?? 0) + 1);
      return orig.call(this, sql, ...rest);
    };
  }
}
const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-ingest-cpu-'));
if (values.bare) {
  try {
    await runBare();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  process.exit(0);
}
const store = openStore({ dataDir: dir, synchronous: 'full', offThreadFsync: true });
try {
  const site = await store.write((tx) => tx.sites.create({ name: 'cpu' }));
  // --destination: the site has an enabled webhook destination of every event type, so each pageview writes its outbox
  // row (without one, since issue 22, none); with --dispatcher its deliveries fail at once (a private address).
  if (values.destination) {
    await store.write((tx) => tx.webhooks.createDestination({ siteId: site.id, url: 'http://127.0.0.1:9/bench', secretEnc: null, events: ['all'] }));
  }
  for (let i = 0; i < segmentCount; i++) {
    const rule = JSON.stringify({ event: 'pageview', count: { op: i % 2 === 0 ? 'gte' : 'lte', value: 1 + i } });
    await store.write((tx) => tx.segments.create({ siteId: site.id, name: `bench ${i}`, rule, priority: i }));
  }
  const service = new IngestionService(store, new SegmentMembership(store));
  // --dispatcher: the webhook dispatcher runs as under svc serve (woken after each commit that wrote outbox rows).
  const dispatcher = values.dispatcher
    ? new WebhookDispatcher(store, {
        retry: { delaysMs: [1000], jitter: 0.2 },
        disableAfter: { failures: 100, windowMs: 3_600_000 },
        allowPrivate: false,
        concurrency: 4,
        pollMs: 500,
        leaseMs: 30_000,
        logger: pino({ level: 'silent' }),
      })
    : null;
  dispatcher?.start();
  const pool = fresh ? events * (rounds + 1) : sessions;
  // SVC_BENCH_EVENT_TYPE (same length as pageview, e.g. pagevie_): a custom type, which writes no outbox row.
  const type = process.env.SVC_BENCH_EVENT_TYPE;
  const bodies = buildEventBodies(site.id, pool).bodies.map((b) => (type ? Buffer.from(b.toString().replace('"pageview"', JSON.stringify(type))) : b));
  const fast = (schemas as { commonEvent?: (b: Record<string, unknown>) => schemas.EventRequest | null }).commonEvent;
  const one = async (buf: Buffer) => {
    if (!isUtf8(buf)) throw new Error('not utf8');
    const raw = buf.toString('utf8');
    const parsed: unknown = JSON.parse(raw);
    if (checkJsonText(raw)) throw new Error('json problem');
    // As the router does: the check without zod where the build has it (commonEvent), else the schema.
    let input = fast?.(parsed as Record<string, unknown>) ?? null;
    if (input === null) {
      const r = schemas.eventSchema.safeParse(parsed);
      if (!r.success) throw new Error('invalid');
      input = r.data;
    }
    const site = await service.site(input.site_id);
    await service.recordEvent(input, raw, { ip: '127.0.0.1', userAgent: 'bench' }, site);
  };
  const caches = store.shared.writerCaches;
  await measure(bodies, one, '', () => counted.clear(), values.uncached ? () => caches.clearSessions() : undefined);
  await dispatcher?.stop(1000);
  for (const [sql, n] of [...counted].sort((a, b) => b[1] - a[1])) {
    process.stdout.write(`${(n / (events * rounds)).toFixed(3)} per event: ${sql.replace(/\s+/g, ' ').slice(0, 140)}\n`);
  }
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}

/** --bare: what bare-store-server.ts does per request after reading the body, in waves of --concurrency. */
async function runBare(): Promise<void> {
  const log = new DurableLog(
    path.join(dir, 'events.db'),
    svcTableSchema(dir, 'events'),
    'INSERT INTO events (site_id, session_id, profile_id, visitor_id, type, ts, body, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id',
  );
  const pool = fresh ? events * (rounds + 1) : sessions;
  const bodies = buildEventBodies('site_BENCHbareSERVER0', pool).bodies;
  const one = async (buf: Buffer) => {
    const e = JSON.parse(buf.toString('utf8')) as { site_id?: unknown; session_id?: unknown; visitor_id?: unknown; type?: unknown };
    const now = Date.now();
    const body = JSON.stringify(e);
    await log.add([String(e.site_id), String(e.session_id), `prof_${String(e.session_id)}`, e.visitor_id === undefined ? null : String(e.visitor_id), String(e.type), now, body, now]);
  };
  await measure(bodies, one, ' (bare)');
  await log.close();
}

/**
 * Warm-up (every session of the pool seen once, unless each event is to be a new session, and the code hot), then
 * --rounds rounds of --events events in waves of --concurrency awaited together, each printing this process's CPU
 * per event.
 */
async function measure(
  bodies: Buffer[],
  one: (body: Buffer) => Promise<void>,
  label: string,
  afterWarmUp?: () => void,
  beforeWave?: () => void,
): Promise<void> {
  let next = 0;
  const run = async (n: number) => {
    for (let done = 0; done < n; ) {
      beforeWave?.();
      const wave: Promise<void>[] = [];
      for (let i = 0; i < concurrency && done < n; i++, done++) wave.push(one(bodies[next++ % bodies.length]!));
      await Promise.all(wave);
    }
  };
  await run(fresh ? events : Math.max(sessions, 5_000));
  afterWarmUp?.();
  for (let r = 0; r < rounds; r++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await run(events);
    const c = process.cpuUsage(c0);
    const ms = performance.now() - t0;
    const what = label === '' ? `${events} events (${fresh ? 'new sessions' : `${sessions} returning sessions${values.uncached ? ', not cached' : ''}`})` : `${events} events`;
    process.stdout.write(
      `round ${r + 1}${label}: ${what}, concurrency ${concurrency}: ` +
        `${((c.user + c.system) / events).toFixed(1)} µs CPU/event (user ${(c.user / events).toFixed(1)}, system ${(c.system / events).toFixed(1)}), ${ms.toFixed(0)} ms wall\n`,
    );
  }
}

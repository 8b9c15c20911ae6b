/**
 * Storage-access benchmark for the PostgreSQL backend decision (never part of
 * the pass/fail suite):
 *
 *   npm run bench:storage [-- --events 50000 --seconds 10 --batch 1,32,256 --sessions 10000]
 *
 * Runs the ingestion hot path (what IngestionService.recordEvent does inside
 * the group-commit writer) directly against the store, without HTTP. Per
 * event: look up the session by (site_id, session_id); when absent insert a
 * profile and the session; insert the event row (a ~300-byte JSON body,
 * RETURNING its id); insert an outbox row whose payload carries that event
 * id. Events are committed in GROUP COMMITS of B events per transaction, one
 * transaction at a time, every commit durable (SQLite WAL + synchronous=FULL;
 * PostgreSQL fsync=on, synchronous_commit=on).
 *
 * Variants (all in the same run, interleaved per batch size so drift of the
 * host affects each alike):
 *   sqlite-raw      better-sqlite3 through src/store/sql.ts (SqliteSql: cached prepared
 *                   statements, async API whose promises are settled at once) and
 *                   src/store/writer.ts (today's code path; the baseline = 1.00)
 *   sqlite-kysely   Kysely over better-sqlite3 (async API, one await per statement)
 *   pg-seq          pg, one connection, named prepared statements, BEGIN … COMMIT,
 *                   one await per statement
 *   pg-pipeline     pg 8.23 `pipeline: true`: the batch's events run concurrently in
 *                   one transaction, so their statements share round trips
 *   pg-unnest       pg `pipeline: true`, set-based: one statement per table per batch
 *                   (INSERT … SELECT FROM unnest($1::text[], …)); 2 round trips a batch
 *   pg-kysely       Kysely over pg (Kysely runs a transaction's queries one at a time)
 *   pg-kysely-pipe  Kysely as SQL compiler only (compile()) + the pipelined pg client
 *   pgjs            postgres.js (prepared + pipelined by default), events concurrent
 *                   inside sql.begin (max_pipeline: --pgjs-max-pipeline, default 100)
 *
 * N sessions (and their profiles) are seeded before each measurement; each
 * event picks one of the known sessions at random, or (--new-pct, default 5%)
 * starts a new one, which joins the pool. The event sequence is the same for
 * every variant (seeded PRNG). Each (variant, B) gets fresh tables: a new
 * SQLite file in a temp directory, or tables re-created in this run's own
 * PostgreSQL schema (bench_<random>), dropped at the end, also on failure.
 *
 * Printed per variant and B: events/s, main-process CPU µs per event
 * (process.cpuUsage), PostgreSQL backend CPU µs per event (/proc, when the
 * server is local), p50/p99 commit latency (batch start to durable ack) and
 * the ratio of events/s to sqlite-raw at the same B.
 *
 * Each cell is bounded by --events and --seconds. After each cell the stored
 * rows are checked: events = outbox = events acknowledged, sessions = profiles
 * = seeded + new sessions acknowledged, every outbox row points at an event of
 * the same session, every event carries its session's profile. Exit status: 0
 * whatever the figures; 1 when a batch fails or a check fails; 2 on bad usage.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Database } from '../../src/store/sqlite-driver.js';
import type BetterSqlite3 from 'better-sqlite3';
import {
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresDialect,
  PostgresIntrospector,
  PostgresQueryCompiler,
  SqliteDialect,
  sql,
  type Generated,
} from 'kysely';
import pg from 'pg';
import postgres from 'postgres';
import { GroupCommitWriter } from '../../src/store/writer.js';
import { SqliteSql, type Sql } from '../../src/store/sql.js';
import { newRepoShared, Repos } from '../../src/store/repos.js';
import { newId } from '../../src/store/ids.js';
import { Histogram, type HistogramSummary } from './lib/histogram.js';
import { PAGES, REFERRERS, VIEWPORTS } from './lib/event.js';
import { removeTree } from './lib/targets.js';
import { UsageError, intFlag } from './lib/args.js';
import { mulberry32 } from '../helpers/prng.js';

const VARIANTS = ['sqlite-raw', 'sqlite-kysely', 'pg-seq', 'pg-pipeline', 'pg-unnest', 'pg-kysely', 'pg-kysely-pipe', 'pgjs'] as const;
type VariantName = (typeof VARIANTS)[number];
const BASELINE: VariantName = 'sqlite-raw';
const SITE = 'site_BENCHstorage001';
const IP = '203.0.113.7';
const UA = 'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15';
const DEFAULT_PG = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

const HELP = `usage: npm run bench:storage -- [options]
  --events N         events per (variant, batch size), after the warm-up (default 50000, max 5000000)
  --seconds N        time bound per (variant, batch size) (default 10, max 600)
  --warmup N         warm-up events before each measurement, bounded by 1 s (default 1000, max 100000)
  --batch LIST       batch sizes: events per transaction (default 1,32,256; each 1..10000)
  --sessions N       sessions seeded before each measurement (default 10000, max 1000000)
  --new-pct P        percent of events that start a new session (default 5, 0..100)
  --only LIST        variants to run (default all): ${VARIANTS.join(', ')}
  --pg URL           PostgreSQL URL (default $BENCH_PG_URL or ${DEFAULT_PG});
                     PostgreSQL variants are skipped (with a note) when it cannot be reached
  --pgjs-max-pipeline N  postgres.js max_pipeline (default 100, its undocumented default; once more
                     queries than this are in flight it drains the whole pipeline first)
  -h, --help         this text`;

function parse(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    options: {
      events: { type: 'string' },
      seconds: { type: 'string' },
      warmup: { type: 'string' },
      batch: { type: 'string' },
      sessions: { type: 'string' },
      'new-pct': { type: 'string' },
      only: { type: 'string' },
      pg: { type: 'string' },
      'pgjs-max-pipeline': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  const batches = (values.batch ?? '1,32,256').split(',').map((s) => intFlag('batch', s.trim(), 1, 1, 10_000));
  const only = values.only === undefined ? [...VARIANTS] : values.only.split(',').map((s) => s.trim());
  for (const v of only) if (!(VARIANTS as readonly string[]).includes(v)) throw new UsageError(`--only: unknown variant ${JSON.stringify(v)} (known: ${VARIANTS.join(', ')})`);
  return {
    help: values.help,
    events: intFlag('events', values.events, 50_000, 1, 5_000_000),
    seconds: intFlag('seconds', values.seconds, 10, 1, 600),
    warmup: intFlag('warmup', values.warmup, 1000, 0, 100_000),
    batches,
    sessions: intFlag('sessions', values.sessions, 10_000, 1, 1_000_000),
    newPct: intFlag('new-pct', values['new-pct'], 5, 0, 100),
    only: only as VariantName[],
    pgUrl: values.pg ?? DEFAULT_PG,
    pgjsMaxPipeline: intFlag('pgjs-max-pipeline', values['pgjs-max-pipeline'], 100, 1, 100_000),
  };
}
type Options = ReturnType<typeof parse>;

// ---------------------------------------------------------------- workload

interface Op {
  sessionId: string;
  visitorId: string;
  /** First event of a session that was not seeded. */
  isNew: boolean;
  type: string;
  url: string;
  /** The request body exactly as received (~300 bytes). */
  body: string;
  /** The body's custom properties (what the parsed request would hold), for the outbox payload. */
  properties: Record<string, unknown>;
}


const sessionIdOf = (k: number) => `sess_${String(k).padStart(7, '0')}`;
const visitorIdOf = (k: number) => `vis_${String(k).padStart(7, '0')}`;

/** The same event sequence for every variant: sessions picked from a growing pool, `newPct`% new ones. */
function buildOps(count: number, sessions: number, newPct: number): Op[] {
  const rnd = mulberry32(0x5eed);
  let pool = sessions;
  const ops: Op[] = new Array(count);
  for (let i = 0; i < count; i++) {
    let k: number;
    let isNew = false;
    if (rnd() * 100 < newPct) {
      k = pool++;
      isNew = true;
    } else {
      k = Math.floor(rnd() * pool);
    }
    const [pagePath, title] = PAGES[k % PAGES.length]!;
    const [w, h] = VIEWPORTS[(k >> 2) % VIEWPORTS.length]!;
    const url = `https://shop.example.com${pagePath}?utm_source=newsletter`;
    const properties = {
      url,
      referrer: REFERRERS[(k >> 4) % REFERRERS.length],
      title,
      viewport: { w, h },
      props: { ab: k % 2 ? 'B' : 'A', seq: String(i).padStart(8, '0') },
    };
    const sessionId = sessionIdOf(k);
    const visitorId = visitorIdOf(k);
    const body = JSON.stringify({ site_id: SITE, session_id: sessionId, visitor_id: visitorId, type: 'pageview', ...properties });
    ops[i] = { sessionId, visitorId, isNew, type: 'pageview', url, body, properties };
  }
  return ops;
}

/** The outbox payload of a behavioural event (same shape as behaviouralPayload in src/domain/ingestion/payloads.ts). */
function outboxPayload(op: Op, eventId: string, profileId: string, visitorId: string | null, at: number): string {
  return JSON.stringify({
    event: op.type,
    site_id: SITE,
    event_id: eventId,
    profile_id: profileId,
    session_id: op.sessionId,
    visitor_id: visitorId ?? '',
    timestamp: new Date(at).toISOString(),
    properties: op.properties,
  });
}

// ---------------------------------------------------------------- schemas (mirror migration 1)

const SQLITE_DDL = `
CREATE TABLE profiles (
  id TEXT PRIMARY KEY, site_id TEXT NOT NULL, known INTEGER NOT NULL DEFAULT 0, traits TEXT NOT NULL DEFAULT '{}',
  primary_segment TEXT, merged_into TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
CREATE INDEX profiles_site ON profiles (site_id, id);
CREATE TABLE sessions (
  site_id TEXT NOT NULL, id TEXT NOT NULL, profile_id TEXT NOT NULL, visitor_id TEXT, first_seen INTEGER NOT NULL,
  last_seen INTEGER NOT NULL, ip TEXT, user_agent TEXT, landing_url TEXT, fbclid TEXT, fbclid_at INTEGER, gclid TEXT,
  PRIMARY KEY (site_id, id)) WITHOUT ROWID;
CREATE INDEX sessions_profile ON sessions (profile_id);
CREATE TABLE events (
  id INTEGER PRIMARY KEY, site_id TEXT NOT NULL, session_id TEXT NOT NULL, profile_id TEXT NOT NULL, visitor_id TEXT,
  type TEXT NOT NULL, ts INTEGER NOT NULL, body TEXT NOT NULL, received_at INTEGER NOT NULL);
CREATE INDEX events_site_type ON events (site_id, type, ts);
CREATE INDEX events_profile ON events (profile_id, ts);
CREATE TABLE outbox (
  id INTEGER PRIMARY KEY, site_id TEXT NOT NULL, event_type TEXT NOT NULL, payload TEXT NOT NULL,
  created_at INTEGER NOT NULL, dispatched_at INTEGER);
CREATE INDEX outbox_pending ON outbox (id) WHERE dispatched_at IS NULL;
CREATE INDEX outbox_site ON outbox (site_id, id);
`;

// Same tables on PostgreSQL: ids are text with byte-order collation (as in SQLite), times bigint ms,
// the event body text (verbatim; `json` would also keep it verbatim), bigserial for INTEGER PRIMARY KEY.
const PG_DDL = `
DROP TABLE IF EXISTS outbox, events, sessions, profiles;
CREATE TABLE profiles (
  id text COLLATE "C" PRIMARY KEY, site_id text COLLATE "C" NOT NULL, known smallint NOT NULL DEFAULT 0,
  traits text NOT NULL DEFAULT '{}', primary_segment text, merged_into text,
  created_at bigint NOT NULL, updated_at bigint NOT NULL);
CREATE INDEX profiles_site ON profiles (site_id, id);
CREATE TABLE sessions (
  site_id text COLLATE "C" NOT NULL, id text COLLATE "C" NOT NULL, profile_id text COLLATE "C" NOT NULL, visitor_id text,
  first_seen bigint NOT NULL, last_seen bigint NOT NULL, ip text, user_agent text, landing_url text,
  fbclid text, fbclid_at bigint, gclid text, PRIMARY KEY (site_id, id));
CREATE INDEX sessions_profile ON sessions (profile_id);
CREATE TABLE events (
  id bigserial PRIMARY KEY, site_id text COLLATE "C" NOT NULL, session_id text COLLATE "C" NOT NULL,
  profile_id text COLLATE "C" NOT NULL, visitor_id text, type text NOT NULL, ts bigint NOT NULL, body text NOT NULL,
  received_at bigint NOT NULL);
CREATE INDEX events_site_type ON events (site_id, type, ts);
CREATE INDEX events_profile ON events (profile_id, ts);
CREATE TABLE outbox (
  id bigserial PRIMARY KEY, site_id text COLLATE "C" NOT NULL, event_type text NOT NULL, payload text NOT NULL,
  created_at bigint NOT NULL, dispatched_at bigint);
CREATE INDEX outbox_pending ON outbox (id) WHERE dispatched_at IS NULL;
CREATE INDEX outbox_site ON outbox (site_id, id);
`;

/** Hot-path SQL, identical text on both stores except the placeholders. */
const SQL_TEXT = {
  session: 'SELECT profile_id, visitor_id, last_seen, fbclid, gclid FROM sessions WHERE site_id = ? AND id = ?',
  profile: 'INSERT INTO profiles (id, site_id, known, traits, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)',
  sessionInsert:
    'INSERT INTO sessions (site_id, id, profile_id, visitor_id, first_seen, last_seen, ip, user_agent, landing_url, fbclid, fbclid_at, gclid) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  event: 'INSERT INTO events (site_id, session_id, profile_id, visitor_id, type, ts, body, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id',
  outbox: 'INSERT INTO outbox (site_id, event_type, payload, created_at) VALUES (?, ?, ?, ?)',
};

/** `?` placeholders to PostgreSQL's `$n`. */
function dollar(q: string): string {
  let n = 0;
  return q.replace(/\?/g, () => `$${++n}`);
}

// Kysely's view of the same tables (one type for both dialects).
interface KDB {
  profiles: {
    id: string;
    site_id: string;
    known: Generated<number>;
    traits: Generated<string>;
    primary_segment: string | null;
    merged_into: string | null;
    created_at: number;
    updated_at: number;
  };
  sessions: {
    site_id: string;
    id: string;
    profile_id: string;
    visitor_id: string | null;
    first_seen: number;
    last_seen: number;
    ip: string | null;
    user_agent: string | null;
    landing_url: string | null;
    fbclid: string | null;
    fbclid_at: number | null;
    gclid: string | null;
  };
  events: {
    // number on SQLite, string (int8) on pg: the driver decides, not the type.
    id: Generated<number | string>;
    site_id: string;
    session_id: string;
    profile_id: string;
    visitor_id: string | null;
    type: string;
    ts: number;
    body: string;
    received_at: number;
  };
  outbox: {
    id: Generated<number | string>;
    site_id: string;
    event_type: string;
    payload: string;
    created_at: number;
    dispatched_at: number | null;
  };
}

// ---------------------------------------------------------------- the hot path over an async repository

interface SessionRow {
  profile_id: string;
  visitor_id: string | null;
}

/** What a store must offer the event hot path; one implementation per driver below. */
interface HotPathRepo {
  findSession(siteId: string, sessionId: string): Promise<SessionRow | undefined>;
  insertProfile(id: string, siteId: string, now: number): Promise<unknown>;
  insertSession(siteId: string, sessionId: string, profileId: string, visitorId: string, url: string, now: number): Promise<unknown>;
  /** Returns the new event's id. */
  insertEvent(r: { siteId: string; sessionId: string; profileId: string; visitorId: string | null; type: string; ts: number; body: string; now: number }): Promise<string>;
  insertOutbox(siteId: string, eventType: string, payload: string, now: number): Promise<unknown>;
}

interface SessionRef {
  profileId: string;
  visitorId: string | null;
}

/**
 * ensureSession + insertEvent + enqueue of one event. `memo` holds the session
 * look-ups of the current batch: when events of a batch run concurrently
 * (pipelined), two events of one new session must not both create it.
 */
async function ingestOne(repo: HotPathRepo, op: Op, now: number, memo: Map<string, Promise<SessionRef>>): Promise<void> {
  let s = memo.get(op.sessionId);
  if (s === undefined) {
    s = (async () => {
      const row = await repo.findSession(SITE, op.sessionId);
      if (row) return { profileId: row.profile_id, visitorId: row.visitor_id ?? op.visitorId };
      const profileId = newId('prf');
      await repo.insertProfile(profileId, SITE, now);
      await repo.insertSession(SITE, op.sessionId, profileId, op.visitorId, op.url, now);
      return { profileId, visitorId: op.visitorId };
    })();
    memo.set(op.sessionId, s);
  }
  const ref = await s;
  const id = await repo.insertEvent({ siteId: SITE, sessionId: op.sessionId, profileId: ref.profileId, visitorId: ref.visitorId, type: op.type, ts: now, body: op.body, now });
  await repo.insertOutbox(SITE, op.type, outboxPayload(op, `evt_${id}`, ref.profileId, ref.visitorId, now), now);
}

async function sequential(repo: HotPathRepo, ops: Op[], now: number): Promise<void> {
  const memo = new Map<string, Promise<SessionRef>>();
  for (const op of ops) await ingestOne(repo, op, now, memo);
}

async function concurrent(repo: HotPathRepo, ops: Op[], now: number): Promise<void> {
  const memo = new Map<string, Promise<SessionRef>>();
  await Promise.all(ops.map((op) => ingestOne(repo, op, now, memo)));
}

/** The store's own executor (src/store/sql.ts): what ProfilesRepo and ActivityRepo run on. */
class SqlRepo implements HotPathRepo {
  constructor(private readonly x: Sql) {}
  findSession(siteId: string, sessionId: string) {
    return this.x.get<SessionRow>(SQL_TEXT.session, [siteId, sessionId]);
  }
  insertProfile(id: string, siteId: string, now: number) {
    return this.x.run(SQL_TEXT.profile, [id, siteId, 0, '{}', now, now]);
  }
  insertSession(siteId: string, sessionId: string, profileId: string, visitorId: string, url: string, now: number) {
    return this.x.run(SQL_TEXT.sessionInsert, [siteId, sessionId, profileId, visitorId, now, now, IP, UA, url, null, null, null]);
  }
  async insertEvent(r: Parameters<HotPathRepo['insertEvent']>[0]) {
    const row = await this.x.get<{ id: number }>(SQL_TEXT.event, [r.siteId, r.sessionId, r.profileId, r.visitorId, r.type, r.ts, r.body, r.now]);
    return String(row!.id);
  }
  insertOutbox(siteId: string, eventType: string, payload: string, now: number) {
    return this.x.run(SQL_TEXT.outbox, [siteId, eventType, payload, now]);
  }
}

/** node-postgres, named (server-side prepared) statements. */
class PgRawRepo implements HotPathRepo {
  constructor(private readonly c: pg.Client) {}
  async findSession(siteId: string, sessionId: string) {
    return (await this.c.query<SessionRow>({ name: 'hp_session', text: PG_SQL.session, values: [siteId, sessionId] })).rows[0];
  }
  insertProfile(id: string, siteId: string, now: number) {
    return this.c.query({ name: 'hp_profile', text: PG_SQL.profile, values: [id, siteId, 0, '{}', now, now] });
  }
  insertSession(siteId: string, sessionId: string, profileId: string, visitorId: string, url: string, now: number) {
    return this.c.query({
      name: 'hp_session_insert',
      text: PG_SQL.sessionInsert,
      values: [siteId, sessionId, profileId, visitorId, now, now, IP, UA, url, null, null, null],
    });
  }
  async insertEvent(r: Parameters<HotPathRepo['insertEvent']>[0]) {
    const res = await this.c.query<{ id: string }>({
      name: 'hp_event',
      text: PG_SQL.event,
      values: [r.siteId, r.sessionId, r.profileId, r.visitorId, r.type, r.ts, r.body, r.now],
    });
    return String(res.rows[0]!.id);
  }
  insertOutbox(siteId: string, eventType: string, payload: string, now: number) {
    return this.c.query({ name: 'hp_outbox', text: PG_SQL.outbox, values: [siteId, eventType, payload, now] });
  }
}
const PG_SQL = Object.fromEntries(Object.entries(SQL_TEXT).map(([k, v]) => [k, dollar(v)])) as typeof SQL_TEXT;

/** The query builder; `exec` runs a built query (Kysely's own executor, or compile() + a raw client). */
type Built<R> = { execute(): Promise<R[]>; compile(): { sql: string; parameters: readonly unknown[] } };
class KyselyRepo implements HotPathRepo {
  constructor(
    private readonly db: Kysely<KDB>,
    private readonly exec: <R>(q: Built<R>) => Promise<R[]> = (q) => q.execute(),
  ) {}
  async findSession(siteId: string, sessionId: string) {
    const q = this.db
      .selectFrom('sessions')
      .select(['profile_id', 'visitor_id', 'last_seen', 'fbclid', 'gclid'])
      .where('site_id', '=', siteId)
      .where('id', '=', sessionId);
    return (await this.exec(q))[0];
  }
  insertProfile(id: string, siteId: string, now: number) {
    return this.exec(this.db.insertInto('profiles').values({ id, site_id: siteId, known: 0, traits: '{}', created_at: now, updated_at: now }));
  }
  insertSession(siteId: string, sessionId: string, profileId: string, visitorId: string, url: string, now: number) {
    return this.exec(
      this.db.insertInto('sessions').values({
        site_id: siteId,
        id: sessionId,
        profile_id: profileId,
        visitor_id: visitorId,
        first_seen: now,
        last_seen: now,
        ip: IP,
        user_agent: UA,
        landing_url: url,
        fbclid: null,
        fbclid_at: null,
        gclid: null,
      }),
    );
  }
  async insertEvent(r: Parameters<HotPathRepo['insertEvent']>[0]) {
    const q = this.db
      .insertInto('events')
      .values({ site_id: r.siteId, session_id: r.sessionId, profile_id: r.profileId, visitor_id: r.visitorId, type: r.type, ts: r.ts, body: r.body, received_at: r.now })
      .returning('id');
    return String((await this.exec(q))[0]!.id);
  }
  insertOutbox(siteId: string, eventType: string, payload: string, now: number) {
    return this.exec(this.db.insertInto('outbox').values({ site_id: siteId, event_type: eventType, payload, created_at: now }));
  }
}

/** postgres.js (prepared statements and pipelining are its defaults). */
class PgjsRepo implements HotPathRepo {
  constructor(private readonly tx: postgres.Sql | postgres.TransactionSql) {}
  private get q(): postgres.Sql {
    // TransactionSql is callable as a tagged template like Sql; its declared type drops the call signature.
    return this.tx as postgres.Sql;
  }
  async findSession(siteId: string, sessionId: string) {
    const rows = await this.q<SessionRow[]>`SELECT profile_id, visitor_id, last_seen, fbclid, gclid FROM sessions WHERE site_id = ${siteId} AND id = ${sessionId}`;
    return rows[0];
  }
  insertProfile(id: string, siteId: string, now: number) {
    return this.q`INSERT INTO profiles (id, site_id, known, traits, created_at, updated_at) VALUES (${id}, ${siteId}, 0, '{}', ${now}, ${now})`.then((r) => r);
  }
  insertSession(siteId: string, sessionId: string, profileId: string, visitorId: string, url: string, now: number) {
    return this.q`INSERT INTO sessions (site_id, id, profile_id, visitor_id, first_seen, last_seen, ip, user_agent, landing_url, fbclid, fbclid_at, gclid)
      VALUES (${siteId}, ${sessionId}, ${profileId}, ${visitorId}, ${now}, ${now}, ${IP}, ${UA}, ${url}, ${null}, ${null}, ${null})`.then((r) => r);
  }
  async insertEvent(r: Parameters<HotPathRepo['insertEvent']>[0]) {
    const rows = await this.q<{ id: string }[]>`INSERT INTO events (site_id, session_id, profile_id, visitor_id, type, ts, body, received_at)
      VALUES (${r.siteId}, ${r.sessionId}, ${r.profileId}, ${r.visitorId}, ${r.type}, ${r.ts}, ${r.body}, ${r.now}) RETURNING id`;
    return String(rows[0]!.id);
  }
  insertOutbox(siteId: string, eventType: string, payload: string, now: number) {
    return this.q`INSERT INTO outbox (site_id, event_type, payload, created_at) VALUES (${siteId}, ${eventType}, ${payload}, ${now})`.then((r) => r);
  }
}

/** Set-based batch on one pipelined pg client: 2 round trips per batch whatever its size. */
async function pgUnnestBatch(c: pg.Client, ops: Op[], now: number): Promise<void> {
  const begin = c.query('BEGIN');
  const ids = [...new Set(ops.map((o) => o.sessionId))];
  const found = c.query<{ id: string; profile_id: string; visitor_id: string | null }>({
    name: 'u_sessions',
    text: 'SELECT id, profile_id, visitor_id, last_seen, fbclid, gclid FROM sessions WHERE site_id = $1 AND id = ANY($2::text[])',
    values: [SITE, ids],
  });
  const seq = c.query<{ id: string }>({ name: 'u_ids', text: "SELECT nextval('events_id_seq')::text AS id FROM generate_series(1, $1)", values: [ops.length] });
  await begin;
  const known = new Map<string, SessionRef>();
  for (const r of (await found).rows) known.set(r.id, { profileId: r.profile_id, visitorId: r.visitor_id });
  const eventIds = (await seq).rows.map((r) => r.id);
  const newProfiles: string[] = [];
  const newSessions: { id: string; profileId: string; visitorId: string; url: string }[] = [];
  const ev = { id: [] as string[], session: [] as string[], profile: [] as string[], visitor: [] as (string | null)[], type: [] as string[], body: [] as string[] };
  const ob = { type: [] as string[], payload: [] as string[] };
  ops.forEach((op, i) => {
    let ref = known.get(op.sessionId);
    if (ref === undefined) {
      ref = { profileId: newId('prf'), visitorId: op.visitorId };
      known.set(op.sessionId, ref);
      newProfiles.push(ref.profileId);
      newSessions.push({ id: op.sessionId, profileId: ref.profileId, visitorId: op.visitorId, url: op.url });
    }
    const visitorId = ref.visitorId ?? op.visitorId;
    const id = eventIds[i]!;
    ev.id.push(id);
    ev.session.push(op.sessionId);
    ev.profile.push(ref.profileId);
    ev.visitor.push(visitorId);
    ev.type.push(op.type);
    ev.body.push(op.body);
    ob.type.push(op.type);
    ob.payload.push(outboxPayload(op, `evt_${id}`, ref.profileId, visitorId, now));
  });
  const writes: Promise<unknown>[] = [];
  if (newProfiles.length > 0) {
    writes.push(
      c.query({
        name: 'u_profiles',
        text: "INSERT INTO profiles (id, site_id, known, traits, created_at, updated_at) SELECT id, $2, 0, '{}', $3, $3 FROM unnest($1::text[]) AS t(id)",
        values: [newProfiles, SITE, now],
      }),
      c.query({
        name: 'u_sessions_insert',
        text: `INSERT INTO sessions (site_id, id, profile_id, visitor_id, first_seen, last_seen, ip, user_agent, landing_url)
               SELECT $1, id, profile_id, visitor_id, $5, $5, $6, $7, url FROM unnest($2::text[], $3::text[], $4::text[], $8::text[]) AS t(id, profile_id, visitor_id, url)`,
        values: [SITE, newSessions.map((s) => s.id), newSessions.map((s) => s.profileId), newSessions.map((s) => s.visitorId), now, IP, UA, newSessions.map((s) => s.url)],
      }),
    );
  }
  writes.push(
    c.query({
      name: 'u_events',
      text: `INSERT INTO events (id, site_id, session_id, profile_id, visitor_id, type, ts, body, received_at)
             SELECT id, $1, session_id, profile_id, visitor_id, type, $8, body, $8
             FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[]) AS t(id, session_id, profile_id, visitor_id, type, body)`,
      values: [SITE, ev.id, ev.session, ev.profile, ev.visitor, ev.type, ev.body, now],
    }),
    c.query({
      name: 'u_outbox',
      text: 'INSERT INTO outbox (site_id, event_type, payload, created_at) SELECT $1, event_type, payload, $4 FROM unnest($2::text[], $3::text[]) AS t(event_type, payload)',
      values: [SITE, ob.type, ob.payload, now],
    }),
    c.query('COMMIT'),
  );
  await Promise.all(writes);
}

// ---------------------------------------------------------------- variants

interface Runner {
  runBatch(ops: Op[]): Promise<void>;
  /** PostgreSQL backend process of the connection, for its CPU time. */
  backendPid?: number;
  close(): Promise<void>;
}

interface CellCtx {
  batch: number;
  sqliteFile: string;
  pgUrl: string;
  schema: string;
  pgjsMaxPipeline: number;
}

function openSqlite(file: string): BetterSqlite3.Database {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('busy_timeout = 5000');
  db.pragma('cache_size = -65536');
  db.pragma('temp_store = MEMORY');
  return db;
}

function pgClientConfig(ctx: CellCtx, pipeline: boolean): pg.ClientConfig {
  return { connectionString: ctx.pgUrl, options: `-c search_path=${ctx.schema}`, pipeline };
}

async function pgTx(c: pg.Client, body: () => Promise<void>, pipelined: boolean): Promise<void> {
  try {
    if (pipelined) {
      const begin = c.query('BEGIN');
      await Promise.all([begin, body()]);
    } else {
      await c.query('BEGIN');
      await body();
    }
    await c.query('COMMIT');
  } catch (err) {
    await c.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

async function backendPidOf(c: pg.Client): Promise<number> {
  return (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
}

const OPEN: Record<VariantName, (ctx: CellCtx) => Promise<Runner>> = {
  'sqlite-raw': async (ctx) => {
    const db = openSqlite(ctx.sqliteFile);
    const writer = new GroupCommitWriter(db, new Repos(new SqliteSql(db), newRepoShared()), ctx.batch);
    // Exactly ProfilesRepo.ensureSession + ActivityRepo.insertEvent + enqueue, one write operation per
    // event on the writer's executor, in the writer's transaction (the operations of a transaction run
    // one after the other, so each needs no memo of the batch's sessions beyond its own).
    const ingest = (tx: Repos, op: Op) => ingestOne(new SqlRepo(tx.sql), op, Date.now(), new Map());
    return {
      runBatch: async (ops) => {
        await Promise.all(ops.map((op) => writer.run((tx) => ingest(tx, op))));
      },
      close: async () => {
        await writer.close();
        db.close();
      },
    };
  },
  'sqlite-kysely': async (ctx) => {
    const db = new Kysely<KDB>({ dialect: new SqliteDialect({ database: openSqlite(ctx.sqliteFile) }) });
    return {
      runBatch: (ops) => db.transaction().execute((trx) => sequential(new KyselyRepo(trx), ops, Date.now())),
      close: () => db.destroy(),
    };
  },
  'pg-seq': async (ctx) => {
    const c = new pg.Client(pgClientConfig(ctx, false));
    await c.connect();
    const repo = new PgRawRepo(c);
    return {
      runBatch: (ops) => pgTx(c, () => sequential(repo, ops, Date.now()), false),
      backendPid: await backendPidOf(c),
      close: () => c.end(),
    };
  },
  'pg-pipeline': async (ctx) => {
    const c = new pg.Client(pgClientConfig(ctx, true));
    await c.connect();
    const repo = new PgRawRepo(c);
    return {
      runBatch: (ops) => pgTx(c, () => concurrent(repo, ops, Date.now()), true),
      backendPid: await backendPidOf(c),
      close: () => c.end(),
    };
  },
  'pg-unnest': async (ctx) => {
    const c = new pg.Client(pgClientConfig(ctx, true));
    await c.connect();
    return {
      runBatch: async (ops) => {
        try {
          await pgUnnestBatch(c, ops, Date.now());
        } catch (err) {
          await c.query('ROLLBACK').catch(() => undefined);
          throw err;
        }
      },
      backendPid: await backendPidOf(c),
      close: () => c.end(),
    };
  },
  'pg-kysely': async (ctx) => {
    const pool = new pg.Pool({ ...pgClientConfig(ctx, false), max: 1, idleTimeoutMillis: 0 });
    const db = new Kysely<KDB>({ dialect: new PostgresDialect({ pool }) });
    const pid = (await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(db)).rows[0]!.pid;
    return {
      runBatch: (ops) => db.transaction().execute((trx) => sequential(new KyselyRepo(trx), ops, Date.now())),
      backendPid: pid,
      close: () => db.destroy(),
    };
  },
  'pg-kysely-pipe': async (ctx) => {
    const c = new pg.Client(pgClientConfig(ctx, true));
    await c.connect();
    // Kysely only builds the SQL; the pipelined client runs it.
    const compiler = new Kysely<KDB>({
      dialect: {
        createAdapter: () => new PostgresAdapter(),
        createDriver: () => new DummyDriver(),
        createIntrospector: (d) => new PostgresIntrospector(d),
        createQueryCompiler: () => new PostgresQueryCompiler(),
      },
    });
    const repo = new KyselyRepo(compiler, async <R>(q: Built<R>) => {
      const compiled = q.compile();
      return (await c.query(compiled.sql, [...compiled.parameters])).rows as R[];
    });
    return {
      runBatch: (ops) => pgTx(c, () => concurrent(repo, ops, Date.now()), true),
      backendPid: await backendPidOf(c),
      close: async () => {
        await c.end();
        await compiler.destroy();
      },
    };
  },
  pgjs: async (ctx) => {
    // max_pipeline (default 100) is read by postgres.js (src/index.js) but neither documented nor typed.
    const options = { max: 1, prepare: true, max_pipeline: ctx.pgjsMaxPipeline, idle_timeout: 0, connection: { search_path: ctx.schema }, onnotice: () => undefined };
    const db = postgres(ctx.pgUrl, options);
    const pid = (await db<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`)[0]!.pid;
    return {
      runBatch: async (ops) => {
        await db.begin((tx) => concurrent(new PgjsRepo(tx), ops, Date.now()));
      },
      backendPid: pid,
      close: () => db.end({ timeout: 5 }),
    };
  },
};

// ---------------------------------------------------------------- seeding and checks

function seedSqlite(file: string, sessions: number): void {
  const db = openSqlite(file);
  try {
    db.exec(SQLITE_DDL);
    const now = Date.now();
    const profile = db.prepare(SQL_TEXT.profile);
    const session = db.prepare(SQL_TEXT.sessionInsert);
    db.transaction(() => {
      for (let k = 0; k < sessions; k++) {
        const id = newId('prf');
        profile.run(id, SITE, 0, '{}', now, now);
        session.run(SITE, sessionIdOf(k), id, visitorIdOf(k), now, now, IP, UA, 'https://shop.example.com/', null, null, null);
      }
    })();
    db.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    db.close();
  }
}

async function seedPg(admin: pg.Client, sessions: number): Promise<void> {
  await admin.query(PG_DDL);
  const now = Date.now();
  const ids: string[] = [];
  const sids: string[] = [];
  const vids: string[] = [];
  for (let k = 0; k < sessions; k++) {
    ids.push(newId('prf'));
    sids.push(sessionIdOf(k));
    vids.push(visitorIdOf(k));
  }
  await admin.query('BEGIN');
  await admin.query("INSERT INTO profiles (id, site_id, known, traits, created_at, updated_at) SELECT id, $2, 0, '{}', $3, $3 FROM unnest($1::text[]) AS t(id)", [ids, SITE, now]);
  await admin.query(
    `INSERT INTO sessions (site_id, id, profile_id, visitor_id, first_seen, last_seen, ip, user_agent, landing_url)
     SELECT $1, id, profile_id, visitor_id, $5, $5, $6, $7, 'https://shop.example.com/' FROM unnest($2::text[], $3::text[], $4::text[]) AS t(id, profile_id, visitor_id)`,
    [SITE, sids, ids, vids, now, IP, UA],
  );
  await admin.query('COMMIT');
  await admin.query('ANALYZE profiles, sessions');
  await admin.query('CHECKPOINT').catch(() => undefined);
}

interface Stored {
  events: number;
  outbox: number;
  sessions: number;
  profiles: number;
  /** outbox rows whose event_id names no event of the same session. */
  orphanOutbox: number;
  /** events whose profile_id is not their session's. */
  wrongProfile: number;
}

const CHECK_SQL = {
  sqlite: `SELECT (SELECT count(*) FROM events) AS events, (SELECT count(*) FROM outbox) AS outbox,
      (SELECT count(*) FROM sessions) AS sessions, (SELECT count(*) FROM profiles) AS profiles,
      (SELECT count(*) FROM outbox o WHERE NOT EXISTS (SELECT 1 FROM events e
          WHERE e.id = CAST(substr(json_extract(o.payload, '$.event_id'), 5) AS INTEGER)
          AND 'evt_' || e.id = json_extract(o.payload, '$.event_id') AND e.session_id = json_extract(o.payload, '$.session_id'))) AS orphanOutbox,
      (SELECT count(*) FROM events e JOIN sessions s ON s.site_id = e.site_id AND s.id = e.session_id WHERE s.profile_id <> e.profile_id) AS wrongProfile`,
  pg: `SELECT (SELECT count(*) FROM events)::int AS events, (SELECT count(*) FROM outbox)::int AS outbox,
      (SELECT count(*) FROM sessions)::int AS sessions, (SELECT count(*) FROM profiles)::int AS profiles,
      (SELECT count(*) FROM outbox o WHERE NOT EXISTS (SELECT 1 FROM events e
          WHERE e.id = substr(o.payload::json->>'event_id', 5)::bigint
          AND 'evt_' || e.id = o.payload::json->>'event_id' AND e.session_id = o.payload::json->>'session_id'))::int AS "orphanOutbox",
      (SELECT count(*) FROM events e JOIN sessions s ON s.site_id = e.site_id AND s.id = e.session_id WHERE s.profile_id <> e.profile_id)::int AS "wrongProfile"`,
};

function checkStored(s: Stored, acked: number, expectedSessions: number): string | null {
  const problems: string[] = [];
  if (s.events !== acked) problems.push(`events ${s.events} != acknowledged ${acked}`);
  if (s.outbox !== acked) problems.push(`outbox ${s.outbox} != acknowledged ${acked}`);
  if (s.sessions !== expectedSessions) problems.push(`sessions ${s.sessions} != expected ${expectedSessions}`);
  if (s.profiles !== expectedSessions) problems.push(`profiles ${s.profiles} != expected ${expectedSessions}`);
  if (s.orphanOutbox !== 0) problems.push(`${s.orphanOutbox} outbox row(s) point at no event of their session`);
  if (s.wrongProfile !== 0) problems.push(`${s.wrongProfile} event(s) carry another profile than their session's`);
  return problems.length ? problems.join('; ') : null;
}

// ---------------------------------------------------------------- measurement

const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU time (µs) of a local process from /proc, or null when unreadable (remote server, other OS). */
function procCpuUs(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) / CLK_TCK) * 1e6;
  } catch {
    return null;
  }
}

interface Cell {
  variant: VariantName;
  batch: number;
  events: number;
  seconds: number;
  eventsPerSec: number;
  cpuUsPerEvent: number;
  pgCpuUsPerEvent: number | null;
  commit: HistogramSummary;
  acked: number;
  problem: string | null;
  stoppedBy: 'events' | 'time' | 'error' | 'interrupt';
}

let interrupted = false;

async function runCell(variant: VariantName, ctx: CellCtx, ops: Op[], o: Options, countStored: () => Promise<Stored>): Promise<Cell> {
  const runner = await OPEN[variant](ctx);
  const hist = new Histogram();
  let next = 0;
  let acked = 0;
  let newAcked = 0;
  let problem: string | null = null;
  let stoppedBy: Cell['stoppedBy'] = 'events';
  const batchOf = (limit: number) => {
    const n = Math.min(ctx.batch, limit - next);
    const b = ops.slice(next, next + n);
    next += n;
    return b;
  };
  let measured = 0;
  const run = async (b: Op[], record: boolean): Promise<boolean> => {
    const t0 = performance.now();
    try {
      await runner.runBatch(b);
    } catch (err) {
      problem = `batch failed: ${(err as Error).message}`;
      return false;
    }
    if (record) {
      hist.record((performance.now() - t0) * 1000);
      measured += b.length;
    }
    acked += b.length;
    for (const op of b) if (op.isNew) newAcked++;
    return true;
  };
  let seconds = 0;
  let cpuUs = 0;
  let pgCpu: number | null = null;
  try {
    // Warm-up: statement caches, JIT, connection; bounded by --warmup events and 1 s.
    const warmEnd = Math.min(o.warmup, ops.length);
    const w0 = performance.now();
    while (next < warmEnd && performance.now() - w0 < 1000 && !interrupted) {
      if (!(await run(batchOf(warmEnd), false))) break;
    }
    const limit = Math.min(ops.length, next + o.events);
    const cpu0 = process.cpuUsage();
    const pg0 = procCpuUs(runner.backendPid);
    const t0 = performance.now();
    while (problem === null) {
      if (interrupted) {
        stoppedBy = 'interrupt';
        break;
      }
      if (next >= limit) break;
      if (performance.now() - t0 >= o.seconds * 1000) {
        stoppedBy = 'time';
        break;
      }
      if (!(await run(batchOf(limit), true))) break;
    }
    seconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const pg1 = procCpuUs(runner.backendPid);
    cpuUs = cpu.user + cpu.system;
    if (pg0 !== null && pg1 !== null) pgCpu = pg1 - pg0;
  } finally {
    await runner.close();
  }
  if (problem !== null) stoppedBy = 'error';
  else {
    const stored = await countStored();
    problem = checkStored(stored, acked, o.sessions + newAcked);
  }
  return {
    variant,
    batch: ctx.batch,
    events: measured,
    seconds,
    eventsPerSec: seconds > 0 ? measured / seconds : 0,
    cpuUsPerEvent: measured > 0 ? cpuUs / measured : 0,
    pgCpuUsPerEvent: pgCpu !== null && measured > 0 ? pgCpu / measured : null,
    commit: hist.summary(),
    acked,
    problem,
    stoppedBy,
  };
}

const fmt = {
  int: (n: number) => Math.round(n).toLocaleString('en-US'),
  ms: (us: number) => (us / 1000).toFixed(us < 10_000 ? 2 : 1),
  f1: (n: number) => n.toFixed(1),
};

function table(rows: string[][], right: boolean[]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((c, i) => (right[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n');
}

async function main(): Promise<number> {
  let opts: Options;
  try {
    opts = parse(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`bench:storage: ${(err as Error).message}\n${HELP}\n`);
    return 2;
  }
  if (opts.help) {
    process.stdout.write(`${HELP}\n`);
    return 0;
  }
  const log = (line: string) => process.stdout.write(`${line}\n`);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(sig, () => {
      process.stderr.write(`\nbench:storage: ${sig}, stopping after the current batch and cleaning up\n`);
      interrupted = true;
    });
  }

  const tmpRoot = mkdtempSync(path.join(os.tmpdir(), 'svc-bench-storage-'));
  const schema = `bench_${randomBytes(6).toString('hex')}`;
  let admin: pg.Client | null = null;
  let schemaCreated = false;
  const notes: string[] = [];
  const cells: Cell[] = [];
  try {
    let variants = opts.only;
    if (variants.some((v) => v.startsWith('pg'))) {
      const c = new pg.Client({ connectionString: opts.pgUrl, options: `-c search_path=${schema}`, connectionTimeoutMillis: 5000 });
      try {
        await c.connect();
        admin = c;
      } catch (err) {
        notes.push(`PostgreSQL at ${opts.pgUrl} unreachable (${(err as Error).message}): PostgreSQL variants skipped`);
        variants = variants.filter((v) => !v.startsWith('pg'));
        await c.end().catch(() => undefined);
      }
    }
    if (admin) {
      await admin.query(`CREATE SCHEMA ${schema}`);
      schemaCreated = true;
      const s = (await admin.query<{ v: string; f: string; sc: string; m: string }>(
        "SELECT version() AS v, current_setting('fsync') AS f, current_setting('synchronous_commit') AS sc, current_setting('wal_sync_method') AS m",
      )).rows[0]!;
      log(`PostgreSQL: ${s.v.split(' on ')[0]}; fsync=${s.f} synchronous_commit=${s.sc} wal_sync_method=${s.m}; schema ${schema}`);
      if (s.f !== 'on' || s.sc === 'off') notes.push(`PostgreSQL commits are NOT durable here (fsync=${s.f}, synchronous_commit=${s.sc}): its figures are flattered`);
    }
    log(`SQLite: better-sqlite3 (SQLite ${new Database(':memory:').prepare('SELECT sqlite_version() AS v').pluck().get() as string}), WAL, synchronous=FULL, files in ${tmpRoot}`);
    log(`node ${process.version}, ${os.cpus().length} CPU(s); ${fmt.int(opts.events)} events or ${opts.seconds} s per cell after ${fmt.int(opts.warmup)} warm-up events; ${fmt.int(opts.sessions)} seeded sessions, ${opts.newPct}% new`);

    const ops = buildOps(opts.warmup + opts.events, opts.sessions, opts.newPct);
    const avgBody = Math.round(ops.reduce((n, op) => n + op.body.length, 0) / ops.length);
    log(`event body ~${avgBody} bytes\n`);

    for (const batch of opts.batches) {
      for (const variant of variants) {
        if (interrupted) break;
        const ctx: CellCtx = { batch, sqliteFile: path.join(tmpRoot, `${variant}-${batch}`, 'bench.db'), pgUrl: opts.pgUrl, schema, pgjsMaxPipeline: opts.pgjsMaxPipeline };
        let countStored: () => Promise<Stored>;
        if (variant.startsWith('sqlite')) {
          mkdirSync(path.dirname(ctx.sqliteFile), { recursive: true });
          seedSqlite(ctx.sqliteFile, opts.sessions);
          countStored = async () => {
            const db = new Database(ctx.sqliteFile, { readonly: true });
            try {
              return db.prepare(CHECK_SQL.sqlite).get() as Stored;
            } finally {
              db.close();
            }
          };
        } else {
          const a = admin!;
          await seedPg(a, opts.sessions);
          countStored = async () => (await a.query<Stored>(CHECK_SQL.pg)).rows[0]!;
        }
        const cell = await runCell(variant, ctx, ops, opts, countStored);
        cells.push(cell);
        if (variant.startsWith('sqlite')) removeTree(path.dirname(ctx.sqliteFile));
        log(
          `${variant.padEnd(15)} B=${String(batch).padStart(4)}  ${fmt.int(cell.eventsPerSec).padStart(7)} ev/s  ${fmt.f1(cell.cpuUsPerEvent).padStart(6)} µs CPU/ev  ` +
            `p50 ${fmt.ms(cell.commit.p50Us)} ms p99 ${fmt.ms(cell.commit.p99Us)} ms  (${fmt.int(cell.events)} events in ${cell.seconds.toFixed(1)} s, stopped by ${cell.stoppedBy})` +
            (cell.problem ? `  PROBLEM: ${cell.problem}` : ''),
        );
      }
    }
  } finally {
    if (admin) {
      if (schemaCreated) await admin.query(`DROP SCHEMA ${schema} CASCADE`).catch((err: Error) => notes.push(`could not drop schema ${schema}: ${err.message}`));
      await admin.end().catch(() => undefined);
    }
    removeTree(tmpRoot);
  }

  // --- summary ---
  const base = new Map(cells.filter((c) => c.variant === BASELINE && c.problem === null).map((c) => [c.batch, c]));
  const rows: string[][] = [['variant', 'B', 'events', 'ev/s', 'x base', 'cpu µs/ev', 'pg µs/ev', 'p50 ms', 'p99 ms', 'stored']];
  for (const batch of opts.batches) {
    for (const c of cells.filter((x) => x.batch === batch)) {
      const b = base.get(batch);
      rows.push([
        c.variant,
        String(c.batch),
        fmt.int(c.events),
        fmt.int(c.eventsPerSec),
        b && b.eventsPerSec > 0 ? (c.eventsPerSec / b.eventsPerSec).toFixed(2) : '-',
        fmt.f1(c.cpuUsPerEvent),
        c.pgCpuUsPerEvent === null ? '-' : fmt.f1(c.pgCpuUsPerEvent),
        fmt.ms(c.commit.p50Us),
        fmt.ms(c.commit.p99Us),
        c.problem === null ? 'ok' : 'WRONG',
      ]);
    }
  }
  log('');
  log(table(rows, [false, true, true, true, true, true, true, true, true, false]));
  log('\nx base: events/s relative to sqlite-raw at the same B. cpu: this process (user+sys) per event; pg: the PostgreSQL backend of the connection per event.');
  for (const n of notes) log(`note: ${n}`);
  const wrong = cells.filter((c) => c.problem !== null);
  if (wrong.length) {
    log(`\n${wrong.length} problem(s):`);
    for (const c of wrong) log(`  ${c.variant} B=${c.batch}: ${c.problem}`);
    return 1;
  }
  return interrupted ? 130 : 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`bench:storage: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);

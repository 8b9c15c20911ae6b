import { privateDir } from '../private-files.js';
import pg from 'pg';
import { newRepoShared, Repos, type RepoShared, type WriteOp, type WriteOptions } from '../repos.js';
import { Store, type WriteRunner } from '../store.js';
import { PG_MIGRATIONS } from './migrations.js';
import type { Migration } from '../migrations.js';
import { compatibleFromAfter, schemaProblem, type AppliedMigration } from '../schema-compat.js';
import { PgSql, PG_TYPES } from './sql.js';
import { BatchPgSql } from './batch.js';
import { PgPartitions } from './partitions.js';
import { GroupCommitListeners } from '../group-commits.js';
import type { GroupCommitInfo } from '../observe.js';

export interface PgSettings {
  /** postgres://user:pass@host:port/db[?sslmode=require][&schema=name] */
  url: string;
  /** Connections in the pool (default 10). */
  poolSize?: number | undefined;
  /** Statement timeout in ms (default 30,000; 0 = none). */
  statementTimeoutMs?: number | undefined;
  /** How long to wait for a pool connection before failing (default 5,000 ms). */
  connectTimeoutMs?: number | undefined;
}

/** Wakes every instance's workers: NOTIFY on this channel after commits that wrote outbox rows or jobs. */
export const WORK_CHANNEL = 'svc_work';
/** Segment definitions changed (SegmentsRepo notifies in the changing transaction): drop cached segments. */
export const SEGMENTS_CHANNEL = 'svc_segments';
/** A site's web-experience configuration changed (triggers of PostgreSQL migration 8 notify): drop cached decision snapshots. */
export const WEB_CHANNEL = 'svc_web';

/** The advisory-lock key under which migrations run (instances starting together apply them once). */
export const MIGRATE_LOCK = 0x5356_4301;

/**
 * Client settings from an svc database URL. `schema` (ours, not libpq's) puts every
 * table in that schema (created if missing): tests and side-by-side installs use it.
 */
export function pgClientConfig(s: PgSettings): pg.PoolConfig & { schema: string | null } {
  let schema: string | null = null;
  let url = s.url;
  try {
    const u = new URL(s.url);
    const v = u.searchParams.get('schema');
    if (v !== null) {
      if (!/^[a-z_][a-z0-9_]{0,62}$/i.test(v)) throw new Error(`database URL: schema ${JSON.stringify(v)} is not a plain identifier`);
      schema = v;
      u.searchParams.delete('schema');
      url = u.toString();
    }
  } catch (err) {
    if (err instanceof TypeError) throw new Error('database URL: not a valid postgres:// URL');
    throw err;
  }
  const timeout = s.statementTimeoutMs ?? 30_000;
  return {
    connectionString: url,
    max: s.poolSize ?? 10,
    connectionTimeoutMillis: s.connectTimeoutMs ?? 5_000,
    idleTimeoutMillis: 30_000,
    ...(timeout > 0 ? { statement_timeout: timeout } : {}),
    ...(schema !== null ? { options: `-c search_path=${schema}` } : {}),
    types: PG_TYPES,
    application_name: 'svc',
    schema,
  };
}

/** SQLSTATEs after which a write operation is run again from the start, in a new transaction. */
const RETRYABLE = new Set([
  '40001', // serialization_failure
  '40P01', // deadlock_detected
  '23505', // unique_violation: a concurrent writer created the row (identity stitching re-reads the owner)
]);
const MAX_ATTEMPTS = 4;
/** SQLSTATE in_failed_sql_transaction: the code `commit` gives a COMMIT that rolled back. */
const ROLLED_BACK_AT_COMMIT = '25P02';

/**
 * COMMIT of a transaction in which a statement failed ends it with a rollback,
 * and PostgreSQL reports that as success (command tag ROLLBACK, no error). An
 * operation that caught a failed statement's error and returned would otherwise
 * be acknowledged, and its whole group with it, with nothing stored.
 */
async function commit(client: pg.PoolClient): Promise<void> {
  const r = await client.query('COMMIT');
  if (r.command !== 'COMMIT') {
    throw Object.assign(new Error('the transaction was rolled back at COMMIT: a statement in it failed and its error was caught'), {
      code: ROLLED_BACK_AT_COMMIT,
    });
  }
}

interface QueuedOp {
  fn: WriteOp<unknown>;
  key: string | undefined;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

/** The most operations one group transaction carries. */
const MAX_GROUP = 256;

/**
 * Write operations on PostgreSQL, with group commit. Operations queue; up to
 * `lanes` group transactions run at once, each on one pooled connection, and
 * each takes every operation queued when it starts (up to MAX_GROUP), running
 * them one after another inside a single `BEGIN … COMMIT`. Under light load a
 * group is one operation (no added latency); under load the groups grow, so the
 * transaction boundaries, WAL flushes and worker wake-ups are paid per group,
 * not per request. Every promise settles only after the commit that holds its
 * writes: an acknowledgement means durably stored (`synchronous_commit` on).
 *
 * Set-based: when a group holds keyed operations (WriteOptions), they run
 * concurrently instead, same-key ones in submission order, their statements
 * sent one per SQL text and wave by BatchPgSql (pg/batch.ts), then the unkeyed
 * ones in turn; if anything in that pass fails, it is rolled back and the group
 * runs again in turn as described next.
 *
 * Optimistic, like SQLite's writer: a group runs without savepoints. When
 * operation k fails (bad input found late, a lost race with another instance:
 * unique violation, deadlock, serialization failure, WriteConflict), the group
 * is rolled back; the operations before k run again as a group, operation k
 * runs alone in its own transaction (a lost race is retried from the start and
 * then sees the winner's rows; a real error reaches only its own caller), and
 * the operations after k go back to the head of the queue. Operations of one
 * group therefore commit in the order they were submitted.
 */
class PgWriteRunner implements WriteRunner {
  readonly counters = { batches: 0, ops: 0, stalled: 0, regrouped: 0 };
  readonly groupCommits = new GroupCommitListeners();
  private readonly queue: QueuedOp[] = [];
  private activeLanes = 0;
  private inFlight = 0;
  private closed = false;
  private readonly listeners: (() => void)[] = [];
  private notifyTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly pool: pg.Pool,
    private readonly shared: RepoShared,
    private readonly lanes: number,
  ) {}

  get pending(): number {
    return this.inFlight;
  }

  onCommit(fn: () => void): void {
    this.listeners.push(fn);
  }

  run<T>(fn: WriteOp<T>, opts?: WriteOptions): Promise<T> {
    if (this.closed) return Promise.reject(new Error('store is closed'));
    this.inFlight++;
    return new Promise<T>((resolve, reject) => {
      this.queue.push({
        fn,
        key: opts?.key,
        resolve: (v) => {
          this.inFlight--;
          resolve(v as T);
        },
        reject: (e) => {
          this.inFlight--;
          reject(e);
        },
      });
      this.pump();
    });
  }

  private pump(): void {
    while (this.activeLanes < this.lanes && this.queue.length > 0) {
      const group = this.queue.splice(0, MAX_GROUP);
      this.activeLanes++;
      void this.runGroup(group).finally(() => {
        this.activeLanes--;
        this.pump();
      });
    }
  }

  /** A pooled connection for one transaction, with an 'error' listener (a connection that breaks between statements reports there). */
  private async connect(): Promise<{ client: pg.PoolClient; release: () => void; broken: () => boolean }> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    const onError = (err: Error) => (broken = err);
    client.on('error', onError);
    return {
      client,
      broken: () => broken !== undefined,
      release: () => {
        client.off('error', onError);
        client.release(broken);
      },
    };
  }

  private async runGroup(group: QueuedOp[]): Promise<void> {
    if (group.length === 1) {
      const op = group[0]!;
      await this.runAlone(op.fn).then(op.resolve, op.reject);
      return;
    }
    let keyed = 0;
    for (const op of group) if (op.key !== undefined) keyed++;
    if (keyed >= 2) {
      const done = await this.runConcurrent(group);
      if (done) return;
      this.counters.regrouped++;
      await this.runSequential(group, 'rerun');
      return;
    }
    await this.runSequential(group, 'in_turn');
  }

  /**
   * The set-based pass: the group's keyed operations run concurrently (one
   * chain per key), their statements batched by BatchPgSql, then the others
   * one after another, all in one transaction. True when the group committed
   * (or failed for good: every caller has heard); false when it was rolled
   * back (an operation failed, or a lost race at COMMIT), and the group is to
   * run again the sequential way, which finds the failing operation and keeps
   * the other operations' writes.
   */
  private async runConcurrent(group: QueuedOp[]): Promise<boolean> {
    let conn: Awaited<ReturnType<PgWriteRunner['connect']>>;
    try {
      conn = await this.connect();
    } catch (err) {
      for (const op of group) op.reject(err);
      return true;
    }
    const before = this.enqueuedCount();
    const trips = tripCounter(conn.client);
    const values: unknown[] = new Array(group.length);
    let failed = false;
    try {
      await conn.client.query('BEGIN');
      const sql = new BatchPgSql(trips.client, new PgSql(trips.client));
      const tx = new Repos(sql, this.shared);
      const chains = new Map<string, Promise<unknown>>();
      const running: Promise<unknown>[] = [];
      group.forEach((op, i) => {
        if (op.key === undefined) return;
        const prev = chains.get(op.key) ?? Promise.resolve();
        const p = prev.then(async () => {
          values[i] = await op.fn(tx);
        });
        // A failure fails the pass; the chain goes on so that every operation settles before the rollback.
        chains.set(op.key, p.catch(() => undefined));
        running.push(p);
      });
      for (const r of await Promise.allSettled(running)) if (r.status === 'rejected') failed = true;
      if (!failed) {
        for (let i = 0; i < group.length; i++) {
          if (group[i]!.key !== undefined) continue;
          try {
            values[i] = await group[i]!.fn(tx);
          } catch {
            failed = true;
            break;
          }
        }
      }
      if (failed) {
        if (!conn.broken()) await conn.client.query('ROLLBACK');
      } else {
        await commit(conn.client);
      }
    } catch (err) {
      if (!conn.broken()) await conn.client.query('ROLLBACK').catch(() => undefined);
      conn.release();
      if (isRetryable(err) || (err as { code?: unknown }).code === ROLLED_BACK_AT_COMMIT) return false;
      for (const op of group) op.reject(err);
      return true;
    }
    conn.release();
    if (failed) return false;
    this.committed(group.length, before, trips, 'set_based');
    for (let i = 0; i < group.length; i++) group[i]!.resolve(values[i]);
    return true;
  }

  /** Runs the group's operations one after another in one transaction (see the class comment). */
  private async runSequential(group: QueuedOp[], mode: 'in_turn' | 'rerun'): Promise<void> {
    if (group.length === 1) {
      const op = group[0]!;
      await this.runAlone(op.fn, mode).then(op.resolve, op.reject);
      return;
    }
    let conn: Awaited<ReturnType<PgWriteRunner['connect']>>;
    try {
      conn = await this.connect();
    } catch (err) {
      for (const op of group) op.reject(err);
      return;
    }
    const before = this.enqueuedCount();
    const values: unknown[] = new Array(group.length);
    let failedAt = -1;
    const trips = tripCounter(conn.client);
    try {
      await conn.client.query('BEGIN');
      const tx = new Repos(new PgSql(trips.client), this.shared);
      for (let i = 0; i < group.length; i++) {
        try {
          values[i] = await group[i]!.fn(tx);
        } catch {
          failedAt = i;
          break;
        }
      }
      if (failedAt >= 0) {
        if (!conn.broken()) await conn.client.query('ROLLBACK');
      } else {
        await commit(conn.client);
      }
    } catch (err) {
      if (!conn.broken()) await conn.client.query('ROLLBACK').catch(() => undefined);
      conn.release();
      // BEGIN or COMMIT itself failed. A lost race at commit (serialization), or a COMMIT that rolled
      // back (an operation swallowed a failed statement's error; which one is unknown), is worth re-running
      // one by one; a connection that died at COMMIT leaves the outcome unknown, so the callers hear it.
      if (isRetryable(err) || (err as { code?: unknown }).code === ROLLED_BACK_AT_COMMIT) {
        this.counters.regrouped++;
        for (const op of group) await this.runAlone(op.fn, mode).then(op.resolve, op.reject);
      } else for (const op of group) op.reject(err);
      return;
    }
    conn.release();
    if (failedAt >= 0) {
      this.counters.regrouped++;
      if (failedAt > 0) await this.runSequential(group.slice(0, failedAt), mode);
      const failed = group[failedAt]!;
      await this.runAlone(failed.fn, mode).then(failed.resolve, failed.reject);
      this.queue.unshift(...group.slice(failedAt + 1));
      return;
    }
    this.committed(group.length, before, trips, mode);
    for (let i = 0; i < group.length; i++) group[i]!.resolve(values[i]);
  }

  /** One operation in its own transaction, run again from the start after a lost race. */
  private async runAlone<T>(fn: WriteOp<T>, mode: 'in_turn' | 'rerun' = 'in_turn'): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const conn = await this.connect();
      const before = this.enqueuedCount();
      const trips = tripCounter(conn.client);
      let value: T;
      try {
        await conn.client.query('BEGIN');
        value = await fn(new Repos(new PgSql(trips.client), this.shared));
        await commit(conn.client);
      } catch (err) {
        if (!conn.broken()) await conn.client.query('ROLLBACK').catch(() => undefined);
        conn.release();
        if (attempt < MAX_ATTEMPTS && isRetryable(err)) continue;
        throw err;
      }
      conn.release();
      this.committed(1, before, trips, mode);
      return value;
    }
  }

  private enqueuedCount(): number {
    const e = this.shared.enqueued;
    return e.outbox + e.adJobs + e.fires + e.deliveries;
  }

  private committed(ops: number, enqueuedBefore: number, trips: TripCount, mode: NonNullable<GroupCommitInfo['mode']>): void {
    this.counters.batches++;
    this.counters.ops += ops;
    // BEGIN and COMMIT besides the operations' own statements.
    this.groupCommits.emit({ backend: 'pg', operations: ops, roundTrips: trips.count + 2, durationMs: performance.now() - trips.started, mode });
    for (const l of this.listeners) l();
    if (this.enqueuedCount() !== enqueuedBefore) this.notifyOthers();
  }

  /** One NOTIFY per few milliseconds at most, outside the data transactions (a NOTIFY in each would serialize commits). */
  private notifyOthers(): void {
    if (this.notifyTimer !== null) return;
    this.notifyTimer = setTimeout(() => void this.notifyNow(), 2);
    this.notifyTimer.unref();
  }

  private notifyNow(): Promise<void> {
    if (this.notifyTimer !== null) clearTimeout(this.notifyTimer);
    this.notifyTimer = null;
    return this.pool.query(`NOTIFY ${WORK_CHANNEL}`).then(
      () => undefined,
      () => undefined,
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    while (this.inFlight > 0) await new Promise((r) => setTimeout(r, 2));
    // A short-lived process (a CLI replay) announces its work before the pool closes.
    if (this.notifyTimer !== null) await this.notifyNow();
  }
}

interface TripCount {
  client: pg.PoolClient;
  /** Statements the operations sent. */
  readonly count: number;
  /** performance.now() when the transaction began. */
  readonly started: number;
}

/** Counts the statements sent through `client` (the round trips of one group, for /metrics). */
function tripCounter(client: pg.PoolClient): TripCount {
  const t = {
    count: 0,
    started: performance.now(),
    client: new Proxy(client, {
      get(target, prop, receiver) {
        if (prop === 'query') {
          return (...args: unknown[]) => {
            t.count++;
            return (target.query as (...a: unknown[]) => unknown).apply(target, args);
          };
        }
        return Reflect.get(target, prop, receiver) as unknown;
      },
    }),
  };
  return t;
}

function isRetryable(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && RETRYABLE.has(code);
}

/**
 * Group transactions in flight at once: two, so that one group gathers and runs
 * while the other waits for its commit, leaving pool connections for reads (the
 * API, the workers). More lanes make smaller groups, and a group's round trips
 * are a fixed number whatever its size (pg/batch.ts), so CPU per event grows with
 * the lanes: bench:ingest at 64 connections, one host, ran 0.30x of SQLite with
 * four lanes (303 µs svc + 196 µs PostgreSQL per event), 0.70x with two
 * (212 + 128 µs) and 0.52x with one (188 + 110 µs, commits serialized).
 */
export function writeLanes(poolSize: number): number {
  return Math.max(1, Math.min(2, poolSize - 2));
}

/**
 * Applies the PostgreSQL migrations not yet applied, under an advisory lock; returns the versions it ran.
 * A database migrated by a newer svc is accepted when what this svc lacks is expand-only (rolling
 * upgrades; see schema-compat.ts). `list` is for tests that play an earlier release.
 */
export async function migratePg(pool: pg.Pool, schema: string | null, list: readonly Migration[] = PG_MIGRATIONS): Promise<number[]> {
  const client = await pool.connect();
  const onError = () => undefined; // reported by the failing query instead
  client.on('error', onError);
  try {
    // No statement timeout here: waiting for another instance's migrations, or building an index on a big
    // table, can rightly take longer than the timeout meant for requests (RESET restores it for the pool).
    await client.query('SET statement_timeout = 0');
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATE_LOCK]);
    try {
      if (schema !== null) await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
      await client.query(
        'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL, compatible_from INTEGER)',
      );
      await client.query('ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS compatible_from INTEGER');
      const rows = (await client.query<AppliedMigration>('SELECT version, compatible_from FROM schema_migrations ORDER BY version')).rows;
      const applied = new Set(rows.map((r) => r.version));
      const known = Math.max(...list.map((m) => m.version));
      const newest = Math.max(0, ...applied);
      if (newest > known) {
        const problem = schemaProblem(known, rows);
        if (problem !== null) throw new Error(problem);
        return [];
      }
      const ran: number[] = [];
      for (const m of list) {
        if (applied.has(m.version)) continue;
        await client.query('BEGIN');
        try {
          await client.query(m.sql);
          const previous = (await client.query<AppliedMigration>('SELECT version, compatible_from FROM schema_migrations WHERE version = $1', [m.version - 1])).rows[0];
          await client.query('INSERT INTO schema_migrations (version, name, applied_at, compatible_from) VALUES ($1, $2, $3, $4)', [
            m.version,
            m.name,
            Date.now(),
            compatibleFromAfter(m, previous),
          ]);
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK').catch(() => undefined);
          throw err;
        }
        ran.push(m.version);
      }
      return ran;
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATE_LOCK]).catch(() => undefined);
    }
  } finally {
    await client.query('RESET statement_timeout').catch(() => undefined);
    client.off('error', onError);
    client.release();
  }
}

/** The newest migration applied to a PostgreSQL database (0 for none). */
export async function pgSchemaVersion(pool: pg.Pool): Promise<number> {
  const r = await pool.query<{ v: number | null }>(
    "SELECT CASE WHEN to_regclass('schema_migrations') IS NULL THEN 0 ELSE (SELECT coalesce(max(version), 0) FROM schema_migrations) END AS v",
  );
  return Number(r.rows[0]?.v ?? 0);
}

/**
 * Listens for other instances' commits on one dedicated connection; reconnects
 * with a back-off when the connection drops. Workers poll as well, so a missed
 * notification only delays work.
 */
class PgListener {
  private client: pg.Client | null = null;
  private stopped = false;
  private retry: NodeJS.Timeout | null = null;

  constructor(
    private readonly config: pg.ClientConfig,
    /** `channel` null: notifications may have been missed (the connection was down). */
    private readonly onNotify: (channel: string | null) => void,
  ) {}

  start(): void {
    void this.connect(250);
  }

  private async connect(backoff: number): Promise<void> {
    if (this.stopped) return;
    const c = new pg.Client(this.config);
    c.on('error', () => this.reconnect(c, backoff));
    c.on('end', () => this.reconnect(c, backoff));
    c.on('notification', (n) => this.onNotify(n.channel));
    try {
      await c.connect();
      await c.query(`LISTEN ${WORK_CHANNEL}; LISTEN ${SEGMENTS_CHANNEL}; LISTEN ${WEB_CHANNEL}`);
      this.client = c;
      if (this.stopped) await c.end().catch(() => undefined);
    } catch {
      this.reconnect(c, backoff);
    }
  }

  private reconnect(c: pg.Client, backoff: number): void {
    if (this.client === c) this.client = null;
    c.removeAllListeners('end');
    c.removeAllListeners('notification');
    c.end().catch(() => undefined);
    if (this.stopped || this.retry !== null) return;
    this.retry = setTimeout(() => {
      this.retry = null;
      // Work may have been committed, and segments changed, while the connection was down.
      this.onNotify(null);
      void this.connect(Math.min(backoff * 2, 5_000));
    }, backoff);
    this.retry.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retry !== null) clearTimeout(this.retry);
    const c = this.client;
    this.client = null;
    if (c) {
      c.removeAllListeners('end');
      await c.end().catch(() => undefined);
    }
  }
}

/**
 * Opens the PostgreSQL store: a pool, the migrations (unless `migrate` is false),
 * and, with `listen`, a LISTEN connection that wakes the workers when another
 * instance commits work. `dataDir` still holds the secret key.
 */
export async function openPgStore(
  s: PgSettings & { dataDir: string; migrate?: boolean; listen?: boolean; onPoolError?: (err: Error) => void },
): Promise<Store> {
  const { schema, ...config } = pgClientConfig(s);
  const pool = new pg.Pool(config);
  // An idle connection that the server closes (restart, failover) must not crash the process.
  pool.on('error', (err) => s.onPoolError?.(err));
  try {
    if (s.migrate !== false) await migratePg(pool, schema);
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw err;
  }
  privateDir(s.dataDir);
  let listener: PgListener | null = null;
  const shared = newRepoShared();
  const writer = new PgWriteRunner(pool, shared, writeLanes(s.poolSize ?? 10));
  const store = new Store(new PgSql(pool), shared, writer, s.dataDir, null, async () => {
    await listener?.stop();
    await pool.end().catch(() => undefined);
  });
  store.partitions = new PgPartitions(pool);
  store.poolUsage = () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, max: pool.options.max });
  try {
    await checkSecretKey(pool, store.secrets.fingerprint());
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw err;
  }
  listener =
    s.listen === true
      ? new PgListener(config, (channel) => {
          if (channel === null) store.remoteChange('all');
          else if (channel === WORK_CHANNEL) store.remoteChange('work');
          else if (channel === SEGMENTS_CHANNEL) store.remoteChange('segments');
          else if (channel === WEB_CHANNEL) store.remoteChange('web');
        })
      : null;
  listener?.start();
  return store;
}

/**
 * Secrets (webhook signing secrets, ad-platform credentials) are sealed with the
 * instance's key, so every instance on one database must hold the same key. The
 * first instance records the key's fingerprint; one with another key refuses to
 * start instead of failing to open secrets later.
 */
async function checkSecretKey(pool: pg.Pool, fingerprint: string): Promise<void> {
  await pool.query("INSERT INTO svc_settings (name, value) VALUES ('secret_key_fingerprint', $1) ON CONFLICT (name) DO NOTHING", [fingerprint]);
  const r = await pool.query<{ value: string }>("SELECT value FROM svc_settings WHERE name = 'secret_key_fingerprint'");
  if (r.rows[0]?.value !== fingerprint) {
    throw new Error(
      'this instance holds a different secret key from the one this database was set up with: give every instance the same SVC_SECRET_KEY (or the same secret.key in its data directory)',
    );
  }
}

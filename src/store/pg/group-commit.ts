import pg from 'pg';
import { addEnqueued, enqueuedTotal, newEnqueued, Repos, type Enqueued, type RepoShared, type WriteOp, type WriteOptions } from '../repos.js';
import type { Sql } from '../sql.js';
import type { WriteRunner } from '../store.js';
import { PgSql } from './sql.js';
import { BatchPgSql } from './batch.js';
import { GroupCommitListeners } from '../group-commits.js';
import type { GroupCommitInfo } from '../observe.js';

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
 * The simple query that ends a group transaction: `COMMIT`, or `COMMIT; NOTIFY svc_work` when the group
 * wakes other instances (one round trip instead of a NOTIFY of its own afterwards, on another pooled
 * connection: the NOTIFY runs after the COMMIT, in a transaction of its own, as before). `tag`: the first
 * statement's command tag, so that a COMMIT that went through is told apart from a NOTIFY that then failed.
 */
class CommitQuery extends pg.Query {
  tag: string | undefined;

  handleCommandComplete(msg: { text?: string; command?: string }, connection: unknown): void {
    this.tag ??= (msg.text ?? msg.command ?? '').split(' ', 1)[0];
    (pg.Query.prototype as unknown as { handleCommandComplete: (m: unknown, c: unknown) => void }).handleCommandComplete.call(this, msg, connection);
  }
}

/**
 * COMMIT of a transaction in which a statement failed ends it with a rollback,
 * and PostgreSQL reports that as success (command tag ROLLBACK, no error). An
 * operation that caught a failed statement's error and returned would otherwise
 * be acknowledged, and its whole group with it, with nothing stored.
 * `notify`: NOTIFY the work channel after the COMMIT, in the same round trip; resolves whether it went out
 * (false when the COMMIT went through and the NOTIFY after it failed: the group is stored all the same).
 */
async function commit(client: pg.PoolClient, notify: string | null = null): Promise<boolean> {
  const q = new CommitQuery(notify !== null ? `COMMIT; NOTIFY ${notify}` : 'COMMIT');
  const failure = await new Promise<unknown>((resolve) => {
    Object.assign(q, { callback: (err: unknown) => resolve(err ?? undefined) });
    client.query(q);
  });
  if (failure !== undefined && failure !== null) {
    if (q.tag === 'COMMIT') return false;
    throw failure;
  }
  if (q.tag !== 'COMMIT') {
    throw Object.assign(new Error('the transaction was rolled back at COMMIT: a statement in it failed and its error was caught'), {
      code: ROLLED_BACK_AT_COMMIT,
    });
  }
  return notify !== null;
}

/** At most one NOTIFY of the work channel per this many milliseconds (see PgWriteRunner.carryNotify). */
const NOTIFY_GAP_MS = 2;

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
export class PgWriteRunner implements WriteRunner {
  readonly counters = { batches: 0, ops: 0, stalled: 0, regrouped: 0 };
  readonly groupCommits = new GroupCommitListeners();
  private readonly queue: QueuedOp[] = [];
  /** oneStatement operations waiting for the end of the event-loop turn (runStandalone). */
  private readonly standalone: QueuedOp[] = [];
  /** runStandalone passes under way (at most `lanes`: what queues meanwhile goes together in the next). */
  private standaloneRunning = 0;
  private standaloneScheduled = false;
  private activeLanes = 0;
  private pumpScheduled = false;
  private inFlight = 0;
  private closed = false;
  private readonly listeners: (() => void)[] = [];
  private notifyTimer: NodeJS.Timeout | null = null;
  /** performance.now() of the last NOTIFY sent (see carryNotify). */
  private lastNotifyAt = -Infinity;

  constructor(
    private readonly pool: pg.Pool,
    private readonly shared: RepoShared,
    private readonly lanes: number,
    /** The work channel other instances of this store listen on (workChannel). */
    private readonly workChannel: string,
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
      const op: QueuedOp = {
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
      };
      if (opts?.oneStatement === true) {
        this.standalone.push(op);
        this.scheduleStandalone();
        return;
      }
      this.queue.push(op);
      this.schedulePump();
    });
  }

  /**
   * Operations of one statement each (WriteOptions.oneStatement), those queued when
   * a pass starts together (at the end of the event-loop turn; at most `lanes` passes
   * at once, so under load what queues while one commits goes as the next, larger
   * one, as a group commit's operations would): run concurrently over the pool with their
   * statements batched per SQL text (BatchPgSql), each statement committed on its
   * own: one round trip per text, no BEGIN or COMMIT. A statement that fails
   * stored nothing (one statement is atomic); its operations then run again one
   * at a time, so an error reaches only the operation that caused it.
   */
  private scheduleStandalone(): void {
    if (this.standaloneScheduled || this.standaloneRunning >= this.lanes || this.standalone.length === 0) return;
    this.standaloneScheduled = true;
    setImmediate(() => {
      this.standaloneScheduled = false;
      if (this.standaloneRunning >= this.lanes || this.standalone.length === 0) return;
      this.standaloneRunning++;
      void this.runStandalone().finally(() => {
        this.standaloneRunning--;
        this.scheduleStandalone();
      });
    });
  }

  /** One pass over the oneStatement operations queued (see scheduleStandalone). */
  private async runStandalone(): Promise<void> {
    const ops = this.standalone.splice(0, MAX_GROUP);
    this.scheduleStandalone();
    const started = performance.now();
    const enqueued = newEnqueued();
    const batch = new BatchPgSql(this.pool, new PgSql(this.pool));
    const runs = ops.map((op) => {
      const one = oneStatementSql(batch);
      return { one, done: op.fn(new Repos(one.sql, this.shared, enqueued)) };
    });
    const settled = await Promise.allSettled(runs.map((r) => r.done));
    const stored = ops.length - settled.filter((r) => r.status === 'rejected').length;
    if (stored > 0) this.committed(stored, enqueued, batch.stats.statements, started, 'autocommit');
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i]!;
      const r = settled[i]!;
      if (r.status === 'fulfilled') op.resolve(r.value);
      // The statement stored its rows and the operation failed after it: running it again would store them twice.
      else if (runs[i]!.one.stored || !runs[i]!.one.sent) op.reject(r.reason);
      else await this.runStandaloneAlone(op);
    }
  }

  /** One oneStatement operation on its own (its batched statement failed). */
  private async runStandaloneAlone(op: QueuedOp): Promise<void> {
    const started = performance.now();
    const enqueued = newEnqueued();
    const one = oneStatementSql(new PgSql(this.pool));
    try {
      const value = await op.fn(new Repos(one.sql, this.shared, enqueued));
      this.committed(1, enqueued, 1, started, 'autocommit');
      op.resolve(value);
    } catch (err) {
      op.reject(err);
    }
  }

  /**
   * Starts groups at the end of the event-loop turn rather than at the first operation: the requests
   * read in one turn (one poll of the sockets) then make one group instead of a group of the first
   * one alone and another of the rest, when a lane is free. A group that ends starts the next at once
   * (pump), with whatever queued while it ran.
   */
  private schedulePump(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    setImmediate(() => {
      this.pumpScheduled = false;
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
      // A keyed operation alone still has its statements batched: those it asks together (independent,
      // see Store.write) share a wave, and a wave of reads and plain inserts is one statement.
      const op = group[0]!;
      await this.runAlone(op.fn, 'in_turn', op.key !== undefined).then(op.resolve, op.reject);
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
    const enqueued = newEnqueued();
    const trips = transaction(conn.client);
    const values: unknown[] = new Array(group.length);
    let failed = false;
    let notified = false;
    try {
      const sql = new BatchPgSql(trips.client, new PgSql(trips.client));
      const tx = new Repos(sql, this.shared, enqueued);
      // One chain per key: an operation starts when the one before it of its key has settled. A failure fails the
      // pass (each run notes its own, so no chain rejects); the chain goes on so that every operation settles before
      // the rollback.
      const run = async (i: number): Promise<void> => {
        try {
          values[i] = await group[i]!.fn(tx);
        } catch {
          failed = true;
        }
      };
      const chains = new Map<string, Promise<void>>();
      const running: Promise<void>[] = [];
      for (let i = 0; i < group.length; i++) {
        const key = group[i]!.key;
        if (key === undefined) continue;
        const prev = chains.get(key);
        const p = prev === undefined ? run(i) : prev.then(() => run(i));
        chains.set(key, p);
        running.push(p);
      }
      await Promise.all(running);
      await trips.begun();
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
        notified = await commit(conn.client, this.carryNotify(enqueued) ? this.workChannel : null);
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
    this.committed(group.length, enqueued, trips.count + 2, trips.started, 'set_based', notified);
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
    const enqueued = newEnqueued();
    const values: unknown[] = new Array(group.length);
    let failedAt = -1;
    let notified = false;
    const trips = transaction(conn.client);
    try {
      const tx = new Repos(new PgSql(trips.client), this.shared, enqueued);
      for (let i = 0; i < group.length; i++) {
        try {
          values[i] = await group[i]!.fn(tx);
        } catch {
          failedAt = i;
          break;
        }
      }
      await trips.begun();
      if (failedAt >= 0) {
        if (!conn.broken()) await conn.client.query('ROLLBACK');
      } else {
        notified = await commit(conn.client, this.carryNotify(enqueued) ? this.workChannel : null);
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
    this.committed(group.length, enqueued, trips.count + 2, trips.started, mode, notified);
    for (let i = 0; i < group.length; i++) group[i]!.resolve(values[i]);
  }

  /** One operation in its own transaction, run again from the start after a lost race; `batched`: its statements through BatchPgSql. */
  private async runAlone<T>(fn: WriteOp<T>, mode: 'in_turn' | 'rerun' = 'in_turn', batched = false): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const conn = await this.connect();
      const enqueued = newEnqueued();
      const trips = transaction(conn.client);
      let value: T;
      let notified: boolean;
      try {
        const plain = new PgSql(trips.client);
        value = await fn(new Repos(batched ? new BatchPgSql(trips.client, plain) : plain, this.shared, enqueued));
        await trips.begun();
        notified = await commit(conn.client, this.carryNotify(enqueued) ? this.workChannel : null);
      } catch (err) {
        if (!conn.broken()) await conn.client.query('ROLLBACK').catch(() => undefined);
        conn.release();
        if (attempt < MAX_ATTEMPTS && isRetryable(err)) continue;
        throw err;
      }
      conn.release();
      this.committed(1, enqueued, trips.count + 2, trips.started, mode, notified);
      return value;
    }
  }

  /**
   * Whether the COMMIT about to be sent carries the NOTIFY for other instances (see commit): when the group
   * enqueued work and no NOTIFY went out in the last NOTIFY_GAP_MS. It then also stands for a NOTIFY
   * waiting on the timer (notifyOthers): that group committed before this one.
   */
  private carryNotify(enqueued: Enqueued): boolean {
    if (enqueuedTotal(enqueued) === 0) return false;
    const now = performance.now();
    if (now - this.lastNotifyAt < NOTIFY_GAP_MS) return false;
    this.lastNotifyAt = now;
    if (this.notifyTimer !== null) {
      clearTimeout(this.notifyTimer);
      this.notifyTimer = null;
    }
    return true;
  }

  /**
   * A group committed: counters, /metrics, commit listeners, and a wake-up for other instances when it
   * enqueued work (unless its COMMIT carried the NOTIFY: `notified`). `roundTrips`: for a transaction, its
   * statements plus BEGIN and COMMIT.
   */
  private committed(
    ops: number,
    enqueued: Enqueued,
    roundTrips: number,
    started: number,
    mode: NonNullable<GroupCommitInfo['mode']>,
    notified = false,
  ): void {
    this.counters.batches++;
    this.counters.ops += ops;
    this.groupCommits.emit({ backend: 'pg', operations: ops, roundTrips, durationMs: performance.now() - started, mode });
    // The work rows count once committed (see Repos): the workers' listeners then see them.
    addEnqueued(this.shared.enqueued, enqueued);
    for (const l of this.listeners) l();
    if (!notified && enqueuedTotal(enqueued) > 0) this.notifyOthers();
  }

  /**
   * One NOTIFY per few milliseconds at most, outside the data transactions (a NOTIFY in each would serialize
   * commits): the next group's COMMIT carries it when one commits in time (carryNotify), else this timer's.
   */
  private notifyOthers(): void {
    if (this.notifyTimer !== null) return;
    this.notifyTimer = setTimeout(() => void this.notifyNow(), NOTIFY_GAP_MS);
    this.notifyTimer.unref();
  }

  private notifyNow(): Promise<void> {
    if (this.notifyTimer !== null) clearTimeout(this.notifyTimer);
    this.notifyTimer = null;
    this.lastNotifyAt = performance.now();
    return this.pool.query(`NOTIFY ${this.workChannel}`).then(
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

interface Transaction {
  /** The connection as the operations' executors see it: BEGIN goes out with the first statement. */
  client: pg.PoolClient;
  /** Statements the operations sent. */
  readonly count: number;
  /** performance.now() when the transaction began. */
  readonly started: number;
  /** BEGIN's answer (BEGIN is sent now if no statement was): awaited before COMMIT. */
  begun(): Promise<unknown>;
}

/**
 * A group transaction on `client`: counts the statements sent through it (the round trips of one group,
 * for /metrics; the executors, PgSql and BatchPgSql, call nothing but `query` on it), and sends BEGIN
 * with the first of them, in one write: the pool's connections are in node-pg's pipeline mode
 * (pg/store.ts), so the statement goes out behind BEGIN without waiting for BEGIN's answer, and the
 * two share a TCP send and the backend's wake-up. One send and one wake-up per group fewer than BEGIN
 * on its own (each ~200 µs of CPU on a loaded 2-core host, where a send wakes the other process). A
 * statement behind a BEGIN that failed fails as well (the connection broke), or runs where the
 * transaction would have: nothing is committed without COMMIT's answer.
 */
function transaction(client: pg.PoolClient): Transaction {
  let begin: Promise<unknown> | null = null;
  const sendBegin = (): Promise<unknown> => {
    const p = client.query('BEGIN');
    // Marked handled: the statements behind a failed BEGIN fail as well and may be seen first; begun() rethrows.
    p.catch(() => undefined);
    return p;
  };
  const t = {
    count: 0,
    started: performance.now(),
    begun: () => (begin ??= sendBegin()),
    client: {
      query: (...args: unknown[]): unknown => {
        t.count++;
        const send = () => (client.query as (...a: unknown[]) => unknown).apply(client, args);
        if (begin !== null) return send();
        // One write for both (node-pg corks each message group on its own; nested corks add up).
        const stream = (client as unknown as { connection?: { stream?: { cork?: () => void; uncork?: () => void } } }).connection?.stream;
        stream?.cork?.();
        try {
          begin = sendBegin();
          return send();
        } finally {
          stream?.uncork?.();
        }
      },
    } as unknown as pg.PoolClient,
  };
  return t;
}

/**
 * An executor that lets its operation send one statement: a second one is refused before it is sent
 * (outside a transaction it would commit apart from the first). `sent`: the statement went out;
 * `stored`: it came back without an error.
 */
function oneStatementSql(inner: Sql): { sql: Sql; sent: boolean; stored: boolean } {
  const state = { sent: false, stored: false };
  const once = <T>(send: () => Promise<T>): Promise<T> => {
    if (state.sent) return Promise.reject(new Error('a oneStatement write operation sent a second statement'));
    state.sent = true;
    return send().then((v) => {
      state.stored = true;
      return v;
    });
  };
  const sql: Sql = {
    dialect: 'pg',
    get: (sql, params) => once(() => inner.get(sql, params)),
    all: (sql, params) => once(() => inner.all(sql, params)),
    run: (sql, params) => once(() => inner.run(sql, params)),
    getEach: (sql, sets) => once(() => inner.getEach(sql, sets)),
    runEach: (sql, sets) => once(() => inner.runEach(sql, sets)),
  };
  return Object.assign(state, { sql });
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
 * Measured again on a 2-core host shared with other work (load average 4 to 8),
 * with combined waves (5 round trips per group for a known session's events, 7
 * for a new session's): two lanes 0.72x, 0.27x and 0.45x of SQLite (214 + 125,
 * 282 + 164 and 153 + 117 µs per event), three 0.35x, 0.20x, 0.21x (321 + 185,
 * 328 + 180, 219 + 170 µs), four 0.41x, 0.46x, 0.36x (265 + 185, 236 + 166,
 * 323 + 247 µs). The spread between repeats exceeds the differences except for
 * CPU per event, lowest with two in two rounds of three: two it stays.
 */
export function writeLanes(poolSize: number): number {
  return Math.max(1, Math.min(2, poolSize - 2));
}

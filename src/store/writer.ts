import { fsync } from 'node:fs';
import type { Db } from './db.js';
import type { Repos, WriteMerge, WriteOp, WriteOptions } from './repos.js';
import { GroupCommitListeners } from './group-commits.js';

interface Settled {
  batch: Op[];
  results: { ok: boolean; value: unknown }[];
  /** performance.now() when its transaction began. */
  started: number;
}

interface Op {
  fn: WriteOp<unknown>;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  /** Settles at commit, before the fsync (WriteOptions.ack = 'commit'). */
  atCommit: boolean;
  /** WriteOptions.merge: consecutive operations with the same `merge.by` run as one call in the optimistic pass. */
  merge: WriteMerge | undefined;
}

const settled = (): void => undefined;

/**
 * Group commit: write operations queued during one turn of the event loop run
 * in a single SQLite transaction, each inside its own savepoint so one failing
 * operation rolls back only itself. Every promise settles only after the
 * transaction that holds its writes has committed, so a caller acknowledges
 * nothing that is not durably stored.
 *
 * Operations are asynchronous (the same code runs on PostgreSQL), but on SQLite
 * every statement settles at once, so a whole batch runs within one turn of the
 * event loop. An operation that awaits real I/O (a timer, the network) would
 * keep the transaction open across turns; the writer counts such batches in
 * `counters.stalled` so tests can prove none happen.
 */
export class GroupCommitWriter {
  private queue: Op[] = [];
  private scheduled = false;
  private closed = false;
  private readonly begin;
  private readonly commit;
  private readonly rollback;
  private readonly savepoint;
  private readonly release;
  private readonly rollbackTo;
  /** Number of transactions committed and operations written, for stats and benchmarks. */
  readonly counters = { batches: 0, ops: 0, stalled: 0 };
  private running = false;
  private readonly commitListeners: (() => void)[] = [];
  readonly groupCommits = new GroupCommitListeners();
  /** When the batch being run began (performance.now()), for the group-commit figures. */
  private batchStarted = 0;

  private unsynced: Settled[] = [];
  private syncing = false;
  /** Queued operations that settle at commit: they do not wait for the fsync in flight to start their transaction. */
  private atCommitQueued = 0;

  /**
   * @param walFd when given, SQLite itself does not fsync at commit (synchronous=NORMAL)
   *   and the writer fsyncs this WAL file descriptor on the libuv thread pool after
   *   each commit, settling the batch's promises only once the fsync has returned.
   *   The guarantee is the same as synchronous=FULL (the WAL is on disk before any
   *   acknowledgement) but the event loop never waits for the disk, and one fsync
   *   covers every batch committed while the previous one was running.
   */
  constructor(
    private readonly db: Db,
    private readonly repos: Repos,
    private readonly maxBatch = 1000,
    private readonly walFd: number | null = null,
  ) {
    this.begin = db.prepare('BEGIN IMMEDIATE');
    this.commit = db.prepare('COMMIT');
    this.rollback = db.prepare('ROLLBACK');
    this.savepoint = db.prepare('SAVEPOINT op');
    this.release = db.prepare('RELEASE op');
    this.rollbackTo = db.prepare('ROLLBACK TO op');
    this.dataVersion = db.prepare('PRAGMA data_version').pluck();
    this.caches = repos.shared.writerCaches;
    this.beginRead = db.prepare('BEGIN');
  }

  private readonly beginRead;
  /** The read transaction readTogether holds open, or null; a group ends it before it begins (beginGroup). */
  private readSpan: object | null = null;

  /**
   * Runs `fn`, whose statements only read, in one read transaction: every
   * statement of it then shares one snapshot and one take of the database's
   * locks (on its own, each statement takes and drops them: two fcntl calls
   * and the WAL read mark, about 6 us each, more than a cached index look-up).
   * Inside a group transaction (a read made while a group runs) `fn` simply
   * runs in it. A group that begins while the span is open (`fn` awaited a
   * write, or anything else that outlasts the turn) ends the span first; what
   * `fn` reads after that runs in autocommit as before, so no read ever waits
   * and no write is ever delayed by it.
   */
  readTogether<T>(fn: () => Promise<T>): Promise<T> {
    if (this.closed || !this.db.open || this.db.inTransaction) return fn();
    const span = {};
    this.beginRead.run();
    this.readSpan = span;
    let result: Promise<T>;
    try {
      result = fn();
    } catch (err) {
      this.endRead(span);
      throw err;
    }
    return result.finally(() => this.endRead(span));
  }

  /** Ends the read span `span` if it is still the open one (a group may have ended it). */
  private endRead(span: object): void {
    if (this.readSpan !== span) return;
    this.readSpan = null;
    this.commit.run();
  }

  /** `PRAGMA data_version`: moves exactly when another connection commits to the database. */
  private readonly dataVersion;
  private seenVersion: unknown = undefined;
  /** What the hot path caches (WriterCaches); valid only inside this writer's transactions. */
  private readonly caches;

  /**
   * Starts a group transaction. Once it holds the write lock no other connection can commit until
   * it ends, so a data_version equal to the one of the previous transaction means the cached rows
   * are still those of the database; otherwise they are dropped.
   */
  private beginGroup(): void {
    if (this.readSpan !== null) {
      this.readSpan = null;
      this.commit.run();
    }
    this.begin.run();
    const version = this.dataVersion.get();
    if (version !== this.seenVersion) {
      this.caches.clear();
      this.caches.foreignCommits++;
      this.seenVersion = version;
    }
    this.caches.enabled = true;
  }

  /** The group transaction ended (committed or rolled back): the caches are off until the next one. */
  private endGroup(): void {
    this.caches.enabled = false;
  }

  /** Rolls the group back; what the cache learnt from its writes goes with it. */
  private rollbackGroup(): void {
    this.caches.clear();
    this.rollback.run();
  }

  /**
   * Queues `fn` to run inside the next group transaction; resolves with its result once
   * committed and on disk, or once committed with `opts.ack` = 'commit' (see WriteOptions).
   */
  run<T>(fn: WriteOp<T>, opts?: WriteOptions): Promise<T> {
    if (this.closed) return Promise.reject(new Error('store is closed'));
    const atCommit = opts?.ack === 'commit' && this.walFd !== null;
    if (atCommit) this.atCommitQueued++;
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve: resolve as (v: unknown) => void, reject, atCommit, merge: opts?.merge });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Runs every queued operation now. Called by the scheduler and on shutdown. */
  flush(): void {
    this.scheduled = false;
    // While the previous commit's fsync runs, keep gathering: the next transaction
    // then carries everything that arrived meanwhile (group commit). Operations that
    // settle at commit do not wait for it: committing while an fsync runs is safe (the
    // fsync requested after that commit covers it), only their acknowledgement is sooner.
    if (this.running || this.waitForSync()) return;
    void this.drain();
  }

  private waitForSync(): boolean {
    return this.syncing && !this.closed && this.atCommitQueued === 0;
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.length > 0 && !this.waitForSync()) {
        const batch = this.queue.splice(0, this.maxBatch);
        if (this.atCommitQueued > 0) for (const op of batch) if (op.atCommit) this.atCommitQueued--;
        const stall = setImmediate(() => this.counters.stalled++);
        await this.runBatch(batch);
        clearImmediate(stall);
      }
    } finally {
      this.running = false;
    }
  }

  /** Flushes what is queued and refuses new work; resolves once every commit is on disk. */
  async close(): Promise<void> {
    this.closed = true;
    this.flush();
    while (this.running || this.queue.length > 0 || this.syncing || this.unsynced.length > 0) {
      if (!this.running && this.queue.length > 0) this.flush();
      await new Promise((r) => setTimeout(r, 1));
    }
  }

  private requestSync(): void {
    if (this.syncing || this.walFd === null) return;
    this.syncing = true;
    const group = this.unsynced;
    this.unsynced = [];
    fsync(this.walFd, (err) => {
      this.syncing = false;
      for (const g of group) {
        if (!err) this.emitGroup(g);
        settle(g, err);
      }
      if (this.unsynced.length > 0) this.requestSync();
      else if (this.queue.length > 0) this.flush();
    });
  }

  /** Calls `fn` after every committed group transaction (used to wake the delivery workers). */
  onCommit(fn: () => void): void {
    this.commitListeners.push(fn);
  }

  get pending(): number {
    return this.queue.length;
  }

  private async runBatch(batch: Op[]): Promise<void> {
    // Optimistic pass: no savepoints, consecutive mergeable operations as one call. Operations
    // validate before they write, so a failure is rare; when one happens the batch is rolled
    // back and re-run with a savepoint per operation, each alone, so only the failing operation is lost.
    const results: { ok: boolean; value: unknown }[] = new Array(batch.length);
    if (this.groupCommits.active) this.batchStarted = performance.now();
    try {
      this.beginGroup();
    } catch (err) {
      for (const op of batch) op.reject(err);
      return;
    }
    let failed = false;
    try {
      for (let i = 0; i < batch.length; ) {
        const op = batch[i]!;
        try {
          const m = op.merge;
          let j = i + 1;
          if (m !== undefined) while (j < batch.length && batch[j]!.merge?.by === m.by) j++;
          if (m !== undefined) {
            // Consecutive operations merged (WriteOptions.merge): one call with their items in order (a lone one too:
            // `by` may take a form that only the optimistic pass can, such as the exposures' OR FAIL).
            const items: unknown[] = new Array(j - i);
            for (let k = i; k < j; k++) items[k - i] = batch[k]!.merge!.item;
            await m.by(this.repos, items);
            for (; i < j; i++) results[i] = { ok: true, value: undefined };
          } else {
            results[i] = { ok: true, value: await op.fn(this.repos) };
            i++;
          }
        } catch {
          failed = true;
          break;
        }
      }
      if (failed) this.rollbackGroup();
      else this.commit.run();
    } catch (err) {
      this.abortGroup(batch, err);
      return;
    } finally {
      this.endGroup();
    }
    if (failed) {
      await this.runBatchIsolated(batch);
      return;
    }
    this.committed(batch, results);
  }

  private async runBatchIsolated(batch: Op[]): Promise<void> {
    const results: { ok: boolean; value: unknown }[] = new Array(batch.length);
    try {
      this.beginGroup();
    } catch (err) {
      for (const op of batch) op.reject(err);
      return;
    }
    try {
      for (let i = 0; i < batch.length; i++) {
        const op = batch[i]!;
        this.savepoint.run();
        try {
          const value = await op.fn(this.repos);
          this.release.run();
          results[i] = { ok: true, value };
        } catch (err) {
          this.caches.clear();
          this.rollbackTo.run();
          this.release.run();
          results[i] = { ok: false, value: err };
        }
      }
      this.commit.run();
    } catch (err) {
      this.abortGroup(batch, err);
      return;
    } finally {
      this.endGroup();
    }
    this.committed(batch, results);
  }

  /** A group whose BEGIN-to-COMMIT failed outside its operations (COMMIT itself, a savepoint): nothing of it stays, every caller hears the error. */
  private abortGroup(batch: Op[], err: unknown): void {
    this.caches.clear();
    if (this.db.inTransaction) this.rollback.run();
    for (const op of batch) op.reject(err);
  }

  private committed(batch: Op[], results: { ok: boolean; value: unknown }[]): void {
    this.counters.batches++;
    this.counters.ops += batch.length;
    for (const fn of this.commitListeners) fn();
    const g: Settled = { batch, results, started: this.batchStarted };
    if (this.walFd === null) {
      this.emitGroup(g);
      settle(g, null);
      return;
    }
    for (let i = 0; i < batch.length; i++) {
      const op = batch[i]!;
      if (!op.atCommit) continue;
      const r = results[i]!;
      if (r.ok) op.resolve(r.value);
      else op.reject(r.value);
      op.resolve = settled;
      op.reject = settled;
    }
    this.unsynced.push(g);
    this.requestSync();
  }

  /** The group-commit figures of a group, once it is durable (after its fsync when that runs off the event loop). */
  private emitGroup(g: Settled): void {
    if (!this.groupCommits.active) return;
    this.groupCommits.emit({ backend: 'sqlite', operations: g.batch.length, roundTrips: 0, durationMs: performance.now() - g.started });
  }
}

function settle(g: Settled, err: Error | null): void {
  for (let i = 0; i < g.batch.length; i++) {
    const r = g.results[i]!;
    if (err) g.batch[i]!.reject(err);
    else if (r.ok) g.batch[i]!.resolve(r.value);
    else g.batch[i]!.reject(r.value);
  }
}

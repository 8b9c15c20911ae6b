import type { Logger } from 'pino';
import type { Store } from '../store/store.js';
import { CLEANUP_CHUNK } from '../store/retention.js';
import { PeriodicWorker } from './periodic.js';

export interface JanitorOptions {
  /** Finished work older than this is deleted (ms). */
  retentionMs: number;
  /** How often a pass runs (ms). */
  intervalMs: number;
  /** The pass's lease lasts this long (with several instances, one of them runs each pass). */
  leaseMs: number;
  logger: Logger;
}

type Table = 'deliveries' | 'adJobs' | 'healthLog' | 'outbox';
const TABLES: readonly Table[] = ['outbox', 'deliveries', 'adJobs', 'healthLog'];

/**
 * Keeps the work tables from growing without bound: every `intervalMs` it
 * deletes, in chunks of short write operations, the outbox rows fanned out,
 * the webhook deliveries and ad-platform jobs delivered, and the health-log
 * rows older than the retention; it forgets the old webhook secrets of
 * rotations whose grace period has ended and the idempotency keys past their
 * 24 hours. With several instances on one database the pass runs in whichever
 * instance holds the `janitor` lease.
 *
 * On PostgreSQL it first creates the monthly partitions ahead, and drops the
 * partitions of the health log and the outbox wholly past the retention that
 * hold no pending row (a DROP instead of row deletes; pg/partitions.ts); the
 * row deletes then take what is left, so what is kept is the same on both
 * stores.
 */
export class Janitor extends PeriodicWorker<Record<Table, number>> {
  readonly counters = { passes: 0, deleted: 0, partitionsCreated: 0, partitionsDropped: 0 };

  constructor(
    store: Store,
    private readonly opts: JanitorOptions,
  ) {
    super(store, 'janitor', { intervalMs: opts.intervalMs, firstDelayMs: Math.min(opts.intervalMs, 60_000), lease: { ttlMs: opts.leaseMs, workMs: 5_000 } }, opts.logger, 'retention clean-up');
  }

  /** One clean-up pass; resolves with the rows deleted per table. */
  async pass(): Promise<Record<Table, number>> {
    const done: Record<Table, number> = { outbox: 0, deliveries: 0, adJobs: 0, healthLog: 0 };
    if (!(await this.lease.ensure())) return done;
    const cutoff = Date.now() - this.opts.retentionMs;
    const partitions = this.store.partitions;
    if (partitions !== null) {
      // A failure here (a table lock not granted in time) leaves the row deletes to do the work; tried again next pass.
      try {
        this.counters.partitionsCreated += await partitions.ensure(Date.now());
        if (this.stopped || !this.lease.usable()) return done;
        this.counters.partitionsDropped += await partitions.dropExpired(cutoff);
      } catch (err) {
        this.logger.warn({ err: (err as Error).message }, 'partition upkeep failed; trying again at the next pass');
      }
    }
    for (const table of TABLES) {
      for (;;) {
        if (this.stopped || !this.lease.usable()) return done;
        const n = await this.store.write((tx) => tx.retention[table](cutoff));
        done[table] += n;
        if (n < CLEANUP_CHUNK) break;
        // Let ingestion's group commits through between chunks.
        await new Promise((r) => setImmediate(r));
        const renewed = this.lease.ensure();
        if (renewed !== true) await renewed;
      }
    }
    // Keys of rotations whose grace period has ended sign nothing any more: forget them.
    if (this.stopped || !this.lease.usable()) return done;
    await this.store.write((tx) => tx.webhooks.clearExpiredPreviousSecrets(Date.now()));
    // Idempotency keys older than their 24-hour window answer nothing any more.
    for (;;) {
      if (this.stopped || !this.lease.usable()) return done;
      const n = await this.store.write((tx) => tx.idempotency.prune(Date.now(), CLEANUP_CHUNK));
      if (n < CLEANUP_CHUNK) break;
      await new Promise((r) => setImmediate(r));
    }
    this.counters.passes++;
    const total = done.outbox + done.deliveries + done.adJobs + done.healthLog;
    this.counters.deleted += total;
    if (total > 0) this.opts.logger.info({ deleted: done, olderThan: new Date(cutoff).toISOString() }, 'retention clean-up');
    return done;
  }
}

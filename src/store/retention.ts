import type { Sql } from './sql.js';

/** Rows deleted per statement: each chunk is its own short write operation. */
export const CLEANUP_CHUNK = 5_000;
/** SQLite outbox: how far past its oldest row one pass looks (ids are dense), so a pass never scans the whole table. */
const OUTBOX_WINDOW = 100_000;

/**
 * Deletes finished work older than the retention: delivered webhook deliveries
 * and ad-platform jobs, health-log rows, and outbox rows already fanned out.
 * Pending and failed deliveries and jobs are kept (failed ones can be replayed).
 * Each method deletes at most CLEANUP_CHUNK rows and returns how many it did.
 * Writes: call inside a write operation.
 */
export class RetentionRepo {
  constructor(private readonly x: Sql) {}

  async deliveries(cutoff: number): Promise<number> {
    const r = await this.x.run(
      `DELETE FROM deliveries WHERE id IN (SELECT id FROM deliveries WHERE state = 'delivered' AND delivered_at < ? LIMIT ${CLEANUP_CHUNK})`,
      [cutoff],
    );
    return r.changes;
  }

  async adJobs(cutoff: number): Promise<number> {
    const r = await this.x.run(
      `DELETE FROM ad_jobs WHERE id IN (SELECT id FROM ad_jobs WHERE state = 'delivered' AND delivered_at < ? LIMIT ${CLEANUP_CHUNK})`,
      [cutoff],
    );
    return r.changes;
  }

  async healthLog(cutoff: number): Promise<number> {
    const r = await this.x.run(`DELETE FROM health_log WHERE id IN (SELECT id FROM health_log WHERE created_at < ? LIMIT ${CLEANUP_CHUNK})`, [cutoff]);
    return r.changes;
  }

  async outbox(cutoff: number): Promise<number> {
    if (this.x.dialect === 'pg') {
      const r = await this.x.run(
        `DELETE FROM outbox WHERE id IN (SELECT id FROM outbox WHERE dispatched_at IS NOT NULL AND dispatched_at < ? LIMIT ${CLEANUP_CHUNK})`,
        [cutoff],
      );
      return r.changes;
    }
    // SQLite: the outbox is append-only behind the dispatch cursor, with no index but the id: look at
    // the oldest rows only (ids grow with time), up to the cursor.
    const r = await this.x.run(
      `DELETE FROM outbox WHERE id IN (
         SELECT id FROM outbox
          WHERE id <= (SELECT last_id FROM outbox_cursor WHERE name = 'webhooks')
            AND id < (SELECT coalesce(min(id), 0) FROM outbox) + ${OUTBOX_WINDOW}
            AND created_at < ?
          ORDER BY id LIMIT ${CLEANUP_CHUNK})`,
      [cutoff],
    );
    return r.changes;
  }
}

import type { Sql } from './sql.js';

/** A job row that waits (`queued`) or whose runner stopped renewing its lease can be taken. */
const CLAIMABLE = "(state = 'queued' OR (state = 'running' AND lease_until < ?))";

/**
 * The lease protocol of a table of background jobs (generation jobs, crawls):
 * columns id, state (queued | running | finished | failed), lease_until,
 * attempts, started_at, finished_at, error, created_at. One runner at a time
 * holds a job; a runner that dies stops renewing, and the job is taken again.
 * Writes run inside a write operation.
 */
export class JobRows<Row> {
  constructor(
    private readonly x: Sql,
    private readonly table: 'generation_jobs' | 'crawls',
  ) {}

  /** Whether a job waits to be taken (a read, so an idle poll writes nothing). */
  async hasClaimable(now: number): Promise<boolean> {
    return (await this.x.get(`SELECT 1 AS x FROM ${this.table} WHERE ${CLAIMABLE} LIMIT 1`, [now])) !== undefined;
  }

  /** Takes the oldest waiting job, or one whose runner stopped renewing its lease, and marks it running. */
  claim(now: number, leaseMs: number): Promise<Row | undefined> {
    return this.x.get<Row>(
      `UPDATE ${this.table} SET state = 'running', lease_until = ?, attempts = attempts + 1, started_at = coalesce(started_at, ?)
       WHERE id = (SELECT id FROM ${this.table} WHERE ${CLAIMABLE} ORDER BY created_at, id LIMIT 1) AND ${CLAIMABLE}
       RETURNING *`,
      [now + leaseMs, now, now, now],
    );
  }

  async renew(id: string, until: number): Promise<void> {
    await this.x.run(`UPDATE ${this.table} SET lease_until = ? WHERE id = ? AND state = 'running'`, [until, id]);
  }

  /** Gives a running job back (shutdown): the next runner takes it at once. */
  async release(id: string): Promise<void> {
    await this.x.run(`UPDATE ${this.table} SET lease_until = 0, attempts = attempts - 1 WHERE id = ? AND state = 'running'`, [id]);
  }

  async fail(id: string, error: string, now: number): Promise<void> {
    await this.x.run(`UPDATE ${this.table} SET state = 'failed', error = ?, finished_at = ?, lease_until = 0 WHERE id = ? AND state <> 'finished'`, [
      error.slice(0, 1000),
      now,
      id,
    ]);
  }
}

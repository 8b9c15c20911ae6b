import type { Sql } from './sql.js';
import { WriteConflict } from './errors.js';

/** How long an idempotency key is remembered: a retry within this stores nothing new. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

export interface IdempotencyRow {
  path: string;
  status: number;
  response: string;
  created_at: number;
}

/** The answers of ingestion requests by (site, Idempotency-Key), kept IDEMPOTENCY_WINDOW_MS. */
export class IdempotencyRepo {
  constructor(private readonly x: Sql) {}

  /** The answer first given for the key, when it was given after `since`. */
  async get(siteId: string, key: string, since: number): Promise<IdempotencyRow | undefined> {
    const row = await this.x.get<IdempotencyRow>('SELECT path, status, response, created_at FROM idempotency_keys WHERE site_id = ? AND key = ?', [siteId, key]);
    return row && Number(row.created_at) > since ? row : undefined;
  }

  /**
   * Remembers the answer (replacing one older than the window). Writes: inside the write
   * operation of the request. A fresh row of a concurrent request wins: WriteConflict, so
   * the operation starts over and answers with that row.
   */
  async put(siteId: string, key: string, row: IdempotencyRow): Promise<void> {
    const r = await this.x.run(
      `INSERT INTO idempotency_keys (site_id, key, path, status, response, created_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (site_id, key) DO UPDATE SET path = excluded.path, status = excluded.status, response = excluded.response, created_at = excluded.created_at
       WHERE idempotency_keys.created_at <= ?`,
      [siteId, key, row.path, row.status, row.response, row.created_at, row.created_at - IDEMPOTENCY_WINDOW_MS],
    );
    if (r.changes === 0) throw new WriteConflict('the idempotency key was used by a concurrent request');
  }

  /** Deletes up to `limit` keys older than the window; returns how many. */
  async prune(now: number, limit: number): Promise<number> {
    const r = await this.x.run(
      'DELETE FROM idempotency_keys WHERE (site_id, key) IN (SELECT site_id, key FROM idempotency_keys WHERE created_at <= ? LIMIT ?)',
      [now - IDEMPOTENCY_WINDOW_MS, limit],
    );
    return r.changes;
  }
}

import type { Sql } from '../sql.js';

/** The database clock in ms: every instance measures refill with the same clock. */
const NOW_MS = '(extract(epoch from clock_timestamp()) * 1000)::bigint';

/**
 * Token buckets shared by every instance on one PostgreSQL database. One
 * statement takes a token atomically: the row lock serializes concurrent
 * takers of one key, the refill is computed from the database clock.
 */
export class RateBucketsRepo {
  constructor(private readonly x: Sql) {}

  /**
   * Takes one token from `key`'s bucket (created full). Returns the tokens left
   * after taking, or, when the bucket is empty, `ok: false` with the tokens there
   * are (less than 1).
   */
  async take(key: string, p: { burst: number; perMs: number }): Promise<{ ok: boolean; tokens: number }> {
    const taken = await this.x.get<{ tokens: number }>(
      `INSERT INTO rate_buckets (key, tokens, updated_at) VALUES (?, ?, ${NOW_MS})
       ON CONFLICT (key) DO UPDATE
         SET tokens = least(?::double precision, rate_buckets.tokens + (${NOW_MS} - rate_buckets.updated_at) * ?::double precision) - 1,
             updated_at = ${NOW_MS}
       WHERE least(?::double precision, rate_buckets.tokens + (${NOW_MS} - rate_buckets.updated_at) * ?::double precision) >= 1
       RETURNING tokens`,
      [key, p.burst - 1, p.burst, p.perMs, p.burst, p.perMs],
    );
    if (taken) return { ok: true, tokens: taken.tokens };
    const row = await this.x.get<{ tokens: number }>(
      `SELECT least(?::double precision, tokens + (${NOW_MS} - updated_at) * ?::double precision) AS tokens FROM rate_buckets WHERE key = ?`,
      [p.burst, p.perMs, key],
    );
    return { ok: false, tokens: row?.tokens ?? 0 };
  }

  /** Deletes a policy's buckets idle long enough to be full again (a full bucket carries no information). */
  async sweep(policy: string, olderThanMs: number): Promise<number> {
    const like = `${policy.replace(/[\\%_]/g, (c) => `\\${c}`)}:%`;
    return (await this.x.run(`DELETE FROM rate_buckets WHERE key LIKE ? AND updated_at < ${NOW_MS} - ?`, [like, olderThanMs])).changes;
  }
}

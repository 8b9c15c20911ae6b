import type { Sql } from './sql.js';

/** The database clock in ms on PostgreSQL (instances' clocks may disagree; the lease must not). */
const PG_NOW = '(extract(epoch from clock_timestamp()) * 1000)::bigint';

/**
 * Leases on work lanes (a webhook destination, an ad-platform connection): the
 * holder of a lane's lease is the only instance that sends its deliveries, so
 * ordering and the concurrency cap hold across instances. A lease is taken when
 * free or expired and renewed by its holder; an instance that dies simply stops
 * renewing and another takes the lane over once the lease has run out.
 */
export class LeasesRepo {
  constructor(private readonly x: Sql) {}

  /**
   * Takes or renews the lease of `lane` for `holder` for `ttlMs`. Returns how
   * long the lease is valid from now (ms), or null when another holder has it.
   * Writes: call inside a write operation.
   */
  async acquire(lane: string, holder: string, ttlMs: number): Promise<number | null> {
    if (this.x.dialect === 'pg') {
      const row = await this.x.get<{ remaining: number }>(
        `INSERT INTO lane_leases (lane, holder, locked_until) VALUES (?, ?, ${PG_NOW} + ?)
         ON CONFLICT (lane) DO UPDATE SET holder = excluded.holder, locked_until = excluded.locked_until
         WHERE lane_leases.holder = excluded.holder OR lane_leases.locked_until < ${PG_NOW}
         RETURNING locked_until - ${PG_NOW} AS remaining`,
        [lane, holder, ttlMs],
      );
      return row ? Number(row.remaining) : null;
    }
    const now = Date.now();
    const row = await this.x.get<{ locked_until: number }>(
      `INSERT INTO lane_leases (lane, holder, locked_until) VALUES (?, ?, ?)
       ON CONFLICT (lane) DO UPDATE SET holder = excluded.holder, locked_until = excluded.locked_until
       WHERE lane_leases.holder = excluded.holder OR lane_leases.locked_until < ?
       RETURNING locked_until`,
      [lane, holder, now + ttlMs, now],
    );
    return row ? row.locked_until - now : null;
  }

  /** Gives a lane up (on shutdown) so another instance need not wait for the lease to run out. */
  async release(lane: string, holder: string): Promise<void> {
    await this.x.run('DELETE FROM lane_leases WHERE lane = ? AND holder = ?', [lane, holder]);
  }

  /** How many leases whose lane starts with `prefix` have not run out (live instances, by their heartbeat lanes). */
  async countLive(prefix: string): Promise<number> {
    const like = `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    const now = this.x.dialect === 'pg' ? PG_NOW : '?';
    const params = this.x.dialect === 'pg' ? [like] : [like, Date.now()];
    const row = await this.x.get<{ n: number }>(`SELECT count(*) AS n FROM lane_leases WHERE lane LIKE ? ESCAPE '\\' AND locked_until >= ${now}`, params);
    return Number(row?.n ?? 0);
  }

  /** Every lease row, run out or not (a small table: one row per lane). */
  all(): Promise<{ lane: string; holder: string }[]> {
    return this.x.all<{ lane: string; holder: string }>('SELECT lane, holder FROM lane_leases ORDER BY lane', []);
  }

  /** The current holder of a lane, if its lease has not run out (for status and tests). */
  async holder(lane: string): Promise<string | null> {
    const now = this.x.dialect === 'pg' ? PG_NOW : '?';
    const params = this.x.dialect === 'pg' ? [lane] : [lane, Date.now()];
    const row = await this.x.get<{ holder: string }>(`SELECT holder FROM lane_leases WHERE lane = ? AND locked_until >= ${now}`, params);
    return row?.holder ?? null;
  }
}

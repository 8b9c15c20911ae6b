import type { Sql } from './sql.js';

export interface SiteStats {
  site_id: string;
  profiles: number;
  sessions: number;
  events: number;
  scores: number;
  conversions: number;
  leads: number;
  outbox_pending: number;
  outbox_done: number;
}

/** Rows waiting in one queue, and the write time (ms) of the oldest. */
export interface QueueBacklog {
  queue: 'outbox' | 'webhook_deliveries' | 'adplatform_jobs';
  rows: number;
  oldestCreatedAt: number | null;
}

/** Exact row counts per site, for operators and tests. */
export class StatsRepo {
  constructor(private readonly x: Sql) {}

  async sites(siteId?: string): Promise<SiteStats[]> {
    const sites = siteId
      ? await this.x.all<{ id: string }>('SELECT id FROM sites WHERE id = ?', [siteId])
      : await this.x.all<{ id: string }>('SELECT id FROM sites ORDER BY created_at, id');
    const count = async (sql: string, id: string) => Number((await this.x.get<{ n: number }>(sql, [id]))!.n);
    // SQLite marks dispatch with a cursor over the append-only outbox, PostgreSQL per row (several instances claim rows).
    // Pending and done in one statement: read apart, a row the dispatcher marked in between counted as both.
    const outbox =
      this.x.dialect === 'pg'
        ? 'SELECT count(*) FILTER (WHERE dispatched_at IS NULL) AS pending, count(*) FILTER (WHERE dispatched_at IS NOT NULL) AS done FROM outbox WHERE site_id = ?'
        : "SELECT count(CASE WHEN o.id > c.last_id THEN 1 END) AS pending, count(CASE WHEN o.id <= c.last_id THEN 1 END) AS done FROM outbox o LEFT JOIN outbox_cursor c ON c.name = 'webhooks' WHERE o.site_id = ?";
    const out: SiteStats[] = [];
    for (const { id } of sites) {
      const ob = (await this.x.get<{ pending: number; done: number }>(outbox, [id]))!;
      out.push({
        site_id: id,
        profiles: await count('SELECT count(*) AS n FROM profiles WHERE site_id = ? AND merged_into IS NULL', id),
        sessions: await count('SELECT count(*) AS n FROM sessions WHERE site_id = ?', id),
        events: await count('SELECT count(*) AS n FROM events WHERE site_id = ?', id),
        scores: await count('SELECT count(*) AS n FROM scores WHERE site_id = ?', id),
        conversions: await count('SELECT count(*) AS n FROM conversions WHERE site_id = ?', id),
        leads: await count('SELECT count(*) AS n FROM leads WHERE site_id = ?', id),
        outbox_pending: Number(ob.pending),
        outbox_done: Number(ob.done),
      });
    }
    return out;
  }

  /**
   * What waits, over every site (for /metrics): outbox rows not yet fanned out,
   * and pending webhook deliveries and ad-platform jobs (due or waiting for a retry).
   */
  async backlog(): Promise<QueueBacklog[]> {
    const outbox =
      this.x.dialect === 'pg'
        ? 'SELECT count(*) AS n, min(created_at) AS oldest FROM outbox WHERE dispatched_at IS NULL'
        : "SELECT count(*) AS n, min(created_at) AS oldest FROM outbox WHERE id > (SELECT last_id FROM outbox_cursor WHERE name = 'webhooks')";
    const queues = [
      ['outbox', outbox],
      ['webhook_deliveries', "SELECT count(*) AS n, min(created_at) AS oldest FROM deliveries WHERE state = 'pending'"],
      ['adplatform_jobs', "SELECT count(*) AS n, min(created_at) AS oldest FROM ad_jobs WHERE state = 'pending'"],
    ] as const;
    const out: QueueBacklog[] = [];
    for (const [queue, sql] of queues) {
      const r = await this.x.get<{ n: number; oldest: number | null }>(sql);
      out.push({ queue, rows: Number(r?.n ?? 0), oldestCreatedAt: r?.oldest === null || r?.oldest === undefined ? null : Number(r.oldest) });
    }
    return out;
  }
}

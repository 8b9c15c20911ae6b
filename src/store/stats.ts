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

/** Exact row counts per site, for operators and tests. */
export class StatsRepo {
  constructor(private readonly x: Sql) {}

  async sites(siteId?: string): Promise<SiteStats[]> {
    const sites = siteId
      ? await this.x.all<{ id: string }>('SELECT id FROM sites WHERE id = ?', [siteId])
      : await this.x.all<{ id: string }>('SELECT id FROM sites ORDER BY created_at, id');
    const count = async (sql: string, id: string) => Number((await this.x.get<{ n: number }>(sql, [id]))!.n);
    // SQLite marks dispatch with a cursor over the append-only outbox, PostgreSQL per row (several instances claim rows).
    const pending =
      this.x.dialect === 'pg'
        ? 'SELECT count(*) AS n FROM outbox WHERE site_id = ? AND dispatched_at IS NULL'
        : "SELECT count(*) AS n FROM outbox WHERE site_id = ? AND id > (SELECT last_id FROM outbox_cursor WHERE name = 'webhooks')";
    const done =
      this.x.dialect === 'pg'
        ? 'SELECT count(*) AS n FROM outbox WHERE site_id = ? AND dispatched_at IS NOT NULL'
        : "SELECT count(*) AS n FROM outbox WHERE site_id = ? AND id <= (SELECT last_id FROM outbox_cursor WHERE name = 'webhooks')";
    const out: SiteStats[] = [];
    for (const { id } of sites) {
      out.push({
        site_id: id,
        profiles: await count('SELECT count(*) AS n FROM profiles WHERE site_id = ? AND merged_into IS NULL', id),
        sessions: await count('SELECT count(*) AS n FROM sessions WHERE site_id = ?', id),
        events: await count('SELECT count(*) AS n FROM events WHERE site_id = ?', id),
        scores: await count('SELECT count(*) AS n FROM scores WHERE site_id = ?', id),
        conversions: await count('SELECT count(*) AS n FROM conversions WHERE site_id = ?', id),
        leads: await count('SELECT count(*) AS n FROM leads WHERE site_id = ?', id),
        outbox_pending: await count(pending, id),
        outbox_done: await count(done, id),
      });
    }
    return out;
  }
}

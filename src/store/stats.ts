import type { Db } from './db.js';

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
export function siteStats(db: Db, siteId?: string): SiteStats[] {
  const sites = siteId
    ? db.prepare<[string], { id: string }>('SELECT id FROM sites WHERE id = ?').all(siteId)
    : db.prepare<[], { id: string }>('SELECT id FROM sites ORDER BY created_at, id').all();
  const count = (sql: string, id: string) => (db.prepare(sql).get(id) as { n: number }).n;
  return sites.map(({ id }) => ({
    site_id: id,
    profiles: count('SELECT count(*) AS n FROM profiles WHERE site_id = ? AND merged_into IS NULL', id),
    sessions: count('SELECT count(*) AS n FROM sessions WHERE site_id = ?', id),
    events: count('SELECT count(*) AS n FROM events WHERE site_id = ?', id),
    scores: count('SELECT count(*) AS n FROM scores WHERE site_id = ?', id),
    conversions: count('SELECT count(*) AS n FROM conversions WHERE site_id = ?', id),
    leads: count('SELECT count(*) AS n FROM leads WHERE site_id = ?', id),
    outbox_pending: count(
      "SELECT count(*) AS n FROM outbox WHERE site_id = ? AND id > (SELECT last_id FROM outbox_cursor WHERE name = 'webhooks')",
      id,
    ),
    outbox_done: count(
      "SELECT count(*) AS n FROM outbox WHERE site_id = ? AND id <= (SELECT last_id FROM outbox_cursor WHERE name = 'webhooks')",
      id,
    ),
  }));
}

import type { Dialect, Sql } from './sql.js';
import { whereOf } from './where.js';

export interface LeadRow {
  id: string;
  site_id: string;
  profile_id: string;
  form_id: string;
  kind: 'lead_form' | 'optin';
  email: string | null;
  name: string | null;
  phone: string | null;
  appointment_slot: string | null;
  source: string | null;
  workable: number;
  status: string;
  created_at: number;
}

export interface ConversionRow {
  id: string;
  session_id: string;
  profile_id: string;
  revenue: number | null;
  currency: string;
  line_items: string;
  created_at: number;
}

export interface EventRow {
  id: number;
  session_id: string;
  profile_id: string;
  type: string;
  ts: number;
  received_at: number;
}

export interface TimelineItem {
  kind: 'event' | 'conversion' | 'score' | 'lead';
  id: string;
  at: number;
  type: string | null;
  value: number | null;
}

export interface RevenueDayRow {
  day: string;
  currency: string;
  conversions: number;
  revenue: number;
}

export interface CurrencyRevenueRow {
  currency: string;
  revenue: number;
}

export interface EventTypeRow {
  type: string;
  n: number;
  last: number;
}

export interface WindowCounts {
  sessions: number;
  visitors: number;
  profiles: number;
  conversions: number;
  converting_sessions: number;
  revenueByCurrency: CurrencyRevenueRow[];
  leads: number;
}

const TIMELINE = `SELECT * FROM (
    SELECT 'event' AS kind, CAST(id AS TEXT) AS id, ts AS at, type, NULL AS value FROM events WHERE profile_id = ? AND site_id = ?
    UNION ALL SELECT 'conversion', id, created_at, currency, revenue FROM conversions WHERE profile_id = ? AND site_id = ?
    UNION ALL SELECT 'score', CAST(id AS TEXT), received_at, NULL, score FROM scores WHERE profile_id = ? AND site_id = ?
    UNION ALL SELECT 'lead', id, created_at, kind, NULL FROM leads WHERE profile_id = ? AND site_id = ?
  ) AS items ORDER BY at DESC, id DESC LIMIT ?`;
/** The UTC calendar day (YYYY-MM-DD) of a ms timestamp column, per dialect. */
const DAY_OF = {
  sqlite: (col: string) => `strftime('%Y-%m-%d', ${col} / 1000, 'unixepoch')`,
  pg: (col: string) => `to_char(to_timestamp(${col} / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD')`,
};
const revenueByDay = (dialect: Dialect) => `SELECT ${DAY_OF[dialect]('created_at')} AS day, currency, count(*) AS conversions, coalesce(sum(revenue), 0) AS revenue
    FROM conversions WHERE site_id = ? AND created_at >= ? AND created_at < ? GROUP BY day, currency ORDER BY day, currency`;
const REVENUE_BY_CURRENCY = `SELECT currency, coalesce(sum(revenue), 0) AS revenue
    FROM conversions WHERE site_id = ? AND created_at >= ? AND created_at < ? GROUP BY currency ORDER BY currency`;
const RECENT_EVENTS =
  'SELECT id, session_id, profile_id, type, ts, received_at FROM events WHERE site_id = ? AND type = ? ORDER BY ts DESC, id DESC LIMIT ?';
const EVENT_TYPES =
  'SELECT type, count(*) AS n, max(ts) AS last FROM events WHERE site_id = ? AND ts >= ? GROUP BY type ORDER BY n DESC, type LIMIT 100';
const WINDOW_SESSIONS = `SELECT count(*) AS sessions, count(DISTINCT visitor_id) AS visitors, count(DISTINCT profile_id) AS profiles
    FROM sessions WHERE site_id = ? AND first_seen >= ? AND first_seen < ?`;
const WINDOW_CONVERSIONS = `SELECT count(*) AS conversions, count(DISTINCT session_id) AS converting_sessions
    FROM conversions WHERE site_id = ? AND created_at >= ? AND created_at < ?`;
const WINDOW_LEADS = 'SELECT count(*) AS n FROM leads WHERE site_id = ? AND created_at >= ? AND created_at < ?';

/** Read-side queries behind the MCP leads, conversions, events, analytics and timeline tools. Every query is scoped by site. */
export class InsightsRepo {
  constructor(private readonly x: Sql) {}

  leads(f: {
    siteId: string;
    status?: string | undefined;
    kind?: string | undefined;
    since?: number | undefined;
    until?: number | undefined;
    limit: number;
  }): Promise<LeadRow[]> {
    const w = whereOf([
      ['site_id = ?', f.siteId],
      ['status = ?', f.status],
      ['kind = ?', f.kind],
      ['created_at >= ?', f.since],
      ['created_at < ?', f.until],
    ]);
    return this.x.all<LeadRow>(`SELECT * FROM leads ${w.sql} ORDER BY created_at DESC, id DESC LIMIT ?`, [...w.params, f.limit]);
  }

  lead(siteId: string, id: string): Promise<LeadRow | undefined> {
    return this.x.get<LeadRow>('SELECT * FROM leads WHERE id = ? AND site_id = ?', [id, siteId]);
  }

  /** Writes: call inside a write operation. */
  async setLeadStatus(siteId: string, id: string, status: string): Promise<boolean> {
    return (await this.x.run('UPDATE leads SET status = ? WHERE id = ? AND site_id = ?', [status, id, siteId])).changes > 0;
  }

  conversions(f: {
    siteId: string;
    since?: number | undefined;
    until?: number | undefined;
    minRevenue?: number | undefined;
    limit: number;
  }): Promise<ConversionRow[]> {
    const w = whereOf([
      ['site_id = ?', f.siteId],
      ['created_at >= ?', f.since],
      ['created_at < ?', f.until],
      ['revenue >= ?', f.minRevenue],
    ]);
    return this.x.all<ConversionRow>(
      `SELECT id, session_id, profile_id, revenue, currency, line_items, created_at FROM conversions ${w.sql} ORDER BY created_at DESC, id DESC LIMIT ?`,
      [...w.params, f.limit],
    );
  }

  async revenueByDay(siteId: string, since: number, until: number): Promise<RevenueDayRow[]> {
    const rows = await this.x.all<RevenueDayRow>(revenueByDay(this.x.dialect), [siteId, since, until]);
    return rows.map((r) => ({ ...r, conversions: Number(r.conversions) }));
  }

  recentEvents(siteId: string, type: string, limit: number): Promise<EventRow[]> {
    return this.x.all<EventRow>(RECENT_EVENTS, [siteId, type, limit]);
  }

  async eventTypes(siteId: string, since: number): Promise<EventTypeRow[]> {
    const rows = await this.x.all<EventTypeRow>(EVENT_TYPES, [siteId, since]);
    return rows.map((r) => ({ ...r, n: Number(r.n) }));
  }

  /** Newest first: events, conversions, scores and leads of one profile. */
  timeline(siteId: string, profileId: string, limit: number): Promise<TimelineItem[]> {
    const p = [profileId, siteId];
    return this.x.all<TimelineItem>(TIMELINE, [...p, ...p, ...p, ...p, limit]);
  }

  /** Counts of a time window; revenue per currency (amounts in different currencies are never added up). */
  async window(siteId: string, since: number, until: number): Promise<WindowCounts> {
    const range = [siteId, since, until];
    const s = (await this.x.get<{ sessions: number; visitors: number; profiles: number }>(WINDOW_SESSIONS, range))!;
    const c = (await this.x.get<{ conversions: number; converting_sessions: number }>(WINDOW_CONVERSIONS, range))!;
    const revenueByCurrency = await this.revenueByCurrency(siteId, since, until);
    const leads = (await this.x.get<{ n: number }>(WINDOW_LEADS, range))!;
    return {
      sessions: Number(s.sessions),
      visitors: Number(s.visitors),
      profiles: Number(s.profiles),
      conversions: Number(c.conversions),
      converting_sessions: Number(c.converting_sessions),
      revenueByCurrency,
      leads: Number(leads.n),
    };
  }

  revenueByCurrency(siteId: string, since: number, until: number): Promise<CurrencyRevenueRow[]> {
    return this.x.all<CurrencyRevenueRow>(REVENUE_BY_CURRENCY, [siteId, since, until]);
  }
}

import type { Db } from './db.js';
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

/** Read-side queries behind the MCP leads, conversions, events, analytics and timeline tools. Every query is scoped by site. */
export class InsightsRepo {
  private readonly q;

  constructor(private readonly db: Db) {
    this.q = {
      lead: db.prepare<[string, string], LeadRow>('SELECT * FROM leads WHERE id = ? AND site_id = ?'),
      setLeadStatus: db.prepare('UPDATE leads SET status = ? WHERE id = ? AND site_id = ?'),
      timeline: db.prepare<[string, string, string, string, string, string, string, string, number], TimelineItem>(
        `SELECT * FROM (
           SELECT 'event' AS kind, CAST(id AS TEXT) AS id, ts AS at, type, NULL AS value FROM events WHERE profile_id = ? AND site_id = ?
           UNION ALL SELECT 'conversion', id, created_at, currency, revenue FROM conversions WHERE profile_id = ? AND site_id = ?
           UNION ALL SELECT 'score', CAST(id AS TEXT), received_at, NULL, score FROM scores WHERE profile_id = ? AND site_id = ?
           UNION ALL SELECT 'lead', id, created_at, kind, NULL FROM leads WHERE profile_id = ? AND site_id = ?
         ) ORDER BY at DESC, id DESC LIMIT ?`,
      ),
      revenueByDay: db.prepare<[string, number, number], { day: string; currency: string; conversions: number; revenue: number }>(
        `SELECT strftime('%Y-%m-%d', created_at / 1000, 'unixepoch') AS day, currency, count(*) AS conversions, coalesce(sum(revenue), 0) AS revenue
           FROM conversions WHERE site_id = ? AND created_at >= ? AND created_at < ? GROUP BY day, currency ORDER BY day, currency`,
      ),
      revenueByCurrency: db.prepare<[string, number, number], { currency: string; revenue: number }>(
        `SELECT currency, coalesce(sum(revenue), 0) AS revenue
           FROM conversions WHERE site_id = ? AND created_at >= ? AND created_at < ? GROUP BY currency ORDER BY currency`,
      ),
      recentEvents: db.prepare<[string, string, number], EventRow>(
        'SELECT id, session_id, profile_id, type, ts, received_at FROM events WHERE site_id = ? AND type = ? ORDER BY ts DESC, id DESC LIMIT ?',
      ),
      eventTypes: db.prepare<[string, number], { type: string; n: number; last: number }>(
        'SELECT type, count(*) AS n, max(ts) AS last FROM events WHERE site_id = ? AND ts >= ? GROUP BY type ORDER BY n DESC, type LIMIT 100',
      ),
      sessions: db.prepare<[string, number, number], { sessions: number; visitors: number; profiles: number }>(
        `SELECT count(*) AS sessions, count(DISTINCT visitor_id) AS visitors, count(DISTINCT profile_id) AS profiles
           FROM sessions WHERE site_id = ? AND first_seen >= ? AND first_seen < ?`,
      ),
      conversions: db.prepare<[string, number, number], { conversions: number; converting_sessions: number }>(
        `SELECT count(*) AS conversions, count(DISTINCT session_id) AS converting_sessions
           FROM conversions WHERE site_id = ? AND created_at >= ? AND created_at < ?`,
      ),
      leadCount: db.prepare<[string, number, number], { n: number }>('SELECT count(*) AS n FROM leads WHERE site_id = ? AND created_at >= ? AND created_at < ?'),
    };
  }

  leads(f: { siteId: string; status?: string | undefined; kind?: string | undefined; since?: number | undefined; until?: number | undefined; limit: number }): LeadRow[] {
    const w = whereOf([
      ['site_id = ?', f.siteId],
      ['status = ?', f.status],
      ['kind = ?', f.kind],
      ['created_at >= ?', f.since],
      ['created_at < ?', f.until],
    ]);
    return this.db.prepare(`SELECT * FROM leads ${w.sql} ORDER BY created_at DESC, id DESC LIMIT ?`).all(...w.params, f.limit) as LeadRow[];
  }

  lead(siteId: string, id: string): LeadRow | undefined {
    return this.q.lead.get(id, siteId);
  }

  setLeadStatus(siteId: string, id: string, status: string): boolean {
    return this.q.setLeadStatus.run(status, id, siteId).changes > 0;
  }

  conversions(f: { siteId: string; since?: number | undefined; until?: number | undefined; minRevenue?: number | undefined; limit: number }): ConversionRow[] {
    const w = whereOf([
      ['site_id = ?', f.siteId],
      ['created_at >= ?', f.since],
      ['created_at < ?', f.until],
      ['revenue >= ?', f.minRevenue],
    ]);
    return this.db
      .prepare(`SELECT id, session_id, profile_id, revenue, currency, line_items, created_at FROM conversions ${w.sql} ORDER BY created_at DESC, id DESC LIMIT ?`)
      .all(...w.params, f.limit) as ConversionRow[];
  }

  revenueByDay(siteId: string, since: number, until: number) {
    return this.q.revenueByDay.all(siteId, since, until);
  }

  recentEvents(siteId: string, type: string, limit: number): EventRow[] {
    return this.q.recentEvents.all(siteId, type, limit);
  }

  eventTypes(siteId: string, since: number) {
    return this.q.eventTypes.all(siteId, since);
  }

  /** Newest first: events, conversions, scores and leads of one profile. */
  timeline(siteId: string, profileId: string, limit: number): TimelineItem[] {
    const p = [profileId, siteId] as const;
    return this.q.timeline.all(...p, ...p, ...p, ...p, limit);
  }

  /** Counts of a time window; revenue per currency (amounts in different currencies are never added up). */
  window(siteId: string, since: number, until: number) {
    return {
      ...this.q.sessions.get(siteId, since, until)!,
      ...this.q.conversions.get(siteId, since, until)!,
      revenueByCurrency: this.q.revenueByCurrency.all(siteId, since, until),
      leads: this.q.leadCount.get(siteId, since, until)!.n,
    };
  }

  revenueByCurrency(siteId: string, since: number, until: number) {
    return this.q.revenueByCurrency.all(siteId, since, until);
  }
}

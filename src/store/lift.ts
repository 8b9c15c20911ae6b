import type { Sql } from './sql.js';

/** One exposed visitor of a window: whether they were held out (saw defaults). `mixed`: seen in both groups (left out). */
export interface ExposedVisitorRow {
  visitor_id: string;
  holdout_max: number;
  holdout_min: number;
}

export interface VisitorConversionRow {
  visitor_id: string;
  conversions: number;
  revenue: number;
}

export interface SegmentWindowRow {
  segment_id: string;
  sessions: number;
  visitors: number;
}

export interface SegmentConversionRow {
  segment_id: string;
  converting_sessions: number;
  conversions: number;
  revenue: number;
}

/** Visitors who are members of a segment now: by the profile of their exposure, or by their visitor identity. */
const IN_SEGMENT = `(e.profile_id IN (SELECT m.profile_id FROM segment_members m WHERE m.segment_id = ? AND m.site_id = e.site_id)
  OR EXISTS (SELECT 1 FROM identities i JOIN segment_members m ON m.profile_id = i.profile_id
    WHERE i.site_id = e.site_id AND i.kind = 'visitor' AND i.value = e.visitor_id AND m.segment_id = ?))`;

/** Read side of the lift (holdout against personalized) and per-segment analytics. Every query is scoped by site. */
export class LiftRepo {
  constructor(private readonly x: Sql) {}

  /** Distinct visitors with an exposure in [since, until), optionally only current members of a segment. */
  async exposedVisitors(siteId: string, since: number, until: number, segmentId?: string): Promise<ExposedVisitorRow[]> {
    const seg = segmentId === undefined ? '' : ` AND ${IN_SEGMENT}`;
    const params: unknown[] = [siteId, since, until];
    if (segmentId !== undefined) params.push(segmentId, segmentId);
    const rows = await this.x.all<ExposedVisitorRow>(
      `SELECT e.visitor_id, max(e.holdout) AS holdout_max, min(e.holdout) AS holdout_min FROM exposures e
       WHERE e.site_id = ? AND e.created_at >= ? AND e.created_at < ?${seg} GROUP BY e.visitor_id`,
      params,
    );
    return rows.map((r) => ({ visitor_id: r.visitor_id, holdout_max: Number(r.holdout_max), holdout_min: Number(r.holdout_min) }));
  }

  /** Conversions per visitor in [since, until) (through the conversion's session), revenue in `currency` only. */
  async visitorConversions(siteId: string, since: number, until: number, currency: string): Promise<VisitorConversionRow[]> {
    const rows = await this.x.all<VisitorConversionRow>(
      `SELECT s.visitor_id, count(*) AS conversions, coalesce(sum(CASE WHEN c.currency = ? THEN coalesce(c.revenue, 0) ELSE 0 END), 0) AS revenue
       FROM conversions c JOIN sessions s ON s.site_id = c.site_id AND s.id = c.session_id
       WHERE c.site_id = ? AND c.created_at >= ? AND c.created_at < ? AND s.visitor_id IS NOT NULL GROUP BY s.visitor_id`,
      [currency, siteId, since, until],
    );
    return rows.map((r) => ({ visitor_id: r.visitor_id, conversions: Number(r.conversions), revenue: Number(r.revenue) }));
  }

  /** Sessions started in [since, until) and their distinct visitors, per segment the session's profile is a member of now. */
  async segmentSessions(siteId: string, since: number, until: number): Promise<SegmentWindowRow[]> {
    const rows = await this.x.all<SegmentWindowRow>(
      `SELECT m.segment_id, count(*) AS sessions, count(DISTINCT coalesce(s.visitor_id, s.profile_id)) AS visitors
       FROM sessions s JOIN segment_members m ON m.profile_id = s.profile_id AND m.site_id = s.site_id
       WHERE s.site_id = ? AND s.first_seen >= ? AND s.first_seen < ? GROUP BY m.segment_id`,
      [siteId, since, until],
    );
    return rows.map((r) => ({ segment_id: r.segment_id, sessions: Number(r.sessions), visitors: Number(r.visitors) }));
  }

  /** Conversions recorded in [since, until) per segment of the converting profile; revenue in `currency` only. */
  async segmentConversions(siteId: string, since: number, until: number, currency: string): Promise<SegmentConversionRow[]> {
    const rows = await this.x.all<SegmentConversionRow>(
      `SELECT m.segment_id, count(DISTINCT c.session_id) AS converting_sessions, count(*) AS conversions,
         coalesce(sum(CASE WHEN c.currency = ? THEN coalesce(c.revenue, 0) ELSE 0 END), 0) AS revenue
       FROM conversions c JOIN segment_members m ON m.profile_id = c.profile_id AND m.site_id = c.site_id
       WHERE c.site_id = ? AND c.created_at >= ? AND c.created_at < ? GROUP BY m.segment_id`,
      [currency, siteId, since, until],
    );
    return rows.map((r) => ({
      segment_id: r.segment_id,
      converting_sessions: Number(r.converting_sessions),
      conversions: Number(r.conversions),
      revenue: Number(r.revenue),
    }));
  }
}

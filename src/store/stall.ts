import type { Sql } from './sql.js';

export interface FunnelRow {
  id: string;
  site_id: string;
  name: string;
  /** JSON array of FunnelStep. */
  steps: string;
  created_at: number;
  updated_at: number;
}

export interface StallFindingRow {
  id: string;
  site_id: string;
  funnel_id: string;
  step_position: number;
  step_key: string;
  cohort_key: string;
  cohort_label: string;
  iso_week: string;
  week_start: number;
  baseline_weeks: number;
  pass_rate: number;
  baseline_pass_rate: number;
  sessions: number;
  stalled: number;
  baseline_sessions: number;
  baseline_stalled: number;
  z: number;
  p_value: number;
  value_per_week: number | null;
  currency: string;
  proposed_action: string;
  inbox_item_id: string;
  proposal_id: string;
  created_at: number;
}

export interface ProposalRow {
  id: string;
  site_id: string;
  finding_id: string;
  name: string;
  page_match_type: 'exact' | 'prefix' | 'glob' | null;
  page_pattern: string | null;
  hypothesis: string;
  primary_metric: string;
  created_at: number;
}

export type InboxStatus = 'pending' | 'approved' | 'dismissed';

export interface InboxItemRow {
  id: string;
  site_id: string;
  /** stall: filed by the weekly stall pass (finding_id, proposal_id); draft: a change proposed under propose-only (draft_id). */
  kind: 'stall' | 'draft';
  title: string;
  proposed_action: string;
  finding_id: string | null;
  proposal_id: string | null;
  draft_id: string | null;
  status: InboxStatus;
  decided_by: string | null;
  decided_at: number | null;
  dismiss_reason: string | null;
  experiment_id: string | null;
  created_at: number;
  updated_at: number;
}

/** One session of a scan page: when it started, its highest score and its revenue. */
export interface ScanSession {
  id: string;
  first_seen: number;
  max_score: number | null;
  revenue: number | null;
}

/** One event of a scan page (url: the pageview URL, null for other types or when absent). */
export interface ScanEvent {
  session_id: string;
  type: string;
  ts: number;
  url: unknown;
}

/** Sessions of one scan page: the site's sessions with id in (after, last] that started in [from, to). */
const PAGE = 's.site_id = ? AND s.id > ? AND s.id <= ? AND s.first_seen >= ? AND s.first_seen < ?';

/**
 * Funnels, the stall pass (its scans over sessions and events, its findings and
 * runs) and the inbox of experiment proposals. Methods that write must run inside
 * a write operation.
 */
export class StallRepo {
  constructor(private readonly x: Sql) {}

  // Funnels

  async createFunnel(f: { id: string; siteId: string; name: string; steps: string; now: number }): Promise<boolean> {
    const r = await this.x.run(
      'INSERT INTO funnels (id, site_id, name, steps, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (site_id, name) DO NOTHING',
      [f.id, f.siteId, f.name, f.steps, f.now, f.now],
    );
    return r.changes > 0;
  }

  funnel(siteId: string, id: string): Promise<FunnelRow | undefined> {
    return this.x.get<FunnelRow>('SELECT * FROM funnels WHERE site_id = ? AND id = ?', [siteId, id]);
  }

  funnelByName(siteId: string, name: string): Promise<FunnelRow | undefined> {
    return this.x.get<FunnelRow>('SELECT * FROM funnels WHERE site_id = ? AND name = ?', [siteId, name]);
  }

  funnels(siteId: string): Promise<FunnelRow[]> {
    return this.x.all<FunnelRow>('SELECT * FROM funnels WHERE site_id = ? ORDER BY name, id', [siteId]);
  }

  async updateFunnel(siteId: string, id: string, f: { name: string; steps: string; now: number }): Promise<void> {
    await this.x.run('UPDATE funnels SET name = ?, steps = ?, updated_at = ? WHERE site_id = ? AND id = ?', [f.name, f.steps, f.now, siteId, id]);
  }

  async deleteFunnel(siteId: string, id: string): Promise<boolean> {
    return (await this.x.run('DELETE FROM funnels WHERE site_id = ? AND id = ?', [siteId, id])).changes > 0;
  }

  // Scans (reads; run on the store, outside write operations)

  /** The last session id of the next page of up to `limit` sessions of the site after `afterId`; null when none is left. */
  async pageEnd(siteId: string, afterId: string, limit: number): Promise<string | null> {
    const row = await this.x.get<{ last: string | null }>(
      'SELECT max(id) AS last FROM (SELECT id FROM sessions WHERE site_id = ? AND id > ? ORDER BY id LIMIT ?) p',
      [siteId, afterId, limit],
    );
    return row?.last ?? null;
  }

  /** The sessions of a page with their highest score and revenue. */
  pageSessions(siteId: string, afterId: string, lastId: string, from: number, to: number): Promise<ScanSession[]> {
    return this.x.all<ScanSession>(
      `SELECT s.id, s.first_seen,
         (SELECT max(sc.score) FROM scores sc WHERE sc.profile_id = s.profile_id AND sc.session_id = s.id AND sc.site_id = s.site_id) AS max_score,
         (SELECT sum(c.revenue) FROM conversions c WHERE c.profile_id = s.profile_id AND c.session_id = s.id AND c.site_id = s.site_id) AS revenue
       FROM sessions s WHERE ${PAGE}`,
      [siteId, afterId, lastId, from, to],
    );
  }

  /** The events of the given types of a page's sessions, in time order. */
  pageEvents(siteId: string, afterId: string, lastId: string, from: number, to: number, types: readonly string[]): Promise<ScanEvent[]> {
    const url = this.x.dialect === 'pg' ? "(e.body::json ->> 'url')" : "json_extract(e.body, '$.url')";
    return this.x.all<ScanEvent>(
      `SELECT e.session_id, e.type, e.ts, CASE WHEN e.type = 'pageview' THEN ${url} END AS url
       FROM sessions s JOIN events e ON e.profile_id = s.profile_id AND e.session_id = s.id AND e.site_id = s.site_id
       WHERE ${PAGE} AND e.type IN (${types.map(() => '?').join(', ')})
       ORDER BY e.ts, e.id`,
      [siteId, afterId, lastId, from, to, ...types],
    );
  }

  /** Segment memberships of the profiles of a page's sessions. */
  pageMemberships(siteId: string, afterId: string, lastId: string, from: number, to: number): Promise<{ session_id: string; segment_id: string }[]> {
    return this.x.all<{ session_id: string; segment_id: string }>(
      `SELECT s.id AS session_id, m.segment_id FROM sessions s JOIN segment_members m ON m.profile_id = s.profile_id WHERE ${PAGE}`,
      [siteId, afterId, lastId, from, to],
    );
  }

  // Findings, proposals, inbox

  /** Files a finding unless one exists for its site, funnel step, cohort and week; true when this call filed it. */
  async insertFinding(f: StallFindingRow): Promise<boolean> {
    const row = await this.x.get<{ id: string }>(
      `INSERT INTO stall_findings (id, site_id, funnel_id, step_position, step_key, cohort_key, cohort_label, iso_week, week_start, baseline_weeks,
         pass_rate, baseline_pass_rate, sessions, stalled, baseline_sessions, baseline_stalled, z, p_value, value_per_week, currency,
         proposed_action, inbox_item_id, proposal_id, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (site_id, funnel_id, step_position, cohort_key, iso_week) DO NOTHING RETURNING id`,
      [
        f.id,
        f.site_id,
        f.funnel_id,
        f.step_position,
        f.step_key,
        f.cohort_key,
        f.cohort_label,
        f.iso_week,
        f.week_start,
        f.baseline_weeks,
        f.pass_rate,
        f.baseline_pass_rate,
        f.sessions,
        f.stalled,
        f.baseline_sessions,
        f.baseline_stalled,
        f.z,
        f.p_value,
        f.value_per_week,
        f.currency,
        f.proposed_action,
        f.inbox_item_id,
        f.proposal_id,
        f.created_at,
      ],
    );
    return row !== undefined;
  }

  findings(siteId: string, filter: { isoWeek?: string | undefined; funnelId?: string | undefined; limit: number }): Promise<StallFindingRow[]> {
    const where = ['site_id = ?'];
    const params: unknown[] = [siteId];
    if (filter.isoWeek !== undefined) {
      where.push('iso_week = ?');
      params.push(filter.isoWeek);
    }
    if (filter.funnelId !== undefined) {
      where.push('funnel_id = ?');
      params.push(filter.funnelId);
    }
    return this.x.all<StallFindingRow>(`SELECT * FROM stall_findings WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT ?`, [
      ...params,
      filter.limit,
    ]);
  }

  finding(siteId: string, id: string): Promise<StallFindingRow | undefined> {
    return this.x.get<StallFindingRow>('SELECT * FROM stall_findings WHERE site_id = ? AND id = ?', [siteId, id]);
  }

  async insertProposal(p: ProposalRow): Promise<void> {
    await this.x.run(
      'INSERT INTO experiment_proposals (id, site_id, finding_id, name, page_match_type, page_pattern, hypothesis, primary_metric, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
      [p.id, p.site_id, p.finding_id, p.name, p.page_match_type, p.page_pattern, p.hypothesis, p.primary_metric, p.created_at],
    );
  }

  proposal(siteId: string, id: string): Promise<ProposalRow | undefined> {
    return this.x.get<ProposalRow>('SELECT * FROM experiment_proposals WHERE site_id = ? AND id = ?', [siteId, id]);
  }

  async insertInboxItem(
    i: Omit<InboxItemRow, 'decided_by' | 'decided_at' | 'dismiss_reason' | 'experiment_id' | 'updated_at' | 'status' | 'draft_id' | 'kind'> & { kind: 'stall' },
  ): Promise<void> {
    await this.x.run(
      `INSERT INTO inbox_items (id, site_id, kind, title, proposed_action, finding_id, proposal_id, status, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)`,
      [i.id, i.site_id, i.kind, i.title, i.proposed_action, i.finding_id, i.proposal_id, i.created_at, i.created_at],
    );
  }

  /** Files a draft (a change proposed under propose-only) in the inbox. Writes: call inside a write operation. */
  async insertDraftItem(i: { id: string; siteId: string; title: string; proposedAction: string; draftId: string; now: number }): Promise<void> {
    await this.x.run(
      `INSERT INTO inbox_items (id, site_id, kind, title, proposed_action, draft_id, status, created_at, updated_at)
       VALUES (?, ?, 'draft', ?, ?, ?, 'pending', ?, ?)`,
      [i.id, i.siteId, i.title, i.proposedAction, i.draftId, i.now, i.now],
    );
  }

  /** Keeps a pending draft's item in step with the draft (a draft segment edited before approval). */
  async retitleDraftItem(siteId: string, draftId: string, title: string, proposedAction: string, now: number): Promise<void> {
    await this.x.run("UPDATE inbox_items SET title = ?, proposed_action = ?, updated_at = ? WHERE site_id = ? AND draft_id = ? AND status = 'pending'", [
      title,
      proposedAction,
      now,
      siteId,
      draftId,
    ]);
  }

  /** The inbox item of a draft. */
  draftItem(siteId: string, draftId: string): Promise<InboxItemRow | undefined> {
    return this.x.get<InboxItemRow>('SELECT * FROM inbox_items WHERE site_id = ? AND draft_id = ?', [siteId, draftId]);
  }

  inboxItem(siteId: string, id: string): Promise<InboxItemRow | undefined> {
    return this.x.get<InboxItemRow>('SELECT * FROM inbox_items WHERE site_id = ? AND id = ?', [siteId, id]);
  }

  inbox(siteId: string, status: InboxStatus | undefined, limit: number): Promise<InboxItemRow[]> {
    return status === undefined
      ? this.x.all<InboxItemRow>('SELECT * FROM inbox_items WHERE site_id = ? ORDER BY created_at DESC, id DESC LIMIT ?', [siteId, limit])
      : this.x.all<InboxItemRow>('SELECT * FROM inbox_items WHERE site_id = ? AND status = ? ORDER BY created_at DESC, id DESC LIMIT ?', [
          siteId,
          status,
          limit,
        ]);
  }

  /** Decides a pending item; false when it was no longer pending (decided concurrently). */
  async decide(
    siteId: string,
    id: string,
    d: { status: 'approved' | 'dismissed'; by: string; at: number; reason: string | null; experimentId: string | null },
  ): Promise<boolean> {
    const r = await this.x.run(
      `UPDATE inbox_items SET status = ?, decided_by = ?, decided_at = ?, dismiss_reason = ?, experiment_id = ?, updated_at = ?
       WHERE site_id = ? AND id = ? AND status = 'pending'`,
      [d.status, d.by, d.at, d.reason, d.experimentId, d.at, siteId, id],
    );
    return r.changes > 0;
  }

  // The draft experiment an approval creates (core schema tables pages, experiments, experiment_arms)

  /** The page row of a pattern, created (source manual, named after the pattern) when the site has none. */
  async ensurePage(siteId: string, matchType: string, pattern: string, id: string, now: number): Promise<string> {
    await this.x.run(
      `INSERT INTO pages (id, site_id, name, match_type, pattern, source, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'manual', ?, ?)
       ON CONFLICT (site_id, match_type, pattern) DO NOTHING`,
      [id, siteId, pattern, matchType, pattern, now, now],
    );
    const row = await this.x.get<{ id: string }>('SELECT id FROM pages WHERE site_id = ? AND match_type = ? AND pattern = ?', [siteId, matchType, pattern]);
    return row!.id;
  }

  async insertDraftExperiment(e: { id: string; siteId: string; name: string; pageId: string; createdBy: string; armId: string; now: number }): Promise<void> {
    await this.x.run(
      `INSERT INTO experiments (id, site_id, name, page_id, zone_id, status, seed, primary_metric, created_by, created_at, updated_at)
       VALUES (?, ?, ?, ?, NULL, 'draft', ?, 'conversion', ?, ?, ?)`,
      [e.id, e.siteId, e.name, e.pageId, e.id, e.createdBy, e.now, e.now],
    );
    await this.x.run(
      `INSERT INTO experiment_arms (id, site_id, experiment_id, label, is_control, variant_id, weight, position) VALUES (?, ?, ?, 'control', 1, NULL, 1, 0)`,
      [e.armId, e.siteId, e.id],
    );
  }

  // Runs of the scheduled pass

  async ranWeek(siteId: string, isoWeek: string): Promise<boolean> {
    return (await this.x.get('SELECT 1 AS x FROM stall_runs WHERE site_id = ? AND iso_week = ?', [siteId, isoWeek])) !== undefined;
  }

  async recordRun(siteId: string, isoWeek: string, findings: number, now: number): Promise<void> {
    await this.x.run('INSERT INTO stall_runs (site_id, iso_week, findings, ran_at) VALUES (?, ?, ?, ?) ON CONFLICT (site_id, iso_week) DO NOTHING', [
      siteId,
      isoWeek,
      findings,
      now,
    ]);
  }
}

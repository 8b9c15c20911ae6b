import type { Sql } from './sql.js';
import { newId } from './ids.js';
import { whereOf } from './where.js';
import { TOUCH_INTERVAL_MS } from './profiles.js';

export type CampaignStatus = 'draft' | 'live' | 'paused' | 'closed';
export type CampaignComponentKind = 'segment' | 'variant' | 'placement' | 'experiment' | 'trigger';
export type CampaignAction = 'launch' | 'pause' | 'close';

export interface CampaignRow {
  id: string;
  site_id: string;
  name: string;
  description: string | null;
  status: CampaignStatus;
  created_by: string;
  first_launched_at: number | null;
  live_since: number | null;
  live_ms: number;
  paused_at: number | null;
  closed_at: number | null;
  closed_by: string | null;
  /** JSON outcome snapshot taken at close. */
  outcome: string | null;
  created_at: number;
  updated_at: number;
}

export interface CampaignComponentRow {
  id: string;
  site_id: string;
  campaign_id: string;
  kind: CampaignComponentKind;
  ref_id: string;
  required: number;
  /** Order of addition within the campaign (steps of one kind run in this order). */
  position: number;
  created_at: number;
}

export interface CampaignRunRow {
  id: string;
  site_id: string;
  campaign_id: string;
  /** 1, 2, ... per campaign, in the order the runs happened. */
  seq: number;
  action: CampaignAction;
  result: 'applied' | 'rolled_back';
  /** JSON array of step outcomes. */
  steps: string;
  actor: string;
  created_at: number;
}

/** Aggregates of one group of exposed visitors (the campaign's, or the holdout on the same zones). */
export interface ExposureGroupStats {
  /** Distinct exposed visitor ids. */
  visitors: number;
  /** Distinct profiles of those visitors. */
  profiles: number;
  sessions: number;
  conversions: number;
  /** Revenue of the conversions in the site currency. */
  revenue: number;
  /** Profiles with at least one conversion. */
  converters: number;
  leads: number;
}

// The variants whose exposures count for a campaign: its variant components and the variants of its placements.
const CAMPAIGN_VARIANTS = `SELECT ref_id FROM campaign_components WHERE campaign_id = ? AND kind = 'variant'
  UNION SELECT p.variant_id FROM campaign_components cc JOIN placements p ON p.id = cc.ref_id AND p.site_id = cc.site_id
  WHERE cc.campaign_id = ? AND cc.kind = 'placement'`;
const CAMPAIGN_EXPERIMENTS = `SELECT ref_id FROM campaign_components WHERE campaign_id = ? AND kind = 'experiment'`;
// The zones a campaign changes (for the holdout comparison): zones of its variants, placements and tests.
const CAMPAIGN_ZONES = `SELECT v.zone_id FROM campaign_components cc JOIN variants v ON v.id = cc.ref_id AND v.site_id = cc.site_id
  WHERE cc.campaign_id = ? AND cc.kind = 'variant'
  UNION SELECT p.zone_id FROM campaign_components cc JOIN placements p ON p.id = cc.ref_id AND p.site_id = cc.site_id
  WHERE cc.campaign_id = ? AND cc.kind = 'placement'
  UNION SELECT coalesce(e.zone_id, z.id) FROM campaign_components cc JOIN experiments e ON e.id = cc.ref_id AND e.site_id = cc.site_id
  LEFT JOIN zones z ON e.zone_id IS NULL AND z.page_id = e.page_id
  WHERE cc.campaign_id = ? AND cc.kind = 'experiment'`;

/**
 * The statistics of one exposed group. `exposed`: the group's visitors with their first exposure in the
 * window. Each visitor is counted as the profile its visitor identity names now (else the one the exposure
 * recorded), as the layout tests count their arms; a profile's first exposure is its visitors' earliest.
 * Its sessions are those active at or after that first exposure and before the end (last_seen is refreshed at
 * most every TOUCH_INTERVAL_MS, so a session last touched that long before the exposure counts); its
 * conversions and leads are those from the first exposure to the end. Every join goes through an index
 * (identities primary key, sessions/conversions/leads by profile; CROSS JOIN makes SQLite keep the profiles
 * as the outer loop, PostgreSQL plans it as a plain join). Conversions and leads are not filtered by site
 * again: the profiles come from the site's own exposures and identities, and a filter on site_id would
 * steer SQLite to the (site_id, created_at) index, scanning the whole window once per profile. Parameters after the group's own:
 * site, site, end, end, currency, end.
 */
function groupStatsSql(exposedFilter: string): string {
  return `WITH exposed AS (
  SELECT e.visitor_id, min(e.created_at) AS first_at, max(e.profile_id) AS exposure_profile FROM exposures e
  WHERE e.site_id = ? AND e.created_at >= ? AND e.created_at <= ? AND ${exposedFilter}
  GROUP BY e.visitor_id
), profs AS (
  SELECT coalesce(i.profile_id, x.exposure_profile) AS profile_id, min(x.first_at) AS first_at FROM exposed x
  LEFT JOIN identities i ON i.site_id = ? AND i.kind = 'visitor' AND i.value = x.visitor_id
  WHERE coalesce(i.profile_id, x.exposure_profile) IS NOT NULL
  GROUP BY coalesce(i.profile_id, x.exposure_profile)
), xs AS (
  SELECT s.id FROM profs p CROSS JOIN sessions s
  WHERE s.profile_id = p.profile_id AND s.site_id = ? AND s.last_seen >= p.first_at - ${TOUCH_INTERVAL_MS} AND s.first_seen <= ?
), xc AS (
  SELECT c.id, c.revenue, c.currency, c.profile_id FROM profs p CROSS JOIN conversions c
  WHERE c.profile_id = p.profile_id AND c.created_at >= p.first_at AND c.created_at <= ?
)
SELECT (SELECT count(*) FROM exposed) AS visitors,
  (SELECT count(*) FROM profs) AS profiles,
  (SELECT count(*) FROM xs) AS sessions,
  (SELECT count(*) FROM xc) AS conversions,
  (SELECT coalesce(sum(revenue), 0) FROM xc WHERE currency = ?) AS revenue,
  (SELECT count(DISTINCT profile_id) FROM xc) AS converters,
  (SELECT count(*) FROM profs p CROSS JOIN leads l
     WHERE l.profile_id = p.profile_id AND l.created_at >= p.first_at AND l.created_at <= ?) AS leads`;
}

const TREATED_STATS = groupStatsSql(`e.holdout = 0 AND (e.variant_id IN (${CAMPAIGN_VARIANTS}) OR e.experiment_id IN (${CAMPAIGN_EXPERIMENTS}))`);
const HOLDOUT_STATS = groupStatsSql(`e.holdout = 1 AND e.zone_id IN (${CAMPAIGN_ZONES})`);

/**
 * Campaigns, their components and runs, and the exposure statistics of the close snapshot. The components'
 * own changes go through their areas' domain functions (see src/domain/campaigns/runners.ts). Methods that
 * write must run inside a write operation; every query is scoped by site.
 */
export class CampaignsRepo {
  constructor(private readonly x: Sql) {}

  // ---- campaigns

  async create(c: { siteId: string; name: string; description: string | null; createdBy: string; now: number }): Promise<CampaignRow> {
    const id = newId('cmp');
    await this.x.run(
      `INSERT INTO campaigns (id, site_id, name, description, status, created_by, created_at, updated_at) VALUES (?, ?, ?, ?, 'draft', ?, ?, ?)`,
      [id, c.siteId, c.name, c.description, c.createdBy, c.now, c.now],
    );
    return (await this.get(c.siteId, id))!;
  }

  get(siteId: string, id: string): Promise<CampaignRow | undefined> {
    return this.x.get<CampaignRow>('SELECT * FROM campaigns WHERE id = ? AND site_id = ?', [id, siteId]);
  }

  /** Newest first; keyset paging on id (ids sort by creation time). */
  list(siteId: string, opts: { status?: CampaignStatus | undefined; before?: string | undefined; limit: number }): Promise<CampaignRow[]> {
    const w = whereOf([
      ['site_id = ?', siteId],
      ['status = ?', opts.status],
      ['id < ?', opts.before],
    ]);
    return this.x.all<CampaignRow>(`SELECT * FROM campaigns ${w.sql} ORDER BY id DESC LIMIT ?`, [...w.params, opts.limit]);
  }

  async update(siteId: string, id: string, patch: { name: string; description: string | null; now: number }): Promise<void> {
    await this.x.run('UPDATE campaigns SET name = ?, description = ?, updated_at = ? WHERE id = ? AND site_id = ?', [
      patch.name,
      patch.description,
      patch.now,
      id,
      siteId,
    ]);
  }

  /** Writes the lifecycle fields of a campaign (status and its timestamps) as the domain computed them. */
  /**
   * Writes the lifecycle fields of a campaign (status and its timestamps) as the domain computed them, only
   * while it is still in status `from` (two concurrent launches: the second finds 0 rows); returns whether it did.
   */
  async setLifecycle(
    siteId: string,
    id: string,
    from: CampaignStatus,
    s: Pick<CampaignRow, 'status' | 'first_launched_at' | 'live_since' | 'live_ms' | 'paused_at' | 'closed_at' | 'closed_by' | 'outcome'>,
    now: number,
  ): Promise<boolean> {
    const r = await this.x.run(
      `UPDATE campaigns SET status = ?, first_launched_at = ?, live_since = ?, live_ms = ?, paused_at = ?, closed_at = ?, closed_by = ?,
         outcome = ?, updated_at = ? WHERE id = ? AND site_id = ? AND status = ?`,
      [s.status, s.first_launched_at, s.live_since, s.live_ms, s.paused_at, s.closed_at, s.closed_by, s.outcome, now, id, siteId, from],
    );
    return r.changes === 1;
  }

  // ---- components

  components(siteId: string, campaignId: string): Promise<CampaignComponentRow[]> {
    return this.x.all<CampaignComponentRow>('SELECT * FROM campaign_components WHERE campaign_id = ? AND site_id = ? ORDER BY position', [
      campaignId,
      siteId,
    ]);
  }

  component(siteId: string, campaignId: string, kind: CampaignComponentKind, refId: string): Promise<CampaignComponentRow | undefined> {
    return this.x.get<CampaignComponentRow>('SELECT * FROM campaign_components WHERE campaign_id = ? AND site_id = ? AND kind = ? AND ref_id = ?', [
      campaignId,
      siteId,
      kind,
      refId,
    ]);
  }

  async addComponent(c: { siteId: string; campaignId: string; kind: CampaignComponentKind; refId: string; required: boolean; now: number }): Promise<CampaignComponentRow> {
    const id = newId('cmc');
    await this.x.run(
      `INSERT INTO campaign_components (id, site_id, campaign_id, kind, ref_id, required, position, created_at)
       SELECT ?, ?, ?, ?, ?, ?, coalesce(max(position), 0) + 1, ? FROM campaign_components WHERE campaign_id = ?`,
      [id, c.siteId, c.campaignId, c.kind, c.refId, c.required ? 1 : 0, c.now, c.campaignId],
    );
    return (await this.x.get<CampaignComponentRow>('SELECT * FROM campaign_components WHERE id = ?', [id]))!;
  }

  async setComponentRequired(siteId: string, id: string, required: boolean): Promise<void> {
    await this.x.run('UPDATE campaign_components SET required = ? WHERE id = ? AND site_id = ?', [required ? 1 : 0, id, siteId]);
  }

  async removeComponent(siteId: string, id: string): Promise<void> {
    await this.x.run('DELETE FROM campaign_components WHERE id = ? AND site_id = ?', [id, siteId]);
  }

  async componentCounts(siteId: string, campaignIds: readonly string[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    if (campaignIds.length === 0) return out;
    const rows = await this.x.all<{ campaign_id: string; n: number }>(
      `SELECT campaign_id, count(*) AS n FROM campaign_components WHERE site_id = ? AND campaign_id IN (${campaignIds.map(() => '?').join(', ')}) GROUP BY campaign_id`,
      [siteId, ...campaignIds],
    );
    for (const r of rows) out.set(r.campaign_id, Number(r.n));
    return out;
  }

  // ---- runs

  async addRun(r: { siteId: string; campaignId: string; action: CampaignAction; result: CampaignRunRow['result']; steps: unknown; actor: string; now: number }): Promise<CampaignRunRow> {
    const id = newId('cmr');
    await this.x.run(
      `INSERT INTO campaign_runs (id, site_id, campaign_id, seq, action, result, steps, actor, created_at)
       SELECT ?, ?, ?, coalesce(max(seq), 0) + 1, ?, ?, ?, ?, ? FROM campaign_runs WHERE campaign_id = ?`,
      [id, r.siteId, r.campaignId, r.action, r.result, JSON.stringify(r.steps), r.actor, r.now, r.campaignId],
    );
    return (await this.x.get<CampaignRunRow>('SELECT * FROM campaign_runs WHERE id = ?', [id]))!;
  }

  /** Newest first. */
  runs(siteId: string, campaignId: string, limit: number): Promise<CampaignRunRow[]> {
    return this.x.all<CampaignRunRow>('SELECT * FROM campaign_runs WHERE campaign_id = ? AND site_id = ? ORDER BY seq DESC LIMIT ?', [
      campaignId,
      siteId,
      limit,
    ]);
  }

  // ---- the outcome snapshot at close

  /**
   * Exposure statistics of a campaign between `from` and `to` (ms, inclusive): the visitors the campaign's
   * variants, placements and tests were shown to (not in the holdout), and the holdout visitors of the same zones.
   */
  async exposureStats(siteId: string, campaignId: string, from: number, to: number, currency: string): Promise<{ treated: ExposureGroupStats; holdout: ExposureGroupStats }> {
    const tail = [siteId, siteId, to, to, currency, to];
    const treated = await this.x.get<ExposureGroupStats>(TREATED_STATS, [siteId, from, to, campaignId, campaignId, campaignId, ...tail]);
    const holdout = await this.x.get<ExposureGroupStats>(HOLDOUT_STATS, [siteId, from, to, campaignId, campaignId, campaignId, ...tail]);
    return { treated: numbers(treated!), holdout: numbers(holdout!) };
  }
}

function numbers(r: ExposureGroupStats): ExposureGroupStats {
  return {
    visitors: Number(r.visitors),
    sessions: Number(r.sessions),
    profiles: Number(r.profiles),
    conversions: Number(r.conversions),
    revenue: Number(r.revenue),
    converters: Number(r.converters),
    leads: Number(r.leads),
  };
}

import type { Sql } from './sql.js';
import type { MatchType } from './pages.js';

/** The Core Web Vitals a layout test measures (the domain's guardrail judges them). */
export const VITALS = ['lcp', 'inp', 'cls'] as const;
export type Vital = (typeof VITALS)[number];

/** What an arm's visitors did after their first exposure: the figures a test's results are computed from. */
export interface ArmAggregate {
  visitors: number;
  /** Visitors with at least one conversion after their first exposure. */
  converters: number;
  /** Conversions (orders) of those visitors after their first exposure. */
  conversions: number;
  revenue: number;
  /** Sum over visitors of (their revenue)², for the variance of revenue per visitor. */
  revenueSq: number;
  /** Visitors with the custom metric event after their first exposure (custom_event tests). */
  eventVisitors: number;
}

/** The 75th percentile by nearest rank: the ⌈0.75·n⌉-th smallest value (1-based). */
export function p75Rank(n: number): number {
  return Math.max(1, Math.ceil(0.75 * n));
}

export interface ExperimentRow {
  id: string;
  site_id: string;
  name: string;
  page_id: string | null;
  zone_id: string | null;
  status: 'draft' | 'running' | 'paused' | 'ended' | 'shipped';
  seed: string;
  primary_metric: 'conversion' | 'revenue_per_visitor' | 'custom_event';
  metric_event: string | null;
  guardrail_metrics: string;
  stop_early: number;
  scheduled_end_at: number | null;
  started_at: number | null;
  paused_at: number | null;
  ended_at: number | null;
  end_reason: string | null;
  winning_arm_id: string | null;
  shipped_arm_id: string | null;
  shipped_at: number | null;
  created_by: string;
  created_at: number;
  updated_at: number;
  pause_reason: string | null;
  guardrail_since: number;
  ended_by: string | null;
  shipped_by: string | null;
}

export interface ArmRow {
  id: string;
  site_id: string;
  experiment_id: string;
  label: string;
  is_control: number;
  variant_id: string | null;
  weight: number;
  position: number;
}

export interface NewExperiment {
  id: string;
  siteId: string;
  name: string;
  pageId: string | null;
  zoneId: string | null;
  seed: string;
  primaryMetric: ExperimentRow['primary_metric'];
  metricEvent: string | null;
  guardrailMetrics: string;
  stopEarly: boolean;
  scheduledEndAt: number | null;
  createdBy: string;
  now: number;
}

export interface NewArm {
  id: string;
  label: string;
  isControl: boolean;
  variantId: string | null;
  weight: number;
}

const VITAL_COLUMNS: Readonly<Record<Vital, string>> = { lcp: 'lcp', inp: 'inp', cls: 'cls' };

/**
 * Per-arm aggregates of a test, from its first arms (first_arms: one row per visitor and test, kept by the
 * statements that insert exposures; migrations 29 / PostgreSQL 21). A visitor belongs to the arm of its first
 * exposure to the test outside the holdout (by created_at, ties broken by arm id), and counts when that exposure is
 * before `until`; its profile is the one the visitor identity names now, else the largest profile id of its
 * exposures to the test (first_arms.profile_id, over all of them: the exposures read before counted only those
 * before `until`, which differs only for a visitor without an identity whose exposures after `until` carry a larger
 * profile id; svc writes a profile id on an exposure only from the visitor's identity, and the only delete of an
 * identity is an erasure, which deletes that profile's conversions and events too). Conversions and metric events
 * count from the first exposure until `until`. They are joined by profile id alone: the profiles come from this
 * site's exposures and identities (profile ids are unique across sites), and a site_id term would lead SQLite to the
 * (site_id, created_at) index and a scan of every conversion per visitor instead of the profile index.
 * test/unit/store-experiment-results.test.ts holds the results equal to the ranking of the exposures read before.
 */
const AGGREGATES = `
WITH mapped AS (
  SELECT f.visitor_id, f.arm_id, f.created_at AS first_at, COALESCE(i.profile_id, f.profile_id) AS profile_id
    FROM first_arms f LEFT JOIN identities i ON i.site_id = f.site_id AND i.kind = 'visitor' AND i.value = f.visitor_id
   WHERE f.experiment_id = ? AND f.site_id = ? AND f.created_at < ?
), conv AS (
  SELECT m.visitor_id, m.arm_id, COUNT(c.id) AS n_conv, COALESCE(SUM(c.revenue), 0) AS rev
    FROM mapped m LEFT JOIN conversions c ON c.profile_id = m.profile_id AND c.created_at >= m.first_at AND c.created_at < ?
   GROUP BY m.visitor_id, m.arm_id
), evt AS (
  SELECT m.visitor_id, COUNT(ev.id) AS n_evt
    FROM mapped m JOIN events ev ON ev.profile_id = m.profile_id AND ev.type = ? AND ev.ts >= m.first_at AND ev.ts < ?
   GROUP BY m.visitor_id
)
SELECT conv.arm_id, COUNT(*) AS visitors,
  SUM(CASE WHEN conv.n_conv > 0 THEN 1 ELSE 0 END) AS converters,
  SUM(conv.n_conv) AS conversions,
  SUM(conv.rev) AS revenue,
  SUM(conv.rev * conv.rev) AS revenue_sq,
  SUM(CASE WHEN evt.n_evt > 0 THEN 1 ELSE 0 END) AS event_visitors
FROM conv LEFT JOIN evt ON evt.visitor_id = conv.visitor_id
GROUP BY conv.arm_id`;

/** Layout tests, their arms, and the Core Web Vitals their visitors report. Writes run inside a write operation. */
export class ExperimentsRepo {
  constructor(private readonly x: Sql) {}

  async insert(e: NewExperiment, arms: readonly NewArm[]): Promise<void> {
    await this.x.run(
      `INSERT INTO experiments (id, site_id, name, page_id, zone_id, status, seed, primary_metric, metric_event, guardrail_metrics, stop_early,
        scheduled_end_at, created_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'draft', ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [e.id, e.siteId, e.name, e.pageId, e.zoneId, e.seed, e.primaryMetric, e.metricEvent, e.guardrailMetrics, e.stopEarly ? 1 : 0, e.scheduledEndAt, e.createdBy, e.now, e.now],
    );
    await this.insertArms(e.siteId, e.id, arms);
  }

  private async insertArms(siteId: string, experimentId: string, arms: readonly NewArm[]): Promise<void> {
    let position = 0;
    for (const a of arms) {
      await this.x.run(
        'INSERT INTO experiment_arms (id, site_id, experiment_id, label, is_control, variant_id, weight, position) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
        [a.id, siteId, experimentId, a.label, a.isControl ? 1 : 0, a.variantId, a.weight, position++],
      );
    }
  }

  /** Replaces every arm of a draft test. */
  async replaceArms(siteId: string, experimentId: string, arms: readonly NewArm[]): Promise<void> {
    await this.x.run('DELETE FROM experiment_arms WHERE experiment_id = ? AND site_id = ?', [experimentId, siteId]);
    await this.insertArms(siteId, experimentId, arms);
  }

  get(siteId: string, id: string): Promise<ExperimentRow | undefined> {
    return this.x.get<ExperimentRow>('SELECT * FROM experiments WHERE id = ? AND site_id = ?', [id, siteId]);
  }

  list(siteId: string, status: string | undefined, limit: number): Promise<ExperimentRow[]> {
    return status === undefined
      ? this.x.all<ExperimentRow>('SELECT * FROM experiments WHERE site_id = ? ORDER BY created_at DESC, id DESC LIMIT ?', [siteId, limit])
      : this.x.all<ExperimentRow>('SELECT * FROM experiments WHERE site_id = ? AND status = ? ORDER BY created_at DESC, id DESC LIMIT ?', [
          siteId,
          status,
          limit,
        ]);
  }

  arms(siteId: string, experimentId: string): Promise<ArmRow[]> {
    return this.x.all<ArmRow>('SELECT * FROM experiment_arms WHERE experiment_id = ? AND site_id = ? ORDER BY position', [experimentId, siteId]);
  }

  async update(
    id: string,
    f: {
      name: string;
      primaryMetric: string;
      metricEvent: string | null;
      guardrailMetrics: string;
      stopEarly: boolean;
      scheduledEndAt: number | null;
      seed: string;
      now: number;
    },
  ): Promise<void> {
    await this.x.run(
      `UPDATE experiments SET name = ?, primary_metric = ?, metric_event = ?, guardrail_metrics = ?, stop_early = ?, scheduled_end_at = ?, seed = ?,
        updated_at = ? WHERE id = ?`,
      [f.name, f.primaryMetric, f.metricEvent, f.guardrailMetrics, f.stopEarly ? 1 : 0, f.scheduledEndAt, f.seed, f.now, id],
    );
  }

  async setWeight(armId: string, weight: number): Promise<void> {
    await this.x.run('UPDATE experiment_arms SET weight = ? WHERE id = ?', [weight, armId]);
  }

  async start(id: string, now: number): Promise<void> {
    await this.x.run("UPDATE experiments SET status = 'running', started_at = ?, guardrail_since = ?, updated_at = ? WHERE id = ?", [now, now, now, id]);
  }

  async pause(id: string, reason: string, now: number): Promise<void> {
    await this.x.run("UPDATE experiments SET status = 'paused', paused_at = ?, pause_reason = ?, updated_at = ? WHERE id = ?", [now, reason, now, id]);
  }

  /** Back to running; `guardrailSince` restarts the guardrail's window (after a guardrail pause) or keeps it. */
  async resume(id: string, guardrailSince: number, now: number): Promise<void> {
    await this.x.run(
      "UPDATE experiments SET status = 'running', paused_at = NULL, pause_reason = NULL, guardrail_since = ?, updated_at = ? WHERE id = ?",
      [guardrailSince, now, id],
    );
  }

  async end(id: string, reason: string, winningArmId: string | null, by: string, now: number): Promise<void> {
    await this.x.run(
      "UPDATE experiments SET status = 'ended', ended_at = ?, end_reason = ?, winning_arm_id = ?, ended_by = ?, paused_at = NULL, updated_at = ? WHERE id = ?",
      [now, reason, winningArmId, by, now, id],
    );
  }

  async ship(id: string, armId: string, by: string, now: number): Promise<void> {
    await this.x.run("UPDATE experiments SET status = 'shipped', shipped_arm_id = ?, shipped_at = ?, shipped_by = ?, updated_at = ? WHERE id = ?", [
      armId,
      now,
      by,
      now,
      id,
    ]);
  }

  zone(siteId: string, zoneId: string): Promise<{ id: string; page_id: string } | undefined> {
    return this.x.get('SELECT id, page_id FROM zones WHERE id = ? AND site_id = ?', [zoneId, siteId]);
  }

  page(siteId: string, pageId: string): Promise<{ id: string } | undefined> {
    return this.x.get('SELECT id FROM pages WHERE id = ? AND site_id = ?', [pageId, siteId]);
  }

  variant(siteId: string, variantId: string): Promise<{ id: string; zone_id: string; status: string; page_id: string } | undefined> {
    return this.x.get(
      'SELECT v.id, v.zone_id, v.status, z.page_id FROM variants v JOIN zones z ON z.id = v.zone_id WHERE v.id = ? AND v.site_id = ?',
      [variantId, siteId],
    );
  }

  /** Publishes a variant (ship): it goes live for everyone through the shipped test. */
  async publishVariant(variantId: string, by: string, now: number): Promise<void> {
    await this.x.run(
      `UPDATE variants SET status = 'published', approved_by = COALESCE(approved_by, ?), approved_at = COALESCE(approved_at, ?),
        published_by = ?, published_at = ?, updated_at = ? WHERE id = ?`,
      [by, now, by, now, now, variantId],
    );
  }

  /**
   * Other running or paused tests that would show content in the same zones: for a zone test, a
   * test of the same zone or of its whole page; for a page test, a test of the page or of any zone of it.
   */
  overlapping(siteId: string, id: string, zoneId: string | null, pageId: string): Promise<{ id: string }[]> {
    const base = `SELECT x.id FROM experiments x LEFT JOIN zones z ON z.id = x.zone_id
        WHERE x.site_id = ? AND x.id <> ? AND x.status IN ('running','paused')`;
    return zoneId === null
      ? this.x.all(`${base} AND (x.page_id = ? OR z.page_id = ?)`, [siteId, id, pageId, pageId])
      : this.x.all(`${base} AND (x.zone_id = ? OR x.page_id = ?)`, [siteId, id, zoneId, pageId]);
  }

  async aggregates(siteId: string, experimentId: string, metricEvent: string | null, until: number): Promise<Map<string, ArmAggregate>> {
    const rows = await this.x.all<{
      arm_id: string;
      visitors: number;
      converters: number;
      conversions: number;
      revenue: number;
      revenue_sq: number;
      event_visitors: number;
    }>(AGGREGATES, [experimentId, siteId, until, until, metricEvent ?? '', until]);
    const out = new Map<string, ArmAggregate>();
    for (const r of rows) {
      out.set(r.arm_id, {
        visitors: Number(r.visitors),
        converters: Number(r.converters ?? 0),
        conversions: Number(r.conversions ?? 0),
        revenue: Number(r.revenue ?? 0),
        revenueSq: Number(r.revenue_sq ?? 0),
        eventVisitors: Number(r.event_visitors ?? 0),
      });
    }
    return out;
  }

  /** The visitor's first exposure to a test outside the holdout (the arm it keeps): its first arm. */
  firstExposure(siteId: string, experimentId: string, visitorId: string): Promise<{ arm_id: string; created_at: number } | undefined> {
    return this.x.get('SELECT arm_id, created_at FROM first_arms WHERE site_id = ? AND visitor_id = ? AND experiment_id = ?', [siteId, visitorId, experimentId]);
  }

  /** The arm a live force_arm override puts the visitor in (QA), if any. */
  async forcedArm(siteId: string, experimentId: string, visitorId: string): Promise<string | undefined> {
    const row = await this.x.get<{ arm_id: string | null }>(
      `SELECT arm_id FROM overrides WHERE site_id = ? AND kind = 'force_arm' AND experiment_id = ? AND visitor_id = ? AND lifted_at IS NULL
        ORDER BY set_at DESC LIMIT 1`,
      [siteId, experimentId, visitorId],
    );
    return row?.arm_id ?? undefined;
  }

  /**
   * The visitor's first arms in running tests, with the URL pattern of each test's page (a page test's page, a zone
   * test's zone's page; null when there is none): web vitals count for a test when the event's URL is on its page.
   */
  runningFirstArms(siteId: string, visitorId: string): Promise<{ experiment_id: string; arm_id: string; match_type: MatchType | null; pattern: string | null }[]> {
    return this.x.all(
      `SELECT f.experiment_id, f.arm_id, p.match_type, p.pattern FROM first_arms f JOIN experiments x ON x.id = f.experiment_id
         LEFT JOIN zones z ON z.id = x.zone_id LEFT JOIN pages p ON p.id = COALESCE(x.page_id, z.page_id)
        WHERE f.site_id = ? AND f.visitor_id = ? AND x.status = 'running' AND x.site_id = ?`,
      [siteId, visitorId, siteId],
    );
  }

  async insertVitals(r: {
    siteId: string;
    experimentId: string;
    armId: string;
    lcp: number | null;
    inp: number | null;
    cls: number | null;
    now: number;
  }): Promise<void> {
    await this.x.run('INSERT INTO experiment_vitals (site_id, experiment_id, arm_id, lcp, inp, cls, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)', [
      r.siteId,
      r.experimentId,
      r.armId,
      r.lcp,
      r.inp,
      r.cls,
      r.now,
    ]);
  }

  /** Measurements of a metric on an arm since `since`, and their 75th percentile by nearest rank. */
  async vitalStat(experimentId: string, armId: string, metric: Vital, since: number): Promise<{ n: number; p75: number | null }> {
    const col = VITAL_COLUMNS[metric];
    const n = Number(
      (await this.x.get<{ n: number }>(
        `SELECT COUNT(${col}) AS n FROM experiment_vitals WHERE experiment_id = ? AND arm_id = ? AND created_at >= ?`,
        [experimentId, armId, since],
      ))!.n,
    );
    if (n === 0) return { n, p75: null };
    const rank = p75Rank(n);
    const row = await this.x.get<{ v: number }>(
      `SELECT ${col} AS v FROM experiment_vitals WHERE experiment_id = ? AND arm_id = ? AND created_at >= ? AND ${col} IS NOT NULL
        ORDER BY ${col} LIMIT 1 OFFSET ?`,
      [experimentId, armId, since, rank - 1],
    );
    return { n, p75: row === undefined ? null : Number(row.v) };
  }

  /** Running or paused tests (every site) whose scheduled end has passed. */
  dueToEnd(now: number, limit: number): Promise<ExperimentRow[]> {
    return this.x.all<ExperimentRow>(
      "SELECT * FROM experiments WHERE status IN ('running','paused') AND scheduled_end_at IS NOT NULL AND scheduled_end_at <= ? ORDER BY scheduled_end_at LIMIT ?",
      [now, limit],
    );
  }

  /** Running tests (every site): the worker's early-stopping and guardrail passes. */
  running(afterId: string, limit: number): Promise<ExperimentRow[]> {
    return this.x.all<ExperimentRow>("SELECT * FROM experiments WHERE status = 'running' AND id > ? ORDER BY id LIMIT ?", [afterId, limit]);
  }
}

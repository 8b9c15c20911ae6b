import { AppError } from '../../errors/app-error.js';
import { newId } from '../../store/ids.js';
import type { Store } from '../../store/store.js';
import type { StallFindingRow } from '../../store/stall.js';
import { CATALOGUE } from '../../webhooks/catalogue.js';
import { funnelOf, HIGH_INTENT_KEY, HIGH_INTENT_LABEL, HIGH_INTENT_SCORE, type Funnel } from '../funnels/service.js';
import type { FunnelStep } from '../funnels/schema.js';
import { scanFunnels } from '../funnels/scan.js';
import { benjaminiHochberg, enoughSamples, twoProportionLower } from './stats.js';
import { isoWeekAt, isTimeZone, type IsoWeek } from './week.js';

/** Prior ISO weeks that form the baseline a week is compared with. */
export const BASELINE_WEEKS = 4;
/** False-discovery rate of the Benjamini–Hochberg procedure across cohorts and steps. */
export const FDR = 0.05;

export interface StallPassOptions {
  /** The pass looks at the ISO week (site time zone) containing this instant. */
  asOf: number;
  baselineWeeks?: number;
  highIntentScore?: number;
  /** Sessions per scan page. */
  pageSize?: number;
}

/** One tested (funnel, cohort, step): this week against the baseline. */
export interface StallCandidate {
  funnel: Funnel;
  position: number;
  cohortKey: string;
  cohortLabel: string;
  /** This week: sessions that passed step k−1, and of those, step k. */
  nWeek: number;
  xWeek: number;
  /** Baseline weeks together. */
  nBase: number;
  xBase: number;
  rate: number;
  baselineRate: number;
  z: number;
  p: number;
  /** Revenue per session that passed the step (whole window); null when no revenue is known. */
  revenuePerPass: number | null;
}

export interface StallPassResult {
  isoWeek: IsoWeek;
  baselineWeeks: number;
  sessionsScanned: number;
  tested: number;
  significant: StallCandidate[];
  /** Findings this run filed (a finding already filed for the week is not filed again). */
  filed: StallFindingRow[];
}

const pct = (r: number) => `${(r * 100).toFixed(1)}%`;

/** The page a layout test for a stall at `position` (1-based) runs on: where the cohort is when it stalls. */
export function proposalPage(steps: readonly FunnelStep[], position: number): { match: 'exact' | 'prefix' | 'glob'; pattern: string } | null {
  for (let i = position - 2; i >= 0; i--) {
    const s = steps[i]!;
    if (s.kind === 'page') return { match: s.match, pattern: s.pattern };
  }
  const s = steps[position - 1]!;
  return s.kind === 'page' ? { match: s.match, pattern: s.pattern } : null;
}

/**
 * The weekly stall pass of one site (see README "Funnels and the weekly stall
 * pass"): for every funnel, cohort (high-intent sessions, each segment) and step
 * 2..n, the step-to-step pass rate of the ISO week containing `asOf` against the
 * prior `baselineWeeks` weeks; a one-sided two-proportion z-test where both sides
 * have the minimum samples; Benjamini–Hochberg at 5% across all tests of the site;
 * each significant stall is filed once per site, funnel step, cohort and week
 * (inbox row, experiment proposal, stall.found, one transaction).
 */
export async function runStallPass(store: Store, siteId: string, opts: StallPassOptions): Promise<StallPassResult> {
  const site = await store.sites.get(siteId);
  if (!site) throw new AppError('not_found', `no site ${JSON.stringify(siteId)}`);
  const baselineWeeks = opts.baselineWeeks ?? BASELINE_WEEKS;
  const threshold = opts.highIntentScore ?? HIGH_INTENT_SCORE;
  const tz = site.timezone;
  if (!isTimeZone(tz)) throw new AppError('conflict', `the site's time zone ${JSON.stringify(tz)} is not an IANA time zone this server knows`, { field: 'timezone' });
  const week = isoWeekAt(opts.asOf, tz);
  // bounds: the baseline weeks oldest first, then this week.
  const bounds: number[] = [];
  for (let back = baselineWeeks; back >= 1; back--) bounds.push(isoWeekAt(opts.asOf, tz, back).start);
  bounds.push(week.start, week.end);

  const funnels = (await store.stall.funnels(siteId)).map(funnelOf);
  const segments = await store.segments.list(siteId);
  const labels = new Map<string, string>([[HIGH_INTENT_KEY, HIGH_INTENT_LABEL]]);
  for (const s of segments) labels.set(`segment:${s.id}`, s.name.slice(0, 200));
  const result: StallPassResult = { isoWeek: week, baselineWeeks, sessionsScanned: 0, tested: 0, significant: [], filed: [] };
  if (funnels.length === 0) return result;

  const scan = await scanFunnels(store, {
    siteId,
    funnels,
    bounds,
    needsSegments: segments.length > 0,
    pageSize: opts.pageSize,
    cohortsOf: (s) => {
      const keys = s.segments.filter((id) => labels.has(`segment:${id}`)).map((id) => `segment:${id}`);
      if (s.maxScore !== null && s.maxScore >= threshold) keys.push(HIGH_INTENT_KEY);
      return keys;
    },
  });
  result.sessionsScanned = scan.sessions;

  const nb = baselineWeeks + 1;
  const candidates: StallCandidate[] = [];
  for (const f of funnels) {
    const n = f.steps.length;
    for (const [cohortKey, c] of scan.counts.get(f.id)!) {
      for (let k = 1; k < n; k++) {
        const nWeek = c.reached[baselineWeeks * n + k - 1]!;
        const xWeek = c.reached[baselineWeeks * n + k]!;
        let nBase = 0;
        let xBase = 0;
        for (let b = 0; b < nb - 1; b++) {
          nBase += c.reached[b * n + k - 1]!;
          xBase += c.reached[b * n + k]!;
        }
        if (!enoughSamples(xWeek, nWeek, xBase, nBase)) continue;
        const t = twoProportionLower(xWeek, nWeek, xBase, nBase);
        let passedAll = 0;
        for (let b = 0; b < nb; b++) passedAll += c.reached[b * n + k]!;
        const revenue = c.revenue[k]!;
        candidates.push({
          funnel: f,
          position: k + 1,
          cohortKey,
          cohortLabel: labels.get(cohortKey)!,
          nWeek,
          xWeek,
          nBase,
          xBase,
          rate: t.rate,
          baselineRate: t.baselineRate,
          z: t.z,
          p: t.p,
          revenuePerPass: revenue > 0 && passedAll > 0 ? revenue / passedAll : null,
        });
      }
    }
  }
  result.tested = candidates.length;
  const rejected = benjaminiHochberg(
    candidates.map((c) => c.p),
    FDR,
  );
  result.significant = candidates.filter((c, i) => rejected.has(i) && c.rate < c.baselineRate);
  if (result.significant.length === 0) return result;

  result.filed = await store.write(async (tx) => {
    const filed: StallFindingRow[] = [];
    const now = Date.now();
    for (const c of result.significant) {
      const finding = findingOf(c, { siteId, week, baselineWeeks, currency: site.currency, now });
      if (!(await tx.stall.insertFinding(finding))) continue;
      const step = c.funnel.steps[c.position - 1]!;
      const prev = c.funnel.steps[c.position - 2]!;
      const page = proposalPage(c.funnel.steps, c.position);
      await tx.stall.insertProposal({
        id: finding.proposal_id,
        site_id: siteId,
        finding_id: finding.id,
        name: `Stall at ${step.label} (${c.cohortLabel}, ${week.label})`.slice(0, 200),
        page_match_type: page?.match ?? null,
        page_pattern: page?.pattern ?? null,
        hypothesis: `A layout that makes the way from "${prev.label}" to "${step.label}" clearer brings ${c.cohortLabel} back to the baseline pass rate of ${pct(c.baselineRate)} (this week ${pct(c.rate)}).`,
        primary_metric: 'conversion',
        created_at: now,
      });
      await tx.stall.insertInboxItem({
        id: finding.inbox_item_id,
        site_id: siteId,
        kind: 'stall',
        title: `${c.cohortLabel} stall at ${step.label} in ${c.funnel.name} (${week.label})`.slice(0, 300),
        proposed_action: finding.proposed_action,
        finding_id: finding.id,
        proposal_id: finding.proposal_id,
        created_at: now,
      });
      const payload = CATALOGUE['stall.found'].schema.parse({
        event: 'stall.found',
        site_id: siteId,
        iso_week: week.label,
        funnel_id: c.funnel.id,
        step_position: c.position,
        step: step.key,
        cohort_key: c.cohortKey,
        cohort_label: c.cohortLabel,
        cohort_pass_rate: finding.pass_rate,
        baseline_pass_rate: finding.baseline_pass_rate,
        sessions_per_week: finding.sessions,
        stalled_sessions_per_week: finding.stalled,
        baseline_sessions_per_week: Math.round(finding.baseline_sessions / baselineWeeks),
        baseline_stalled_sessions_per_week: Math.round(finding.baseline_stalled / baselineWeeks),
        value_per_week: finding.value_per_week,
        currency: site.currency,
        proposed_action: finding.proposed_action,
        inbox_item_id: finding.inbox_item_id,
        experiment_proposal_id: finding.proposal_id,
        timestamp: new Date(now).toISOString(),
      });
      await tx.activity.enqueue(siteId, 'stall.found', payload, now);
      filed.push(finding);
    }
    return filed;
  });
  return result;
}

function findingOf(c: StallCandidate, o: { siteId: string; week: IsoWeek; baselineWeeks: number; currency: string; now: number }): StallFindingRow {
  const step = c.funnel.steps[c.position - 1]!;
  const prev = c.funnel.steps[c.position - 2]!;
  const page = proposalPage(c.funnel.steps, c.position);
  const stalled = c.nWeek - c.xWeek;
  const lost = (c.baselineRate - c.rate) * c.nWeek;
  const value = c.revenuePerPass === null ? null : Math.round(Math.max(0, lost) * c.revenuePerPass * 100) / 100;
  const where = page === null ? 'the step' : `the page ${page.pattern}`;
  const action =
    `${c.cohortLabel}: ${pct(c.rate)} went on from "${prev.label}" to "${step.label}" in ${o.week.label}, against ${pct(c.baselineRate)} over the ${o.baselineWeeks} weeks before ` +
    `(${stalled} of ${c.nWeek} sessions stalled). Proposed: a layout test on ${where} that makes the way to "${step.label}" clearer for this cohort. ` +
    'Nothing changes until a human approves it.';
  return {
    id: newId('stl'),
    site_id: o.siteId,
    funnel_id: c.funnel.id,
    step_position: c.position,
    step_key: step.key,
    cohort_key: c.cohortKey,
    cohort_label: c.cohortLabel,
    iso_week: o.week.label,
    week_start: o.week.start,
    baseline_weeks: o.baselineWeeks,
    pass_rate: c.rate,
    baseline_pass_rate: c.baselineRate,
    sessions: c.nWeek,
    stalled,
    baseline_sessions: c.nBase,
    baseline_stalled: c.nBase - c.xBase,
    z: c.z,
    p_value: c.p,
    value_per_week: value,
    currency: o.currency,
    proposed_action: action.slice(0, 2000),
    inbox_item_id: newId('inbox'),
    proposal_id: newId('prop'),
    created_at: o.now,
  };
}

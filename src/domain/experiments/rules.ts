/**
 * The rules of layout tests, as pure functions: the lifecycle, the results of
 * a test from per-arm aggregates, when a test may stop early, and the Core
 * Web Vitals guardrail.
 */
import {
  ALPHA,
  EARLY_STOP_ALPHA,
  compare,
  srmCheck,
  type Comparison,
  type MetricSample,
  type SrmResult,
} from './stats.js';

export const STATUSES = ['draft', 'running', 'paused', 'ended', 'shipped'] as const;
export type Status = (typeof STATUSES)[number];
export const METRICS = ['conversion', 'revenue_per_visitor', 'custom_event'] as const;
export type PrimaryMetric = (typeof METRICS)[number];
export { VITALS, type Vital, type ArmAggregate } from '../../store/experiments.js';
import type { ArmAggregate, Vital } from '../../store/experiments.js';
export type EndReason = 'scheduled_end' | 'significance' | 'manual';

/**
 * The lifecycle. draft → running (start); running → paused (pause, or the
 * guardrail); paused → running (resume); running or paused → ended (end by
 * hand, the scheduled end, or significance when stop_early is set);
 * ended → shipped (ship). Shipped is final. Anything else is a conflict.
 */
export const TRANSITIONS: Readonly<Record<string, { from: readonly Status[]; to: Status }>> = {
  start: { from: ['draft'], to: 'running' },
  pause: { from: ['running'], to: 'paused' },
  resume: { from: ['paused'], to: 'running' },
  end: { from: ['running', 'paused'], to: 'ended' },
  ship: { from: ['ended'], to: 'shipped' },
};
export type Action = keyof typeof TRANSITIONS & string;

/** The status after `action`, or null when the action is not allowed from `status`. */
export function transition(status: Status, action: 'start' | 'pause' | 'resume' | 'end' | 'ship'): Status | null {
  const t = TRANSITIONS[action]!;
  return t.from.includes(status) ? t.to : null;
}

/** Which fields may change in a status: everything in draft; the end date, stop_early and weights while live; nothing after. */
export function editableFields(status: Status): 'all' | 'live' | 'none' {
  if (status === 'draft') return 'all';
  if (status === 'running' || status === 'paused') return 'live';
  return 'none';
}

// ---------------------------------------------------------------------------------------------
// Results

export interface ArmInfo {
  id: string;
  label: string;
  isControl: boolean;
  variantId: string | null;
  weight: number;
}

export interface ArmResult {
  arm_id: string;
  label: string;
  control: boolean;
  variant_id: string | null;
  weight: number;
  visitors: number;
  converters: number;
  conversions: number;
  conversion_rate: number;
  revenue: number;
  revenue_per_visitor: number;
  /** Per-visitor mean of the primary metric (a rate for conversion/custom_event, money for revenue_per_visitor). */
  metric_value: number;
  /** Successes of the primary metric (converters, or visitors with the custom event; converters for revenue). */
  metric_successes: number;
  comparison: Comparison | null;
}

export interface Results {
  metric: PrimaryMetric;
  alpha: number;
  arms: ArmResult[];
  srm: SrmResult;
  /** The arm the data favour at level alpha: the best variant that is significantly better, or the control when every variant is significantly worse. */
  winning_arm_id: string | null;
}

/** The primary metric of one arm as sufficient statistics over its visitors. */
export function metricSample(metric: PrimaryMetric, a: ArmAggregate): MetricSample {
  if (metric === 'revenue_per_visitor') return { n: a.visitors, sum: a.revenue, sumSq: a.revenueSq };
  const x = metric === 'custom_event' ? a.eventVisitors : a.converters;
  return { n: a.visitors, sum: x, sumSq: x };
}

/** Bonferroni: the error rate of each variant-vs-control comparison when `variants` arms are compared. */
export function perComparisonAlpha(alpha: number, variants: number): number {
  return alpha / Math.max(1, variants);
}

/** Results of every arm (the control first) at overall level `alpha`. */
export function computeResults(metric: PrimaryMetric, arms: readonly ArmInfo[], aggregates: ReadonlyMap<string, ArmAggregate>, alpha = ALPHA): Results {
  const empty: ArmAggregate = { visitors: 0, converters: 0, conversions: 0, revenue: 0, revenueSq: 0, eventVisitors: 0 };
  const ordered = [...arms].sort((a, b) => Number(b.isControl) - Number(a.isControl));
  const control = ordered[0]!;
  const controlSample = metricSample(metric, aggregates.get(control.id) ?? empty);
  const a = perComparisonAlpha(alpha, ordered.length - 1);
  const out: ArmResult[] = ordered.map((arm) => {
    const agg = aggregates.get(arm.id) ?? empty;
    const sample = metricSample(metric, agg);
    return {
      arm_id: arm.id,
      label: arm.label,
      control: arm.isControl,
      variant_id: arm.variantId,
      weight: arm.weight,
      visitors: agg.visitors,
      converters: agg.converters,
      conversions: agg.conversions,
      conversion_rate: agg.visitors > 0 ? agg.converters / agg.visitors : 0,
      revenue: agg.revenue,
      revenue_per_visitor: agg.visitors > 0 ? agg.revenue / agg.visitors : 0,
      metric_value: sample.n > 0 ? sample.sum / sample.n : 0,
      metric_successes: metric === 'custom_event' ? agg.eventVisitors : agg.converters,
      comparison: arm.isControl ? null : compare(controlSample, sample, a),
    };
  });
  const srm = srmCheck(out.map((r) => ({ visitors: r.visitors, weight: r.weight })));
  return { metric, alpha, arms: out, srm, winning_arm_id: winnerOf(out) };
}

function winnerOf(arms: readonly ArmResult[]): string | null {
  const variants = arms.filter((a) => !a.control);
  const better = variants.filter((a) => a.comparison?.verdict === 'better').sort((x, y) => y.metric_value - x.metric_value);
  if (better.length > 0) return better[0]!.arm_id;
  if (variants.length > 0 && variants.every((a) => a.comparison?.verdict === 'worse')) return arms.find((a) => a.control)!.arm_id;
  return null;
}

// ---------------------------------------------------------------------------------------------
// Early stopping

/** A test set to stop early runs at least this long (EXPERIMENTS.md: at least 3 days). */
export const EARLY_STOP_MIN_RUN_MS = 3 * 86_400_000;
/** ...and waits for this many successes of the primary metric in every arm (EXPERIMENTS.md: 150 conversions per arm). */
export const EARLY_STOP_MIN_SUCCESSES = 150;

export interface EarlyStop {
  stop: boolean;
  /** Why it stops or not, as a code. */
  reason: 'too_early' | 'too_few_conversions' | 'sample_ratio_mismatch' | 'no_strong_signal' | 'significant';
  winning_arm_id: string | null;
}

/**
 * Whether a test with stop_early set ends now on significance: it has run at
 * least 3 days, every arm has 150 successes, the SRM check does not flag it,
 * and the confidence sequence at the extra-strong level (alpha 0.001 overall)
 * excludes 0 for some variant. Because the interval is a confidence
 * sequence, checking this at every worker pass keeps its error rate.
 */
export function earlyStop(
  metric: PrimaryMetric,
  arms: readonly ArmInfo[],
  aggregates: ReadonlyMap<string, ArmAggregate>,
  runMs: number,
): EarlyStop {
  if (runMs < EARLY_STOP_MIN_RUN_MS) return { stop: false, reason: 'too_early', winning_arm_id: null };
  const strong = computeResults(metric, arms, aggregates, EARLY_STOP_ALPHA);
  if (strong.arms.some((a) => a.metric_successes < EARLY_STOP_MIN_SUCCESSES)) return { stop: false, reason: 'too_few_conversions', winning_arm_id: null };
  if (strong.srm.mismatch) return { stop: false, reason: 'sample_ratio_mismatch', winning_arm_id: null };
  const decided = strong.arms.some((a) => a.comparison !== null && a.comparison.verdict !== 'inconclusive');
  if (!decided) return { stop: false, reason: 'no_strong_signal', winning_arm_id: null };
  return { stop: true, reason: 'significant', winning_arm_id: strong.winning_arm_id };
}

// ---------------------------------------------------------------------------------------------
// Core Web Vitals guardrail

/** "Poor" thresholds of web-vitals: a p75 strictly above is poor (LCP and INP in ms, CLS unitless). */
export const POOR: Readonly<Record<Vital, number>> = { lcp: 4000, inp: 500, cls: 0.25 };
/** The variant's p75 is "worse" when it exceeds the control's by more than this share of it... */
export const GUARDRAIL_RELATIVE_MARGIN = 0.1;
/** ...and by more than this absolute amount (so that tiny values, a CLS p75 of 0.00 against 0.01, never trip). */
export const GUARDRAIL_ABSOLUTE_MARGIN: Readonly<Record<Vital, number>> = { lcp: 100, inp: 20, cls: 0.02 };
/** Page views with the metric needed in the control and in the variant arm before the guardrail judges. */
export const GUARDRAIL_MIN_SAMPLE = 100;

export interface VitalStat {
  p75: number | null;
  n: number;
}

export type GuardrailVerdict = 'insufficient_data' | 'ok' | 'worse_than_control' | 'poor';

/**
 * The guardrail's verdict on one variant arm and metric. With fewer than
 * GUARDRAIL_MIN_SAMPLE measurements in either arm: insufficient_data.
 * Otherwise it trips when the variant's p75 is past the poor threshold while
 * also worse than the control's (a test whose control is just as poor is not
 * the variant's fault), or when it exceeds the control's p75 by more than
 * max(10% of the control's p75, the metric's absolute margin).
 */
export function guardrailVerdict(metric: Vital, control: VitalStat, arm: VitalStat): GuardrailVerdict {
  if (control.n < GUARDRAIL_MIN_SAMPLE || arm.n < GUARDRAIL_MIN_SAMPLE || control.p75 === null || arm.p75 === null) return 'insufficient_data';
  if (arm.p75 > POOR[metric] && arm.p75 > control.p75) return 'poor';
  const margin = Math.max(GUARDRAIL_RELATIVE_MARGIN * control.p75, GUARDRAIL_ABSOLUTE_MARGIN[metric]);
  if (arm.p75 - control.p75 > margin) return 'worse_than_control';
  return 'ok';
}

/** Limits of the web_vitals event's properties: a page view's LCP and INP are at most 10 minutes, CLS at most 100. */
export const VITAL_LIMITS: Readonly<Record<Vital, number>> = { lcp: 600_000, inp: 600_000, cls: 100 };

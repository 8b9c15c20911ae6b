import { z } from 'zod';
import type { ArmRow, ExperimentRow } from '../../store/experiments.js';
import { guardrailsOf } from './guardrails.js';
import { METRICS, STATUSES, VITALS } from './rules.js';
import { SRM_MIN_PER_ARM, SRM_P_THRESHOLD } from './stats.js';

/** The views of layout tests: the test with its arms, its results, a visitor's arm and the guardrail status. */

/** ISO 8601 of a millisecond timestamp; null stays null. */
const iso = (t: number | null): string | null => (t === null ? null : new Date(t).toISOString());
const when = (what: string) => z.string().nullable().describe(`${what}, ISO 8601 UTC; null when not yet.`);

export const armView = z.object({
  id: z.string().describe('Arm id (arm_...).'),
  label: z.string().describe('Name of the arm.'),
  control: z.boolean().describe('Whether this arm is the control (the zone default content).'),
  variant_id: z.string().nullable().describe('The variant the arm shows; null for the control.'),
  weight: z.number().describe('Relative share of new visitors the arm receives.'),
});

export const experimentView = z.object({
  id: z.string().describe('Layout test id.'),
  name: z.string().describe('Name of the test.'),
  zone_id: z.string().nullable().describe('The zone tested (a zone test); null for a page test.'),
  page_id: z.string().nullable().describe('The page tested (a page test); null for a zone test.'),
  status: z.enum(STATUSES).describe('draft → running ⇄ paused → ended → shipped.'),
  seed: z.string().describe('Hash seed of the assignment (defaults to the id; fixed so renaming never reshuffles visitors).'),
  primary_metric: z.enum(METRICS).describe('The metric that decides the test.'),
  metric_event: z.string().nullable().describe('Event type of a custom_event metric.'),
  guardrail_metrics: z.array(z.enum(VITALS)).describe('Core Web Vitals the guardrail watches.'),
  stop_early: z.boolean().describe('Whether the test ends by itself on an extra-strong significant result.'),
  scheduled_end: when('When the test ends by itself'),
  started_at: when('When it started'),
  paused_at: when('When it was paused'),
  pause_reason: z.string().nullable().describe('manual:<actor> or guardrail:<metric>:<arm id>; null unless paused.'),
  ended_at: when('When it ended'),
  end_reason: z.string().nullable().describe('scheduled_end, significance or manual; null unless ended.'),
  ended_by: z.string().nullable().describe('token:<id> or worker.'),
  winning_arm_id: z.string().nullable().describe('The winner recorded at the end; null when inconclusive.'),
  shipped_arm_id: z.string().nullable().describe('The arm shipped to everyone.'),
  shipped_at: when('When it was shipped'),
  shipped_by: z.string().nullable().describe('Who shipped it (token:<id>).'),
  created_by: z.string().describe('Who created it (token:<id>).'),
  created_at: z.string().describe('ISO 8601 UTC.'),
  updated_at: z.string().describe('ISO 8601 UTC.'),
  arms: z.array(armView).describe('The arms, the control first.'),
});

export type ExperimentView = z.input<typeof experimentView>;

/** The view of a test with its arms (as stored: the control first). */
export function experimentOut(row: ExperimentRow, arms: readonly ArmRow[]): ExperimentView {
  return {
    id: row.id,
    name: row.name,
    zone_id: row.zone_id,
    page_id: row.page_id,
    status: row.status,
    seed: row.seed,
    primary_metric: row.primary_metric,
    metric_event: row.metric_event,
    guardrail_metrics: guardrailsOf(row),
    stop_early: row.stop_early === 1,
    scheduled_end: iso(row.scheduled_end_at),
    started_at: iso(row.started_at),
    paused_at: iso(row.paused_at),
    pause_reason: row.pause_reason,
    ended_at: iso(row.ended_at),
    end_reason: row.end_reason,
    ended_by: row.ended_by,
    winning_arm_id: row.winning_arm_id,
    shipped_arm_id: row.shipped_arm_id,
    shipped_at: iso(row.shipped_at),
    shipped_by: row.shipped_by,
    created_by: row.created_by,
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
    arms: arms.map((a) => ({ id: a.id, label: a.label, control: a.is_control === 1, variant_id: a.variant_id, weight: a.weight })),
  };
}

const nullableNumber = (what: string) => z.number().nullable().describe(what);

export const armResultView = z.object({
  arm_id: z.string().describe('The arm.'),
  label: z.string().describe('Name of the arm.'),
  control: z.boolean().describe('Whether this arm is the control.'),
  variant_id: z.string().nullable().describe('The variant shown; null for the control.'),
  weight: z.number().describe('Configured weight.'),
  visitors: z.number().int().describe('Distinct visitors with an exposure, counted in the arm of their first exposure.'),
  converters: z.number().int().describe('Of those, visitors with a conversion after their first exposure.'),
  conversions: z.number().int().describe('Conversions (orders) of those visitors after their first exposure.'),
  conversion_rate: z.number().describe('converters / visitors.'),
  revenue: z.number().describe("Revenue of those conversions, in the site's currency."),
  revenue_per_visitor: z.number().describe('revenue / visitors.'),
  metric_value: z.number().describe('Per-visitor mean of the primary metric.'),
  difference: nullableNumber('Primary metric: this arm − control (absolute); null for the control.'),
  ci_low: nullableNumber('Lower end of the always-valid confidence interval of the difference; null for the control or under 2 visitors.'),
  ci_high: nullableNumber('Upper end of that interval.'),
  relative_lift: nullableNumber('difference / control value; null for the control or when the control is 0.'),
  chance_to_beat_control: nullableNumber('Normal approximation, flat prior: probability the arm beats the control; null for the control.'),
  verdict: z.enum(['control', 'better', 'worse', 'inconclusive']).describe('better/worse when the interval excludes 0.'),
});

/** Per-arm results of a test (experiments_results). */
export const resultsView = z.object({
  experiment_id: z.string().describe('The test.'),
  status: z.enum(STATUSES).describe('Its status.'),
  primary_metric: z.enum(METRICS).describe('The metric compared.'),
  method: z.string().describe('How significance is decided.'),
  alpha: z.number().describe('Overall two-sided error rate, split over the variant arms (Bonferroni).'),
  counted_until: z.string().describe('Conversions and events count until this time (the end, or now).'),
  arms: z.array(armResultView).describe('The arms, the control first.'),
  winning_arm_id: z.string().nullable().describe('The best variant significantly better than the control, or the control when every variant is significantly worse; null otherwise.'),
  srm: z
    .object({
      checked: z.boolean().describe(`false while an arm has fewer than ${SRM_MIN_PER_ARM} visitors.`),
      chi_square: z.number().nullable().describe('Pearson chi-square of visitors per arm against the weights.'),
      p_value: z.number().nullable().describe('Its p-value.'),
      mismatch: z.boolean().describe(`p < ${SRM_P_THRESHOLD}: the split does not match the weights; do not trust the results.`),
    })
    .describe('Sample-ratio-mismatch check.'),
});

/** The arm a visitor gets and why (experiments_assignment_for_visitor). */
export const assignmentView = z.object({
  experiment_id: z.string().describe('The test.'),
  visitor_id: z.string().describe('The visitor.'),
  status: z.enum(STATUSES).describe('Status of the test.'),
  arm_id: z.string().nullable().describe('The arm; null in the holdout or when the test is ended without shipping.'),
  label: z.string().nullable().describe('Name of the arm.'),
  source: z.enum(['forced', 'shipped', 'exposure', 'hash', 'holdout', 'not_live']).describe('Where the arm comes from.'),
  from_earlier_exposure: z.boolean().describe('Whether the arm is the one of an earlier exposure.'),
  bucket: z.number().describe("The visitor's hash position in [0, 1)."),
  first_exposed_at: z.string().nullable().describe('First exposure to the test, ISO 8601; null when never exposed.'),
});

/** The Core Web Vitals guardrail of a test (experiments_guardrail_status). */
export const guardrailStatusView = z.object({
  experiment_id: z.string().describe('The test.'),
  status: z.enum(STATUSES).describe('Status of the test.'),
  pause_reason: z.string().nullable().describe('guardrail:<metric>:<arm> when the guardrail paused it.'),
  window_start: z.string().nullable().describe('Vitals count from this time (the start, or the resume after a guardrail pause).'),
  metrics: z
    .array(
      z.object({
        metric: z.enum(VITALS).describe('The Core Web Vital.'),
        poor_threshold: z.number().describe('A p75 above this is poor (LCP 4000 ms, INP 500 ms, CLS 0.25).'),
        relative_margin: z.number().describe('Worse than control: p75 above control p75 by more than this share...'),
        absolute_margin: z.number().describe('...and by more than this amount.'),
        min_sample: z.number().int().describe('Measurements needed in the control and the arm before judging.'),
        arms: z
          .array(
            z.object({
              arm_id: z.string().describe('The arm.'),
              label: z.string().describe('Name of the arm.'),
              control: z.boolean().describe('Whether it is the control.'),
              p75: z.number().nullable().describe('75th percentile (nearest rank) of the page views counted; null with none.'),
              n: z.number().int().describe('Page views with this metric counted for the arm.'),
              verdict: z.enum(['insufficient_data', 'ok', 'worse_than_control', 'poor']).nullable().describe('null for the control.'),
            }),
          )
          .describe('The arms, the control first.'),
      }),
    )
    .describe('One entry per guarded metric.'),
});

export type ResultsView = z.input<typeof resultsView>;
export type AssignmentView = z.input<typeof assignmentView>;
export type GuardrailStatusView = z.input<typeof guardrailStatusView>;

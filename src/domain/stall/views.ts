import { z } from 'zod';
import type { StallFindingRow } from '../../store/stall.js';
import { iso } from '../time.js';

/** A stall finding as tools show it. */
export const findingViewSchema = z.object({
  id: z.string().describe('Finding id (stl_...).'),
  iso_week: z.string().describe('ISO week of the finding in the site time zone, e.g. 2026-W48.'),
  funnel_id: z.string().describe('The funnel.'),
  step_position: z.number().int().describe('1-based position of the step not passed.'),
  step: z.string().describe('Machine name of that step.'),
  cohort_key: z.string().describe('high_intent or segment:<segment id>.'),
  cohort_label: z.string().describe('Display label of the cohort.'),
  pass_rate: z.number().describe('Step-to-step pass rate this week.'),
  baseline_pass_rate: z.number().describe('Step-to-step pass rate over the baseline weeks.'),
  baseline_weeks: z.number().int().describe('How many ISO weeks before form the baseline.'),
  sessions: z.number().int().describe('Cohort sessions this week that passed the step before.'),
  stalled: z.number().int().describe('Of those, sessions that did not pass the step.'),
  baseline_sessions: z.number().int().describe('Cohort sessions of the baseline weeks that passed the step before.'),
  baseline_stalled: z.number().int().describe('Of those, sessions that did not pass the step.'),
  z: z.number().describe('Two-proportion z statistic (positive: this week lower).'),
  p_value: z.number().describe('One-sided p-value (before the Benjamini-Hochberg step).'),
  value_per_week: z.number().nullable().describe('Estimated revenue lost this week; null when no revenue is known.'),
  currency: z.string().describe('Currency of value_per_week.'),
  proposed_action: z.string().describe('The proposed fix as text (awaiting approval in the inbox).'),
  inbox_item_id: z.string().describe('The inbox row filed.'),
  experiment_proposal_id: z.string().describe('The experiment proposal filed.'),
  created_at: z.string().describe('ISO 8601.'),
});

export type FindingView = z.input<typeof findingViewSchema>;

export const findingView = (f: StallFindingRow): FindingView => ({
  id: f.id,
  iso_week: f.iso_week,
  funnel_id: f.funnel_id,
  step_position: f.step_position,
  step: f.step_key,
  cohort_key: f.cohort_key,
  cohort_label: f.cohort_label,
  pass_rate: f.pass_rate,
  baseline_pass_rate: f.baseline_pass_rate,
  baseline_weeks: f.baseline_weeks,
  sessions: f.sessions,
  stalled: f.stalled,
  baseline_sessions: f.baseline_sessions,
  baseline_stalled: f.baseline_stalled,
  z: f.z,
  p_value: f.p_value,
  value_per_week: f.value_per_week,
  currency: f.currency,
  proposed_action: f.proposed_action,
  inbox_item_id: f.inbox_item_id,
  experiment_proposal_id: f.proposal_id,
  created_at: iso(f.created_at)!,
});

/** What a run of the stall pass looked at and filed. */
export const stallRunViewSchema = z.object({
  iso_week: z.string().describe('The ISO week analysed.'),
  week_start: z.string().describe('Its first instant (Monday 00:00 in the site time zone), ISO 8601 UTC.'),
  week_end: z.string().describe('First instant of the next week, ISO 8601 UTC.'),
  baseline_weeks: z.number().int().describe('Weeks in the baseline.'),
  sessions_scanned: z.number().int().describe('Sessions of the week and the baseline weeks read.'),
  tested: z.number().int().describe('Cohort-step comparisons with enough samples to test.'),
  significant: z.number().int().describe('Comparisons significant after Benjamini-Hochberg.'),
  filed: z.array(findingViewSchema).describe('Findings this run filed (already filed ones are not repeated).'),
});
export type StallRunView = z.input<typeof stallRunViewSchema>;

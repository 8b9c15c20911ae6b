import { z } from 'zod';
import { AppError } from '../../errors/app-error.js';
import { BASELINE_WEEKS, runStallPass } from '../../domain/stall/pass.js';
import { HIGH_INTENT_SCORE } from '../../domain/funnels/service.js';
import type { StallFindingRow } from '../../store/stall.js';
import { defineTool } from '../tool.js';
import { iso, isoInput, limitInput } from './shared.js';

const area = 'stall';

export const findingView = z.object({
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

export const findingOut = (f: StallFindingRow): z.input<typeof findingView> => ({
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

export const stallRun = defineTool({
  name: 'stall_run',
  title: 'Run the stall pass',
  description: `Runs the weekly stall pass now for the ISO week (site time zone) containing as_of (default now): per funnel, cohort (high-intent sessions, each segment) and step, this week's step-to-step pass rate against the ${BASELINE_WEEKS} weeks before (one-sided two-proportion z-test, at least 30 sessions, 5 passes and 5 stalls each side, Benjamini-Hochberg at 5%). Files each stall once per site, step, cohort and week (inbox item, experiment proposal, stall.found); running it again files nothing twice. Scope: write.`,
  area,
  scope: 'write',
  flags: { changesData: true, idempotent: true },
  input: z.object({
    as_of: isoInput.optional().describe('An instant in the ISO week to analyse, ISO 8601; default now (the week so far).'),
    baseline_weeks: z.number().int().min(1).max(12).default(BASELINE_WEEKS).describe(`ISO weeks before it that form the baseline, 1 to 12 (default ${BASELINE_WEEKS}).`),
    high_intent_score: z.number().min(0).max(1000).default(HIGH_INTENT_SCORE).describe(`Highest session score at or above which a session is high-intent (default ${HIGH_INTENT_SCORE}).`),
  }),
  output: z.object({
    iso_week: z.string().describe('The ISO week analysed.'),
    week_start: z.string().describe('Its first instant (Monday 00:00 in the site time zone), ISO 8601 UTC.'),
    week_end: z.string().describe('First instant of the next week, ISO 8601 UTC.'),
    baseline_weeks: z.number().int().describe('Weeks in the baseline.'),
    sessions_scanned: z.number().int().describe('Sessions of the week and the baseline weeks read.'),
    tested: z.number().int().describe('Cohort-step comparisons with enough samples to test.'),
    significant: z.number().int().describe('Comparisons significant after Benjamini-Hochberg.'),
    filed: z.array(findingView).describe('Findings this run filed (already filed ones are not repeated).'),
  }),
  handler: async (ctx, input) => {
    const asOf = input.as_of !== undefined ? Date.parse(input.as_of) : Date.now();
    if (asOf > Date.now() + 86_400_000) throw new AppError('validation_failed', 'as_of is in the future', { field: 'as_of' });
    const r = await runStallPass(ctx.store, ctx.grant.siteId, { asOf, baselineWeeks: input.baseline_weeks, highIntentScore: input.high_intent_score });
    return {
      iso_week: r.isoWeek.label,
      week_start: iso(r.isoWeek.start)!,
      week_end: iso(r.isoWeek.end)!,
      baseline_weeks: r.baselineWeeks,
      sessions_scanned: r.sessionsScanned,
      tested: r.tested,
      significant: r.significant.length,
      filed: r.filed.map(findingOut),
    };
  },
});

export const stallFindings = defineTool({
  name: 'stall_findings',
  title: 'Stall findings',
  description: 'Findings of the stall pass, newest first, optionally of one ISO week or funnel. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({
    iso_week: z
      .string()
      .regex(/^\d{4}-W\d{2}$/)
      .optional()
      .describe('Only this ISO week, e.g. 2026-W48.'),
    funnel_id: z.string().min(1).max(128).optional().describe('Only this funnel.'),
    limit: limitInput(500, 100),
  }),
  output: z.object({ findings: z.array(findingView).describe('The findings.') }),
  handler: async (ctx, input) => {
    const rows = await ctx.store.stall.findings(ctx.grant.siteId, { isoWeek: input.iso_week, funnelId: input.funnel_id, limit: input.limit });
    return { findings: rows.map(findingOut) };
  },
});

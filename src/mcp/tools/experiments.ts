import { z } from 'zod';
import {
  assignmentFor,
  createExperiment,
  endExperiment,
  guardrailsOf,
  guardrailStatus,
  pauseExperiment,
  requireExperiment,
  resultsOf,
  resumeExperiment,
  shipExperiment,
  startExperiment,
  updateExperiment,
  type ArmInput,
} from '../../domain/experiments/service.js';
import { METRICS, STATUSES, VITALS } from '../../domain/experiments/rules.js';
import { ALPHA, SEQUENTIAL_TUNING, SRM_MIN_PER_ARM, SRM_P_THRESHOLD } from '../../domain/experiments/stats.js';
import type { ExperimentRow } from '../../store/experiments.js';
import { filedDraft, type DraftView } from '../../domain/drafts/schema.js';
import { proposeExperimentResume, proposeExperimentStart, proposeExperimentUpdate } from '../../domain/drafts/propose.js';
import type { Repos } from '../../store/repos.js';
import { defineTool, type ToolContext } from '../tool.js';
import { iso, isoInput, limitInput, ms } from './shared.js';

const area = 'experiments';

const actor = (ctx: ToolContext) => `token:${ctx.grant.tokenId}`;
const experimentId = z.string().min(1).max(128).describe('Layout test id (exp_...).');
const when = (what: string) => z.string().nullable().describe(`${what}, ISO 8601 UTC; null when not yet.`);

const armView = z.object({
  id: z.string().describe('Arm id (arm_...).'),
  label: z.string().describe('Name of the arm.'),
  control: z.boolean().describe('Whether this arm is the control (the zone default content).'),
  variant_id: z.string().nullable().describe('The variant the arm shows; null for the control.'),
  weight: z.number().describe('Relative share of new visitors the arm receives.'),
});

const experimentView = z.object({
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

/** A lifecycle call's result: the test, and the draft when the call was filed for approval. */
const experimentChange = experimentView.extend({ draft: filedDraft });

async function view(r: Repos, row: ExperimentRow): Promise<z.input<typeof experimentView>> {
  const arms = await r.experiments.arms(row.site_id, row.id);
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

const armInput = z.object({
  label: z.string().min(1).max(200).describe('Name of the arm, unique in the test.'),
  control: z.boolean().default(false).describe('true for the control arm (exactly one; it shows the zone default and has no variant).'),
  variant_id: z.string().min(1).max(128).optional().describe('The variant a non-control arm shows (a variant of the tested zone, or of a zone of the tested page).'),
  weight: z.number().min(0).max(1000).describe('Relative share of visitors (e.g. 50 and 50); 0 stops sending new visitors to the arm.'),
});
const armsInput = z.array(armInput).min(2).max(10).describe('The control plus one to nine variant arms.');
const metricInput = z.enum(METRICS).describe('conversion (share of visitors converting), revenue_per_visitor, or custom_event (share of visitors sending metric_event).');
const metricEventInput = z.string().min(1).max(100).describe('Event type counted by a custom_event metric (e.g. signup_started).');
const guardrailInput = z.array(z.enum(VITALS)).max(3).describe('Core Web Vitals the guardrail watches (lcp, inp, cls); [] for none.');
const stopEarlyInput = z.boolean().describe('End by itself when the extra-strong early-stopping bar is met (alpha 0.001, 3 days, 150 conversions per arm, no SRM).');

const toArms = (arms: z.output<typeof armInput>[]): ArmInput[] =>
  arms.map((a) => ({ label: a.label, control: a.control, variant_id: a.variant_id, weight: a.weight }));

export const experimentsList = defineTool({
  name: 'experiments_list',
  title: 'List layout tests',
  description: 'The layout tests of the site, newest first, optionally of one status. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ status: z.enum(STATUSES).optional().describe('Only tests in this status.'), limit: limitInput(500, 100) }),
  output: z.object({ experiments: z.array(experimentView).describe('The tests, newest first.') }),
  handler: async (ctx, input) => {
    const rows = await ctx.store.experiments.list(ctx.grant.siteId, input.status, input.limit);
    return { experiments: await Promise.all(rows.map((r) => view(ctx.store, r))) };
  },
});

export const experimentsGet = defineTool({
  name: 'experiments_get',
  title: 'Read a layout test',
  description: 'One layout test with its arms, metric, guardrails, schedule and lifecycle dates. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ id: experimentId }),
  output: experimentView,
  handler: async (ctx, input) => view(ctx.store, await requireExperiment(ctx.store, ctx.grant.siteId, input.id)),
});

export const experimentsCreate = defineTool({
  name: 'experiments_create',
  title: 'Create a layout test',
  description:
    'Creates a draft layout test on a zone or a page: a control arm and one or more weighted variant arms, a primary metric and optional Core Web Vitals guardrails. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true },
  input: z.object({
    name: z.string().min(1).max(200).describe('Name of the test.'),
    zone_id: z.string().min(1).max(128).optional().describe('The zone to test (give this or page_id).'),
    page_id: z.string().min(1).max(128).optional().describe('The page to test (give this or zone_id).'),
    arms: armsInput,
    primary_metric: metricInput,
    metric_event: metricEventInput.optional(),
    guardrail_metrics: guardrailInput.default(['lcp', 'inp', 'cls']),
    scheduled_end: isoInput.optional().describe('When the test ends by itself (in the future), ISO 8601.'),
    stop_early: stopEarlyInput.default(false),
    seed: z.string().min(1).max(128).optional().describe('Hash seed of the assignment; defaults to the test id.'),
  }),
  output: experimentView,
  handler: async (ctx, input) => {
    const row = await ctx.store.write((tx) =>
      createExperiment(tx, ctx.grant.siteId, actor(ctx), { ...input, arms: toArms(input.arms), scheduled_end_at: ms(input.scheduled_end) }, Date.now()),
    );
    return view(ctx.store, row);
  },
});

export const experimentsUpdate = defineTool({
  name: 'experiments_update',
  title: 'Change a layout test',
  description:
    'Changes a draft test. A running or paused test changes only scheduled_end, stop_early and ' +
    'the arms\' weights: visitors already exposed keep their arm (the decision keeps the arm of the first exposure), new weights steer only new visitors. ' +
    'Ended and shipped tests are final (conflict). For a propose-only token a change of a running or paused test is filed as a draft; a draft test changes at once. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true, idempotent: true, changesExposure: true },
  input: z.object({
    id: experimentId,
    name: z.string().min(1).max(200).optional().describe('New name (draft only).'),
    arms: armsInput.optional().describe('Replaces every arm (draft only).'),
    weights: z
      .array(z.object({ arm_id: z.string().min(1).max(128).describe('The arm.'), weight: z.number().min(0).max(1000).describe('Its new weight.') }))
      .min(1)
      .max(10)
      .optional()
      .describe('New weights of existing arms (draft, running or paused).'),
    primary_metric: metricInput.optional(),
    metric_event: metricEventInput.nullable().optional(),
    guardrail_metrics: guardrailInput.optional(),
    scheduled_end: isoInput.nullable().optional().describe('New scheduled end (future), or null for none.'),
    stop_early: stopEarlyInput.optional(),
    seed: z.string().min(1).max(128).optional().describe('New hash seed (draft only).'),
  }),
  output: experimentChange,
  handler: async (ctx, input) => {
    const { id, scheduled_end, arms, ...rest } = input;
    const patch = {
      ...rest,
      arms: arms === undefined ? undefined : toArms(arms),
      scheduled_end_at: scheduled_end === undefined ? undefined : scheduled_end === null ? null : Date.parse(scheduled_end),
    };
    if (ctx.drafts) {
      const proposed = await proposeExperimentUpdate(ctx.store, ctx.grant.siteId, actor(ctx), id, patch);
      if (proposed) return { ...(await view(ctx.store, proposed.experiment)), draft: proposed.draft };
    }
    const row = await ctx.store.write((tx) => updateExperiment(tx, ctx.grant.siteId, id, patch, Date.now()));
    return view(ctx.store, row);
  },
});

/**
 * A lifecycle tool. With `propose`, it starts showing arms to visitors: for a
 * propose-only token the call is filed as a draft (see proposeExperimentStart).
 */
function lifecycleTool(
  name: string,
  title: string,
  description: string,
  run: (ctx: ToolContext, id: string) => Promise<ExperimentRow>,
  propose?: (ctx: ToolContext, id: string) => Promise<{ experiment: ExperimentRow; draft: DraftView }>,
) {
  return defineTool({
    name,
    title,
    description: `${description} Scope: write.`,
    area,
    scope: 'write',
    flags: { changesData: true, changesExposure: propose !== undefined },
    input: z.object({ id: experimentId }),
    output: experimentChange,
    handler: async (ctx, input) => {
      if (ctx.drafts && propose) {
        const r = await propose(ctx, input.id);
        return { ...(await view(ctx.store, r.experiment)), draft: r.draft };
      }
      return view(ctx.store, await run(ctx, input.id));
    },
  });
}

export const experimentsStart = lifecycleTool(
  'experiments_start',
  'Start a layout test',
  'Starts a draft test (draft → running): visitors are assigned from now on. Refused (conflict) when another live test covers the same zones or the variant of an arm is not approved or published.',
  (ctx, id) => ctx.store.write((tx) => startExperiment(tx, ctx.grant.siteId, id, Date.now())),
  (ctx, id) => proposeExperimentStart(ctx.store, ctx.grant.siteId, actor(ctx), id),
);

export const experimentsPause = lifecycleTool(
  'experiments_pause',
  'Pause a layout test',
  'Pauses a running test (running → paused) until it is resumed or ended; visitors keep their arms when it resumes.',
  (ctx, id) => ctx.store.write((tx) => pauseExperiment(tx, ctx.grant.siteId, id, actor(ctx), Date.now())),
);

export const experimentsResume = lifecycleTool(
  'experiments_resume',
  'Resume a layout test',
  'Resumes a paused test (paused → running); visitors keep their arms. After a guardrail pause the guardrail judges only vitals received after resuming.',
  (ctx, id) => ctx.store.write((tx) => resumeExperiment(tx, ctx.grant.siteId, id, Date.now())),
  (ctx, id) => proposeExperimentResume(ctx.store, ctx.grant.siteId, actor(ctx), id),
);

export const experimentsEnd = lifecycleTool(
  'experiments_end',
  'End a layout test',
  'Ends a running or paused test by hand (→ ended, reason manual), records the winner if the results show one, and emits experiment.ended with per-arm results.',
  async (ctx, id) => {
    // Results are aggregated before the write (the transaction re-checks the status and records them).
    const now = Date.now();
    const results = await resultsOf(ctx.store, await requireExperiment(ctx.store, ctx.grant.siteId, id), now);
    return ctx.store.write((tx) => endExperiment(tx, ctx.grant.siteId, id, 'manual', actor(ctx), now, undefined, results));
  },
);

export const experimentsShip = defineTool({
  name: 'experiments_ship',
  title: 'Ship an arm of a layout test',
  description:
    "Ships an ended test (ended → shipped): the given arm, or the recorded winner. The arm's variant is published and the decision shows it to everyone " +
    '(shipping the control keeps the zone default). Emits experiment.shipped. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true, approvesOrPublishes: true },
  input: z.object({ id: experimentId, arm_id: z.string().min(1).max(128).optional().describe('The arm to ship; defaults to the winner recorded at the end.') }),
  output: experimentView,
  handler: async (ctx, input) => {
    const now = Date.now();
    const results = await resultsOf(ctx.store, await requireExperiment(ctx.store, ctx.grant.siteId, input.id), now);
    return view(ctx.store, await ctx.store.write((tx) => shipExperiment(tx, ctx.grant.siteId, input.id, input.arm_id, actor(ctx), now, results)));
  },
});

const nullableNumber = (what: string) => z.number().nullable().describe(what);

const armResultView = z.object({
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

export const experimentsResults = defineTool({
  name: 'experiments_results',
  title: 'Results of a layout test',
  description:
    'Per-arm results: exposed visitors, conversions, rate, revenue, revenue per visitor, the difference against the control with an always-valid ' +
    '(sequential) confidence interval that stays correct when read every day, a verdict, the winner, and the sample-ratio-mismatch check. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ id: experimentId }),
  output: z.object({
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
  }),
  handler: async (ctx, input) => {
    const row = await requireExperiment(ctx.store, ctx.grant.siteId, input.id);
    const now = Date.now();
    const r = await resultsOf(ctx.store, row, now);
    return {
      experiment_id: row.id,
      status: row.status,
      primary_metric: row.primary_metric,
      method: `asymptotic confidence sequence (Waudby-Smith et al. 2023), tuning parameter ${SEQUENTIAL_TUNING}`,
      alpha: ALPHA,
      counted_until: iso(row.ended_at ?? now)!,
      arms: r.arms.map((a) => ({
        arm_id: a.arm_id,
        label: a.label,
        control: a.control,
        variant_id: a.variant_id,
        weight: a.weight,
        visitors: a.visitors,
        converters: a.converters,
        conversions: a.conversions,
        conversion_rate: a.conversion_rate,
        revenue: a.revenue,
        revenue_per_visitor: a.revenue_per_visitor,
        metric_value: a.metric_value,
        difference: a.comparison?.difference ?? null,
        ci_low: a.comparison?.ci_low ?? null,
        ci_high: a.comparison?.ci_high ?? null,
        relative_lift: a.comparison?.relative_lift ?? null,
        chance_to_beat_control: a.comparison?.chance_to_beat_control ?? null,
        verdict: a.comparison?.verdict ?? ('control' as const),
      })),
      winning_arm_id: r.winning_arm_id,
      srm: r.srm,
    };
  },
});

export const experimentsAssignmentForVisitor = defineTool({
  name: 'experiments_assignment_for_visitor',
  title: 'Arm of a visitor',
  description:
    'The arm a visitor gets in a test and why: a QA force_arm override, the shipped arm, the arm of its first exposure (kept whatever the weights say now), ' +
    "or the deterministic hash (GrowthBook v2 of seed + visitor id); holdout when it is in the site's holdout. Reads only. Scope: read.",
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ id: experimentId, visitor_id: z.string().min(1).max(128).describe('The visitor id (the persistent visitor cookie).') }),
  output: z.object({
    experiment_id: z.string().describe('The test.'),
    visitor_id: z.string().describe('The visitor.'),
    status: z.enum(STATUSES).describe('Status of the test.'),
    arm_id: z.string().nullable().describe('The arm; null in the holdout or when the test is ended without shipping.'),
    label: z.string().nullable().describe('Name of the arm.'),
    source: z.enum(['forced', 'shipped', 'exposure', 'hash', 'holdout', 'not_live']).describe('Where the arm comes from.'),
    from_earlier_exposure: z.boolean().describe('Whether the arm is the one of an earlier exposure.'),
    bucket: z.number().describe("The visitor's hash position in [0, 1)."),
    first_exposed_at: z.string().nullable().describe('First exposure to the test, ISO 8601; null when never exposed.'),
  }),
  handler: async (ctx, input) => {
    const row = await requireExperiment(ctx.store, ctx.grant.siteId, input.id);
    const a = await assignmentFor(ctx.store, row, input.visitor_id);
    return {
      experiment_id: row.id,
      visitor_id: input.visitor_id,
      status: row.status,
      arm_id: a.arm_id,
      label: a.label,
      source: a.source,
      from_earlier_exposure: a.source === 'exposure',
      bucket: a.bucket,
      first_exposed_at: iso(a.first_exposed_at),
    };
  },
});

export const experimentsGuardrailStatus = defineTool({
  name: 'experiments_guardrail_status',
  title: 'Core Web Vitals guardrail of a layout test',
  description:
    'p75 per arm and guarded metric (LCP and INP in ms, CLS) with the sample sizes, the poor thresholds, the margin and each variant arm\'s verdict. ' +
    'The worker pauses a running test when a variant arm is poor or worse than the control beyond the margin. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ id: experimentId }),
  output: z.object({
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
  }),
  handler: async (ctx, input) => {
    const row = await requireExperiment(ctx.store, ctx.grant.siteId, input.id);
    return {
      experiment_id: row.id,
      status: row.status,
      pause_reason: row.pause_reason,
      window_start: row.started_at === null ? null : iso(Math.max(row.guardrail_since, row.started_at)),
      metrics: await guardrailStatus(ctx.store, row),
    };
  },
});

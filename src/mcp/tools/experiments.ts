import { z } from 'zod';
import { ExperimentsService } from '../../domain/experiments/service.js';
import type { ArmInput } from '../../domain/experiments/definition.js';
import { METRICS, STATUSES, VITALS } from '../../domain/experiments/rules.js';
import { assignmentView, experimentView, guardrailStatusView, resultsView } from '../../domain/experiments/views.js';
import { filedDraft } from '../../domain/drafts/schema.js';
import { defineTool, type ToolContext } from '../tool.js';
import { isoInput, limitInput, ms } from './shared.js';

const area = 'experiments';

const actor = (ctx: ToolContext) => `token:${ctx.grant.tokenId}`;
const svc = (ctx: ToolContext) => new ExperimentsService(ctx.store);
const experimentId = z.string().min(1).max(128).describe('Layout test id (exp_...).');
/** A lifecycle call's result: the test, and the draft when the call was filed for approval. */
const experimentChange = experimentView.extend({ draft: filedDraft });

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
  handler: async (ctx, input) => ({ experiments: await svc(ctx).list(ctx.grant.siteId, input.status, input.limit) }),
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
  handler: (ctx, input) => svc(ctx).get(ctx.grant.siteId, input.id),
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
  handler: (ctx, input) => svc(ctx).create(ctx.grant.siteId, actor(ctx), { ...input, arms: toArms(input.arms), scheduled_end_at: ms(input.scheduled_end) }),
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
    return svc(ctx).update(ctx.grant.siteId, actor(ctx), id, patch, { propose: ctx.drafts === true });
  },
});

/** A lifecycle tool: `changesExposure` when it starts showing arms to visitors (then a propose-only token files it as a draft). */
function lifecycleTool(name: string, title: string, description: string, changesExposure: boolean, run: (ctx: ToolContext, id: string) => Promise<z.input<typeof experimentChange>>) {
  return defineTool({
    name,
    title,
    description: `${description} Scope: write.`,
    area,
    scope: 'write',
    flags: { changesData: true, changesExposure },
    input: z.object({ id: experimentId }),
    output: experimentChange,
    handler: (ctx, input) => run(ctx, input.id),
  });
}

export const experimentsStart = lifecycleTool(
  'experiments_start',
  'Start a layout test',
  'Starts a draft test (draft → running): visitors are assigned from now on. Refused (conflict) when another live test covers the same zones or the variant of an arm is not approved or published.',
  true,
  (ctx, id) => svc(ctx).start(ctx.grant.siteId, actor(ctx), id, { propose: ctx.drafts === true }),
);

export const experimentsPause = lifecycleTool(
  'experiments_pause',
  'Pause a layout test',
  'Pauses a running test (running → paused) until it is resumed or ended; visitors keep their arms when it resumes.',
  false,
  (ctx, id) => svc(ctx).pause(ctx.grant.siteId, actor(ctx), id),
);

export const experimentsResume = lifecycleTool(
  'experiments_resume',
  'Resume a layout test',
  'Resumes a paused test (paused → running); visitors keep their arms. After a guardrail pause the guardrail judges only vitals received after resuming.',
  true,
  (ctx, id) => svc(ctx).resume(ctx.grant.siteId, actor(ctx), id, { propose: ctx.drafts === true }),
);

export const experimentsEnd = lifecycleTool(
  'experiments_end',
  'End a layout test',
  'Ends a running or paused test by hand (→ ended, reason manual), records the winner if the results show one, and emits experiment.ended with per-arm results.',
  false,
  (ctx, id) => svc(ctx).end(ctx.grant.siteId, actor(ctx), id),
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
  handler: (ctx, input) => svc(ctx).ship(ctx.grant.siteId, actor(ctx), input.id, input.arm_id),
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
  output: resultsView,
  handler: (ctx, input) => svc(ctx).results(ctx.grant.siteId, input.id),
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
  output: assignmentView,
  handler: (ctx, input) => svc(ctx).assignment(ctx.grant.siteId, input.id, input.visitor_id),
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
  output: guardrailStatusView,
  handler: (ctx, input) => svc(ctx).guardrailStatus(ctx.grant.siteId, input.id),
});

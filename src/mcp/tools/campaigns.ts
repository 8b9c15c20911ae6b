import { z } from 'zod';
import { AppError } from '../../errors/app-error.js';
import type { Store } from '../../store/store.js';
import type { CampaignComponentRow, CampaignRow, CampaignRunRow } from '../../store/campaigns.js';
import { COMPONENT_KINDS, liveMs, STEP_OUTCOMES, type CampaignOutcome, type StepRecord } from '../../domain/campaigns/model.js';
import { campaignRunners } from '../../domain/campaigns/runners.js';
import { decisionService } from '../../domain/web/decisions.js';
import {
  addComponent,
  closeCampaign,
  createCampaign,
  launchCampaign,
  pauseCampaign,
  removeComponent,
  updateCampaign,
  type ActionResult,
} from '../../domain/campaigns/service.js';
import { defineTool, type ToolContext } from '../tool.js';
import { iso, limitInput } from './shared.js';

const area = 'campaigns';

/** The step runners of every component kind. */
const RUNNERS = campaignRunners();

/** After a launch, pause or close: the site's cached decision snapshot is stale (as after the web tools' changes). */
function changed(ctx: ToolContext): void {
  decisionService(ctx.store).invalidate(ctx.grant.siteId);
}

const actorOf = (ctx: ToolContext) => `token:${ctx.grant.tokenId}`;

const campaignId = z.string().min(1).max(128).describe('Campaign id (cmp_...).');
const kindInput = z.enum(COMPONENT_KINDS).describe('Kind of component: segment, variant, placement, experiment (a layout test) or trigger (a triggered message).');
const refInput = z.string().min(1).max(128).describe('Id of the segment, variant, placement, experiment or trigger in this site.');

const componentView = z.object({
  id: z.string().describe('Component id within the campaign (cmc_...).'),
  kind: z.enum(COMPONENT_KINDS).describe('Kind of component.'),
  ref_id: z.string().describe('Id of the bundled segment, variant, placement, experiment or trigger.'),
  required: z.boolean().describe('Whether a failed launch step of this component rolls the whole launch back.'),
  added_at: z.string().describe('When it was added, ISO 8601.'),
});

const stepView = z.object({
  component_id: z.string().describe('Component id within the campaign.'),
  kind: z.enum(COMPONENT_KINDS).describe('Kind of component.'),
  ref_id: z.string().describe('Id of the component.'),
  required: z.boolean().describe('Whether the component is required.'),
  step: z.string().describe('What was done: verify, publish, enable, start, keep, disable, pause, none.'),
  outcome: z.enum(STEP_OUTCOMES).describe('succeeded, skipped (nothing to do) or failed.'),
  error_code: z.string().nullable().describe('Machine code of a failure; null unless failed.'),
  reason: z.string().describe('What happened, in words.'),
});

const runView = z.object({
  id: z.string().describe('Run id (cmr_...).'),
  action: z.enum(['launch', 'pause', 'close']).describe('The action.'),
  result: z.enum(['applied', 'rolled_back']).describe('applied, or rolled_back: a required launch step failed and nothing of the launch stayed applied.'),
  steps: z.array(stepView).describe('Outcome of each component step, in the order they ran.'),
  actor: z.string().describe('Who ran it (token:<id>).'),
  at: z.string().describe('When, ISO 8601.'),
});

const outcomeView = z
  .object({
    days_live: z.number().int().describe('Whole days the campaign was live (paused time excluded).'),
    exposed_visitors: z.number().int().nullable().describe('Distinct visitors shown the campaign (holdout excluded); null in snapshots taken before this was recorded.'),
    holdout_visitors: z.number().int().nullable().describe('Distinct holdout visitors on the same zones; null in snapshots taken before this was recorded.'),
    sessions: z.number().int().describe('Sessions of the profiles exposed to the campaign, from their first exposure.'),
    profiles: z.number().int().describe('Distinct profiles exposed to the campaign (a visitor counts as its profile).'),
    conversions: z.number().int().describe('Conversions of those profiles after their first exposure.'),
    conversion_rate: z.number().describe('conversions / sessions (0 without sessions).'),
    revenue: z.number().describe('Revenue of those conversions in the site currency.'),
    currency: z.string().describe('ISO 4217 currency of revenue.'),
    leads: z.number().int().describe('Leads of exposed profiles after their first exposure.'),
    lift: z.number().nullable().describe('Relative lift of the profile conversion rate over the holdout on the same zones; null when unmeasured.'),
  })
  .describe('The outcome snapshot taken at close.');

const campaignView = z.object({
  id: z.string().describe('Campaign id.'),
  name: z.string().describe('Name.'),
  description: z.string().nullable().describe('Description, if any.'),
  status: z.enum(['draft', 'live', 'paused', 'closed']).describe('draft → live ⇄ paused → closed.'),
  components: z.array(componentView).describe('The bundled components, in the order they were added.'),
  created_by: z.string().describe('Who created it.'),
  created_at: z.string().describe('ISO 8601.'),
  updated_at: z.string().describe('ISO 8601.'),
  first_launched_at: z.string().nullable().describe('First launch, ISO 8601; null if never launched.'),
  live_since: z.string().nullable().describe('Start of the current live period; null unless live.'),
  live_days: z.number().describe('Days live so far (paused time excluded), with decimals.'),
  paused_at: z.string().nullable().describe('Last pause, ISO 8601.'),
  closed_at: z.string().nullable().describe('Close, ISO 8601.'),
  closed_by: z.string().nullable().describe('Who closed it.'),
  outcome: outcomeView.nullable().describe('The outcome snapshot taken at close; null until closed.'),
});

type CampaignView = z.input<typeof campaignView>;

function componentOut(c: CampaignComponentRow): z.input<typeof componentView> {
  return { id: c.id, kind: c.kind, ref_id: c.ref_id, required: Number(c.required) === 1, added_at: iso(Number(c.created_at))! };
}

function runOut(r: CampaignRunRow): z.input<typeof runView> {
  return { id: r.id, action: r.action, result: r.result, steps: JSON.parse(r.steps) as StepRecord[], actor: r.actor, at: iso(Number(r.created_at))! };
}

const num = (v: number | null) => (v === null ? null : Number(v));

function viewOf(c: CampaignRow, components: readonly CampaignComponentRow[]): CampaignView {
  return {
    id: c.id,
    name: c.name,
    description: c.description,
    status: c.status,
    components: components.map(componentOut),
    created_by: c.created_by,
    created_at: iso(Number(c.created_at))!,
    updated_at: iso(Number(c.updated_at))!,
    first_launched_at: iso(num(c.first_launched_at)),
    live_since: iso(num(c.live_since)),
    live_days: Math.round((liveMs(c, Date.now()) / 86_400_000) * 1000) / 1000,
    paused_at: iso(num(c.paused_at)),
    closed_at: iso(num(c.closed_at)),
    closed_by: c.closed_by,
    outcome: c.outcome === null ? null : outcomeOf(c.outcome),
  };
}

/** A stored snapshot; ones closed before the visitor counts were recorded read them as null. */
function outcomeOf(json: string): Omit<CampaignOutcome, 'exposed_visitors' | 'holdout_visitors'> & { exposed_visitors: number | null; holdout_visitors: number | null } {
  const o = JSON.parse(json) as Partial<CampaignOutcome> & Omit<CampaignOutcome, 'exposed_visitors' | 'holdout_visitors'>;
  return { ...o, exposed_visitors: o.exposed_visitors ?? null, holdout_visitors: o.holdout_visitors ?? null };
}

async function view(store: Store, c: CampaignRow): Promise<CampaignView> {
  return viewOf(c, await store.campaigns.components(c.site_id, c.id));
}

async function own(ctx: ToolContext, id: string): Promise<CampaignRow> {
  const c = await ctx.store.campaigns.get(ctx.grant.siteId, id);
  if (!c) throw new AppError('not_found', `no campaign ${id} in this site`, { field: 'id' });
  return c;
}

const actionOutput = z.object({
  campaign: campaignView.describe('The campaign after the action.'),
  run: runView.describe('The recorded run with every step outcome.'),
});

async function actionOut(store: Store, r: ActionResult): Promise<z.input<typeof actionOutput>> {
  return { campaign: await view(store, r.campaign), run: runOut(r.run) };
}

export const campaignsList = defineTool({
  name: 'campaigns_list',
  title: 'List campaigns',
  description: 'Campaigns of the site, newest first, with their status and component counts; filter by status and page with `before`. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({
    status: z.enum(['draft', 'live', 'paused', 'closed']).optional().describe('Only campaigns in this status.'),
    limit: limitInput(200, 50),
    before: z.string().min(1).max(128).optional().describe('next_before of the previous page.'),
  }),
  output: z.object({
    campaigns: z
      .array(
        z.object({
          id: z.string().describe('Campaign id.'),
          name: z.string().describe('Name.'),
          status: z.enum(['draft', 'live', 'paused', 'closed']).describe('Status.'),
          components: z.number().int().describe('Number of components.'),
          first_launched_at: z.string().nullable().describe('First launch, ISO 8601.'),
          closed_at: z.string().nullable().describe('Close, ISO 8601.'),
          created_at: z.string().describe('ISO 8601.'),
        }),
      )
      .describe('The page of campaigns.'),
    next_before: z.string().nullable().describe('Pass as `before` for the next page; null on the last page.'),
  }),
  handler: async (ctx, input) => {
    const rows = await ctx.store.campaigns.list(ctx.grant.siteId, { status: input.status, before: input.before, limit: input.limit + 1 });
    const page = rows.slice(0, input.limit);
    const counts = await ctx.store.campaigns.componentCounts(
      ctx.grant.siteId,
      page.map((r) => r.id),
    );
    return {
      campaigns: page.map((c) => ({
        id: c.id,
        name: c.name,
        status: c.status,
        components: counts.get(c.id) ?? 0,
        first_launched_at: iso(num(c.first_launched_at)),
        closed_at: iso(num(c.closed_at)),
        created_at: iso(Number(c.created_at))!,
      })),
      next_before: rows.length > input.limit ? page[page.length - 1]!.id : null,
    };
  },
});

export const campaignsGet = defineTool({
  name: 'campaigns_get',
  title: 'Read a campaign',
  description:
    'One campaign with its components, lifecycle dates, the outcome snapshot once closed, and its recent launch, pause and close runs with every step outcome (including launches that were rolled back). Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ id: campaignId, runs: limitInput(100, 10).describe('How many recent runs to return, 1 to 100 (default 10).') }),
  output: campaignView.extend({ runs: z.array(runView).describe('Recent runs, newest first.') }),
  handler: async (ctx, input) => {
    const c = await own(ctx, input.id);
    const runs = await ctx.store.campaigns.runs(ctx.grant.siteId, c.id, input.runs);
    return { ...(await view(ctx.store, c)), runs: runs.map(runOut) };
  },
});

export const campaignsCreate = defineTool({
  name: 'campaigns_create',
  title: 'Create a campaign',
  description: 'Creates a draft campaign; add its components with campaigns_add_component, then launch it. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true },
  input: z.object({
    name: z.string().trim().min(1).max(200).describe('Name of the campaign.'),
    description: z.string().max(2000).optional().describe('What the campaign is for.'),
  }),
  output: campaignView,
  handler: async (ctx, input) => view(ctx.store, await createCampaign(ctx.store, ctx.grant.siteId, actorOf(ctx), input)),
});

export const campaignsUpdate = defineTool({
  name: 'campaigns_update',
  title: 'Change a campaign',
  description: 'Changes the name or description of a campaign that is not closed. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true, idempotent: true },
  input: z.object({
    id: campaignId,
    name: z.string().trim().min(1).max(200).optional().describe('New name.'),
    description: z.string().max(2000).nullable().optional().describe('New description; null clears it.'),
  }),
  output: campaignView,
  handler: async (ctx, input) => view(ctx.store, await updateCampaign(ctx.store, ctx.grant.siteId, input.id, input)),
});

export const campaignsAddComponent = defineTool({
  name: 'campaigns_add_component',
  title: 'Add a component to a campaign',
  description:
    'Bundles a segment, variant, placement, layout test (experiment) or triggered message into a draft or paused campaign. A required component (the default) whose launch step fails rolls the whole launch back; an optional one only records its failure. Adding one the campaign already has changes its required flag. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true, idempotent: true },
  input: z.object({
    id: campaignId,
    kind: kindInput,
    ref_id: refInput,
    required: z.boolean().default(true).describe('Whether a failed launch step of it rolls the launch back (default true).'),
  }),
  output: z.object({ campaign: campaignView.describe('The campaign after the change.'), component: componentView.describe('The component.'), added: z.boolean().describe('False when the campaign already had it.') }),
  handler: async (ctx, input) => {
    const r = await addComponent(ctx.store, RUNNERS, ctx.grant.siteId, input.id, input);
    return { campaign: await view(ctx.store, await own(ctx, r.campaign.id)), component: componentOut(r.component), added: r.added };
  },
});

export const campaignsRemoveComponent = defineTool({
  name: 'campaigns_remove_component',
  title: 'Remove a component from a campaign',
  description: 'Takes a component out of a draft or paused campaign. The component itself (segment, variant, ...) is not changed. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true },
  input: z.object({ id: campaignId, kind: kindInput, ref_id: refInput }),
  output: z.object({ campaign: campaignView.describe('The campaign after the change.'), removed: componentView.describe('The component taken out.') }),
  handler: async (ctx, input) => {
    const removed = await removeComponent(ctx.store, ctx.grant.siteId, input.id, input);
    return { campaign: await view(ctx.store, await own(ctx, input.id)), removed: componentOut(removed) };
  },
});

export const campaignsLaunch = defineTool({
  name: 'campaigns_launch',
  title: 'Launch a campaign',
  description:
    'Makes a draft or paused campaign live: verifies segments, publishes approved variants, enables placements and triggers, starts layout tests, recording each step as succeeded, skipped or failed. If a required component fails, nothing of the launch stays applied and the call fails with code conflict, listing the steps (the attempt stays recorded in campaigns_get). Emits campaign.launched. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true, approvesOrPublishes: true },
  input: z.object({ id: campaignId }),
  output: actionOutput,
  handler: async (ctx, input) => {
    const r = await launchCampaign(ctx.store, RUNNERS, ctx.grant.siteId, input.id, actorOf(ctx));
    changed(ctx);
    return actionOut(ctx.store, r);
  },
});

export const campaignsPause = defineTool({
  name: 'campaigns_pause',
  title: 'Pause a campaign',
  description:
    'Pauses a live campaign: disables its placements and triggers and pauses its layout tests; variants stay published (nothing serves them while their placements and tests are off) and segments are untouched. A failed step does not undo the others. Launch it again to resume. Emits campaign.paused. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true },
  input: z.object({ id: campaignId }),
  output: actionOutput,
  handler: async (ctx, input) => {
    const r = await pauseCampaign(ctx.store, RUNNERS, ctx.grant.siteId, input.id, actorOf(ctx));
    changed(ctx);
    return actionOut(ctx.store, r);
  },
});

export const campaignsClose = defineTool({
  name: 'campaigns_close',
  title: 'Close a campaign',
  description:
    'Closes a campaign for good: disables its placements, triggers and published variants, ends its layout tests by hand (experiment.ended; ship a winner with experiments_ship), and stores an outcome snapshot (exposed and holdout visitors, sessions, conversions, revenue, leads, lift over the holdout) since the first launch. Emits campaign.closed. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true, approvesOrPublishes: true },
  input: z.object({ id: campaignId }),
  output: actionOutput.extend({ outcome: outcomeView }),
  handler: async (ctx, input) => {
    const r = await closeCampaign(ctx.store, RUNNERS, ctx.grant.siteId, input.id, actorOf(ctx));
    changed(ctx);
    return { ...(await actionOut(ctx.store, r)), outcome: r.outcome! };
  },
});

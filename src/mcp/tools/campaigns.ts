import { z } from 'zod';
import { COMPONENT_KINDS } from '../../domain/campaigns/model.js';
import { CampaignsService } from '../../domain/campaigns/service.js';
import { actionView, campaignListView, campaignView, componentView, outcomeView, runView } from '../../domain/campaigns/views.js';
import { defineTool, type ToolContext } from '../tool.js';
import { limitInput } from './shared.js';

const area = 'campaigns';

const actorOf = (ctx: ToolContext) => `token:${ctx.grant.tokenId}`;
const svc = (ctx: ToolContext) => new CampaignsService(ctx.store);

const campaignId = z.string().min(1).max(128).describe('Campaign id (cmp_...).');
const kindInput = z.enum(COMPONENT_KINDS).describe('Kind of component: segment, variant, placement, experiment (a layout test) or trigger (a triggered message).');
const refInput = z.string().min(1).max(128).describe('Id of the segment, variant, placement, experiment or trigger in this site.');

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
  output: campaignListView,
  handler: (ctx, input) => svc(ctx).list(ctx.grant.siteId, input),
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
  handler: (ctx, input) => svc(ctx).get(ctx.grant.siteId, input.id, input.runs),
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
  handler: (ctx, input) => svc(ctx).create(ctx.grant.siteId, actorOf(ctx), input),
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
  handler: (ctx, input) => svc(ctx).update(ctx.grant.siteId, input.id, input),
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
  handler: (ctx, input) => svc(ctx).addComponent(ctx.grant.siteId, input.id, input),
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
  handler: (ctx, input) => svc(ctx).removeComponent(ctx.grant.siteId, input.id, input),
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
  output: actionView,
  handler: (ctx, input) => svc(ctx).launch(ctx.grant.siteId, input.id, actorOf(ctx)),
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
  output: actionView,
  handler: (ctx, input) => svc(ctx).pause(ctx.grant.siteId, input.id, actorOf(ctx)),
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
  output: actionView.extend({ outcome: outcomeView }),
  handler: (ctx, input) => svc(ctx).close(ctx.grant.siteId, input.id, actorOf(ctx)),
});

import { z } from 'zod';
import { AppError } from '../../errors/app-error.js';
import { createPlacement, requirePlacement, requireVariant, requireZone, updatePlacement } from '../../domain/web/service.js';
import { decisionService, type DecisionResult } from '../../domain/web/decisions.js';
import { filedDraft } from '../../domain/drafts/schema.js';
import { proposePlacementCreate, proposePlacementDelete, proposePlacementUpdate } from '../../domain/drafts/propose.js';
import { defineTool, type ToolContext } from '../tool.js';
import { LOOKUP_KINDS, resolveProfile } from './shared.js';
import { actor, change, idInput, placementOut, placementView } from './web-shared.js';

const area = 'placements';

const placementId = idInput('Placement id (plc_...).');
const segmentId = idInput('Segment id (seg_...); null: everyone.').nullable();
const priority = z.number().int().min(-1_000_000).max(1_000_000).describe('Higher wins among the placements a visitor qualifies for.');
const placementChange = placementView.extend({ draft: filedDraft });

export const placementsList = defineTool({
  name: 'placements_list',
  title: 'List placements',
  description: 'Placements of the site, optionally of one zone or variant, highest priority first per zone. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ zone_id: idInput('Only this zone.').optional(), variant_id: idInput('Only this variant.').optional() }),
  output: z.object({ placements: z.array(placementView).describe('The placements.') }),
  handler: async (ctx, input) => {
    if (input.zone_id !== undefined) await requireZone(ctx.store, ctx.grant.siteId, input.zone_id);
    if (input.variant_id !== undefined) await requireVariant(ctx.store, ctx.grant.siteId, input.variant_id);
    return { placements: (await ctx.store.web.listPlacements(ctx.grant.siteId, { zoneId: input.zone_id, variantId: input.variant_id })).map(placementOut) };
  },
});

export const placementsCreate = defineTool({
  name: 'placements_create',
  title: 'Place a variant',
  description:
    `Wires a published variant to its zone for a segment (omitted: the variant\u2019s own segment; null: everyone) with a priority. Scope: write.`,
  area,
  scope: 'write',
  flags: { changesData: true, changesExposure: true },
  input: z.object({
    variant_id: idInput('A published variant (var_...).'),
    segment_id: segmentId.optional(),
    priority: priority.default(0),
    enabled: z.boolean().default(true).describe('Whether it applies.'),
  }),
  output: placementChange,
  handler: async (ctx, input) => {
    if (ctx.drafts) {
      const r = await proposePlacementCreate(ctx.store, ctx.grant.siteId, actor(ctx), input);
      return { ...placementOut(r.placement), draft: r.draft };
    }
    return placementOut(await change(ctx, (tx, now) => createPlacement(tx, ctx.grant.siteId, input, now)));
  },
});

export const placementsUpdate = defineTool({
  name: 'placements_update',
  title: 'Change a placement',
  description: `Changes the segment, priority or enabled flag of a placement. Scope: write.`,
  area,
  scope: 'write',
  flags: { changesData: true, idempotent: true, changesExposure: true },
  input: z.object({ id: placementId, segment_id: segmentId.optional(), priority: priority.optional(), enabled: z.boolean().optional().describe('Whether it applies.') }),
  output: placementChange,
  handler: async (ctx, input) => {
    const { id, ...patch } = input;
    if (ctx.drafts) {
      const r = await proposePlacementUpdate(ctx.store, ctx.grant.siteId, actor(ctx), id, patch);
      return { ...placementOut(r.placement), draft: r.draft };
    }
    return placementOut(await change(ctx, (tx, now) => updatePlacement(tx, ctx.grant.siteId, id, patch, now)));
  },
});

export const placementsDelete = defineTool({
  name: 'placements_delete',
  title: 'Remove a placement',
  description: `Deletes a placement; the variant stays. Scope: write.`,
  area,
  scope: 'write',
  flags: { changesData: true, destructive: true, idempotent: true, changesExposure: true },
  input: z.object({ id: placementId }),
  output: z.object({
    removed: z.string().nullable().describe('The deleted placement id; null when the deletion was filed as a draft.'),
    draft: filedDraft,
  }),
  handler: async (ctx, input) => {
    if (ctx.drafts) return { removed: null, draft: (await proposePlacementDelete(ctx.store, ctx.grant.siteId, actor(ctx), input.id)).draft };
    await change(ctx, async (tx) => {
      await requirePlacement(tx, ctx.grant.siteId, input.id);
      await tx.web.deletePlacement(ctx.grant.siteId, input.id);
    });
    return { removed: input.id };
  },
});

// ---- decisions -----------------------------------------------------------

const visitorInput = {
  visitor_id: z.string().min(1).max(128).optional().describe('The visitor id (the persistent visitor cookie). Give this or profile.'),
  profile: z
    .object({ by: z.enum(LOOKUP_KINDS).describe('Which identifier value is.'), value: z.string().min(1).max(320).describe('The identifier value.') })
    .optional()
    .describe('A profile instead of a visitor id: its most recent visitor id is used.'),
  url: z.string().min(1).max(2048).describe('The URL (or path) the visitor is on, e.g. https://shop.example/pricing?plan=pro.'),
};

async function decideFor(ctx: ToolContext, input: { visitor_id?: string | undefined; profile?: { by: (typeof LOOKUP_KINDS)[number]; value: string } | undefined; url: string }): Promise<DecisionResult> {
  if ((input.visitor_id === undefined) === (input.profile === undefined)) {
    throw new AppError('validation_failed', 'give exactly one of visitor_id and profile', { field: 'visitor_id' });
  }
  let visitorId = input.visitor_id;
  if (input.profile) {
    const p = await resolveProfile(ctx, input.profile.by, input.profile.value);
    visitorId = (await ctx.store.web.visitorIdsOfProfile(ctx.grant.siteId, p.id))[0];
    if (visitorId === undefined) throw new AppError('validation_failed', `profile ${p.id} has no visitor id; pass visitor_id`, { field: 'profile' });
  }
  const r = await decisionService(ctx.store).preview(ctx.grant.siteId, visitorId!, input.url);
  if (!r) throw new AppError('validation_failed', 'url: an absolute http(s) URL or a path starting with "/"', { field: 'url' });
  return r;
}

const contentView = z
  .object({ id: z.string().describe('Content id.'), kind: z.enum(['html', 'json']).describe('html or json.'), body: z.string().describe('The body to render.') })
  .nullable()
  .describe('What the zone shows; null: the page as served.');

const reason = z
  .enum(['override_force_arm', 'override_pin_zone', 'override_personalization_off', 'holdout', 'shipped_experiment', 'experiment_arm', 'placement', 'default'])
  .describe('The precedence step that decided: override > holdout > shipped experiment > running experiment arm > placement > zone default.');

const zoneDecisionView = z.object({
  zone_id: z.string().describe('Zone.'),
  page_id: z.string().describe('Its page.'),
  name: z.string().describe('Zone name.'),
  selector: z.string().describe('CSS selector.'),
  content: contentView,
  variant_id: z.string().nullable().describe('The variant shown; null: the zone default.'),
  experiment_id: z.string().nullable().describe('The experiment that decided, if any.'),
  arm_id: z.string().nullable().describe('The arm, if an experiment decided.'),
  placement_id: z.string().nullable().describe('The placement that decided, if any.'),
  override_id: z.string().nullable().describe('The override that decided, if any.'),
  reason,
});

const visitorView = z.object({
  visitor_id: z.string().describe('The visitor id decided for.'),
  profile_id: z.string().nullable().describe('The profile the visitor id belongs to; null: unknown visitor.'),
  segment_ids: z.array(z.string()).describe('Segments the profile is in.'),
  holdout: z.boolean().describe('Whether the visitor is in the site holdout.'),
  earlier_arms: z.array(z.object({ experiment_id: z.string().describe('Experiment.'), arm_id: z.string().describe('Arm the visitor keeps.') })).describe('Arms the visitor was exposed to before.'),
});

function visitorOut(r: DecisionResult): z.input<typeof visitorView> {
  return {
    visitor_id: r.visitor.visitorId,
    profile_id: r.visitor.profileId,
    segment_ids: [...r.visitor.segmentIds].sort(),
    holdout: r.decision.holdout,
    earlier_arms: [...r.visitor.earlierArms].map(([experiment_id, arm_id]) => ({ experiment_id, arm_id })),
  };
}

export const placementsPreviewForVisitor = defineTool({
  name: 'placements_preview_for_visitor',
  title: 'Preview what a visitor sees',
  description: 'What every zone of every page matching the URL shows to a visitor (or a profile), as the browser tag would get it. Records no exposure. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object(visitorInput),
  output: z.object({
    url: z.object({ path: z.string().describe('Path decided on.'), query: z.string().describe('Query string.') }).describe('The URL as matched.'),
    pages: z.array(z.object({ id: z.string().describe('Page.'), name: z.string().describe('Name.') })).describe('Pages whose pattern matches.'),
    visitor: visitorView,
    zones: z.array(zoneDecisionView).describe('One decision per zone.'),
  }),
  handler: async (ctx, input) => {
    const r = await decideFor(ctx, input);
    return {
      url: r.decision.url,
      pages: r.decision.pages,
      visitor: visitorOut(r),
      zones: r.decision.zones.map(({ chain: _chain, holdout: _h, ...z }) => z),
    };
  },
});

export const placementsExplainDecision = defineTool({
  name: 'placements_explain_decision',
  title: 'Explain a decision',
  description:
    'Why each zone shows what it shows to a visitor (or a profile) on a URL: the reason chain through override, holdout, shipped experiment, experiment arm, placement and default, with the visitor facts used. Records no exposure. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object(visitorInput),
  output: z.object({
    url: z.object({ path: z.string().describe('Path decided on.'), query: z.string().describe('Query string.') }).describe('The URL as matched.'),
    pages: z.array(z.object({ id: z.string().describe('Page.'), name: z.string().describe('Name.') })).describe('Pages whose pattern matches.'),
    visitor: visitorView,
    zones: z
      .array(
        zoneDecisionView.extend({
          chain: z
            .array(
              z.object({
                step: z.enum(['override', 'holdout', 'shipped', 'experiment', 'placement', 'default']).describe('Precedence step.'),
                outcome: z
                  .enum(['applied', 'skipped', 'not_matched', 'none'])
                  .describe('applied: decided; skipped: would apply but its variant cannot be served; not_matched: a placement for a segment the visitor is not in; none: nothing there.'),
                detail: z.string().describe('What was found.'),
              }),
            )
            .describe('Every step looked at, in precedence order, ending with the one that applied.'),
        }),
      )
      .describe('One explained decision per zone.'),
  }),
  handler: async (ctx, input) => {
    const r = await decideFor(ctx, input);
    return {
      url: r.decision.url,
      pages: r.decision.pages,
      visitor: visitorOut(r),
      zones: r.decision.zones.map(({ holdout: _h, ...z }) => z),
    };
  },
});

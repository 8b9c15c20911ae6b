import { z } from 'zod';
import { AppError } from '../../errors/app-error.js';
import { PlacementsService } from '../../domain/web/placements.js';
import { explainForVisitor, previewForVisitor, type PreviewSubject } from '../../domain/web/preview.js';
import { decisionExplainView, decisionPreviewView } from '../../domain/web/decision-views.js';
import { placementOut, placementView } from '../../domain/web/views.js';
import { filedDraft } from '../../domain/drafts/schema.js';
import { proposePlacementCreate, proposePlacementDelete, proposePlacementUpdate } from '../../domain/drafts/propose.js';
import { defineTool, type ToolContext } from '../tool.js';
import { LOOKUP_KINDS, resolveProfile } from './shared.js';
import { actor, idInput } from './web-shared.js';

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
  handler: async (ctx, input) => ({ placements: await new PlacementsService(ctx.store).list(ctx.grant.siteId, { zoneId: input.zone_id, variantId: input.variant_id }) }),
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
    return new PlacementsService(ctx.store).create(ctx.grant.siteId, input);
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
    return new PlacementsService(ctx.store).update(ctx.grant.siteId, id, patch);
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
    return new PlacementsService(ctx.store).remove(ctx.grant.siteId, input.id);
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

/** The subject of a preview: the visitor id given, or the profile named (exactly one of them). */
async function subjectOf(ctx: ToolContext, input: { visitor_id?: string | undefined; profile?: { by: (typeof LOOKUP_KINDS)[number]; value: string } | undefined }): Promise<PreviewSubject> {
  if ((input.visitor_id === undefined) === (input.profile === undefined)) {
    throw new AppError('validation_failed', 'give exactly one of visitor_id and profile', { field: 'visitor_id' });
  }
  if (input.profile) return { profileId: (await resolveProfile(ctx, input.profile.by, input.profile.value)).id };
  return { visitorId: input.visitor_id! };
}

export const placementsPreviewForVisitor = defineTool({
  name: 'placements_preview_for_visitor',
  title: 'Preview what a visitor sees',
  description: 'What every zone of every page matching the URL shows to a visitor (or a profile), as the browser tag would get it. Records no exposure. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object(visitorInput),
  output: decisionPreviewView,
  handler: async (ctx, input) => previewForVisitor(ctx.store, ctx.grant.siteId, await subjectOf(ctx, input), input.url),
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
  output: decisionExplainView,
  handler: async (ctx, input) => explainForVisitor(ctx.store, ctx.grant.siteId, await subjectOf(ctx, input), input.url),
});

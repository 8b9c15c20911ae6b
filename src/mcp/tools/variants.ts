import { z } from 'zod';
import { VariantsService } from '../../domain/web/variants.js';
import { renderStatsView, variantStatus, variantView } from '../../domain/web/views.js';
import { WATCHDOG } from '../../domain/web/watchdog.js';
import type { VariantAction } from '../../domain/web/lifecycle.js';
import { defineTool, type ToolContext } from '../tool.js';
import { actor, idInput, nameInput } from './web-shared.js';

const area = 'variants';

const segmentId = idInput('Segment id (seg_...) the variant is meant for; null: anyone.').nullable();
const variantId = idInput('Variant id (var_...).');

export const variantsList = defineTool({
  name: 'variants_list',
  title: 'List variants',
  description: 'Variants of the site, optionally of one zone or one status. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ zone_id: idInput('Only this zone.').optional(), status: variantStatus.optional().describe('Only this status.') }),
  output: z.object({ variants: z.array(variantView).describe('The variants.') }),
  handler: async (ctx, input) => ({ variants: await new VariantsService(ctx.store).list(ctx.grant.siteId, { zoneId: input.zone_id, status: input.status }) }),
});

export const variantsGet = defineTool({
  name: 'variants_get',
  title: 'Read a variant',
  description: 'One variant with its lifecycle stamps. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ id: variantId }),
  output: variantView,
  handler: (ctx, input) => new VariantsService(ctx.store).get(ctx.grant.siteId, input.id),
});

export const variantsCreateDraft = defineTool({
  name: 'variants_create_draft',
  title: 'Propose a variant',
  description: 'Creates a draft variant of a zone: which content it shows and the segment it is meant for. A draft is never served. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true },
  input: z.object({ zone_id: idInput('The zone (zone_...).'), content_id: idInput('The content (cnt_...).'), segment_id: segmentId.optional(), name: nameInput }),
  output: variantView,
  handler: (ctx, input) => new VariantsService(ctx.store).createDraft(ctx.grant.siteId, input, actor(ctx)),
});

export const variantsUpdateDraft = defineTool({
  name: 'variants_update_draft',
  title: 'Edit a draft variant',
  description: 'Changes the content, segment or name of a variant that is still a draft (conflict otherwise). Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true, idempotent: true },
  input: z.object({ id: variantId, content_id: idInput('The content (cnt_...).').optional(), segment_id: segmentId.optional(), name: nameInput.optional() }),
  output: variantView,
  handler: async (ctx, input) => {
    const { id, ...patch } = input;
    return new VariantsService(ctx.store).updateDraft(ctx.grant.siteId, id, patch);
  },
});

function transitionTool(
  action: VariantAction,
  meta: { name: string; title: string; description: string; flags: { approvesOrPublishes?: boolean; destructive?: boolean } },
) {
  return defineTool({
    name: meta.name,
    title: meta.title,
    description: meta.description,
    area,
    scope: 'write',
    flags: { changesData: true, ...meta.flags },
    input: z.object({ id: variantId, reason: z.string().trim().min(1).max(500).optional().describe('Why (kept as disabled_reason when disabling).') }),
    output: variantView,
    handler: (ctx: ToolContext, input: { id: string; reason?: string | undefined }) =>
      new VariantsService(ctx.store).transition(ctx.grant.siteId, input.id, action, actor(ctx), input.reason ?? null),
  });
}

export const variantsApprove = transitionTool('approve', {
  name: 'variants_approve',
  title: 'Approve a variant',
  description: 'Approves a draft (draft → approved); which content it shows can no longer change. Scope: write.',
  flags: { approvesOrPublishes: true },
});

export const variantsPublish = transitionTool('publish', {
  name: 'variants_publish',
  title: 'Publish a variant',
  description: 'Publishes an approved variant, or re-publishes a disabled one (→ published): placements and pins may serve it. Scope: write.',
  flags: { approvesOrPublishes: true },
});

export const variantsDisable = transitionTool('disable', {
  name: 'variants_disable',
  title: 'Disable a variant',
  description: 'Stops serving a variant at once (approved or published → disabled); placements stay and apply again after publishing. Scope: write.',
  flags: {},
});

export const variantsArchive = transitionTool('archive', {
  name: 'variants_archive',
  title: 'Archive a variant',
  description: 'Retires a variant for good (any status → archived); it is never served again. Scope: write.',
  flags: { destructive: true },
});

export const variantsRenderStats = defineTool({
  name: 'variants_render_stats',
  title: 'Render health of a variant',
  description: `Renders and failures the browser tag reported for a variant over the watchdog window (last ${WATCHDOG.windowMinutes} minutes, since it was last published), the thresholds (at least ${WATCHDOG.minRenders} renders and ${WATCHDOG.failureRate * 100}% failures disable it) and the latest errors. Scope: read.`,
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ id: variantId }),
  output: renderStatsView,
  handler: (ctx, input) => new VariantsService(ctx.store).renderStats(ctx.grant.siteId, input.id),
});

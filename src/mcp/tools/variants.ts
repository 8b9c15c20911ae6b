import { z } from 'zod';
import { createDraft, requireVariant, requireZone, transitionVariant, updateDraft } from '../../domain/web/service.js';
import { WATCHDOG, tripped } from '../../domain/web/watchdog.js';
import type { VariantAction } from '../../domain/web/lifecycle.js';
import { defineTool, type ToolContext } from '../tool.js';
import { iso } from './shared.js';
import { actor, change, idInput, nameInput, variantOut, variantView } from './web-shared.js';

const area = 'variants';

const status = z.enum(['draft', 'approved', 'published', 'disabled', 'archived']);
const segmentId = idInput('Segment id (seg_...) the variant is meant for; null: anyone.').nullable();
const variantId = idInput('Variant id (var_...).');

export const variantsList = defineTool({
  name: 'variants_list',
  title: 'List variants',
  description: 'Variants of the site, optionally of one zone or one status. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ zone_id: idInput('Only this zone.').optional(), status: status.optional().describe('Only this status.') }),
  output: z.object({ variants: z.array(variantView).describe('The variants.') }),
  handler: async (ctx, input) => {
    if (input.zone_id !== undefined) await requireZone(ctx.store, ctx.grant.siteId, input.zone_id);
    return { variants: (await ctx.store.web.listVariants(ctx.grant.siteId, { zoneId: input.zone_id, status: input.status })).map(variantOut) };
  },
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
  handler: async (ctx, input) => variantOut(await requireVariant(ctx.store, ctx.grant.siteId, input.id)),
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
  handler: async (ctx, input) => variantOut(await change(ctx, (tx, now) => createDraft(tx, ctx.grant.siteId, input, actor(ctx), now))),
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
    return variantOut(await change(ctx, (tx, now) => updateDraft(tx, ctx.grant.siteId, id, patch, now)));
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
    handler: async (ctx: ToolContext, input: { id: string; reason?: string | undefined }) =>
      variantOut(await change(ctx, (tx, now) => transitionVariant(tx, ctx.grant.siteId, input.id, action, actor(ctx), now, input.reason ?? null))),
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
  output: z.object({
    variant_id: z.string().describe('The variant.'),
    status: status.describe('Its status now.'),
    window_minutes: z.number().int().describe('Length of the window.'),
    window_start: z.string().describe('Start of the window counted, ISO 8601.'),
    renders: z.number().int().describe('Renders in the window.'),
    failures: z.number().int().describe('Failed renders in the window.'),
    failure_rate: z.number().describe('failures / renders (0 without renders).'),
    min_renders: z.number().int().describe('Renders needed before the watchdog acts.'),
    failure_rate_threshold: z.number().describe('Failure rate at or above which it disables the variant.'),
    would_trip: z.boolean().describe('Whether these counts trip the watchdog.'),
    disabled_reason: z.string().nullable().describe('Why it was disabled, if it is.'),
    recent_errors: z.array(z.object({ error: z.string().nullable().describe('Reported error.'), at: z.string().describe('ISO 8601.') })).describe('Up to 10 latest failures.'),
  }),
  handler: async (ctx, input) => {
    const v = await requireVariant(ctx.store, ctx.grant.siteId, input.id);
    const now = Date.now();
    const since = Math.max(now - WATCHDOG.windowMinutes * 60_000, Number(v.published_at ?? 0));
    const [c, errors] = await Promise.all([
      ctx.store.web.renderCounts(ctx.grant.siteId, v.id, since),
      ctx.store.web.recentRenderErrors(ctx.grant.siteId, v.id, since, 10),
    ]);
    return {
      variant_id: v.id,
      status: v.status,
      window_minutes: WATCHDOG.windowMinutes,
      window_start: iso(since)!,
      renders: c.renders,
      failures: c.failures,
      failure_rate: c.renders === 0 ? 0 : c.failures / c.renders,
      min_renders: WATCHDOG.minRenders,
      failure_rate_threshold: WATCHDOG.failureRate,
      would_trip: tripped(c.renders, c.failures),
      disabled_reason: v.disabled_reason,
      recent_errors: errors.map((e) => ({ error: e.error, at: iso(Number(e.created_at))! })),
    };
  },
});

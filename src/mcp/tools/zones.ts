import { z } from 'zod';
import { ZonesService } from '../../domain/web/zones.js';
import { placementView, variantView, zoneOut, zoneView } from '../../domain/web/views.js';
import { filedDraft } from '../../domain/drafts/schema.js';
import { proposeZoneCreate, proposeZoneUpdate } from '../../domain/drafts/propose.js';
import { defineTool } from '../tool.js';
import { actor, idInput, nameInput } from './web-shared.js';

const area = 'zones';

const selector = z.string().trim().min(1).max(500).describe('CSS selector of the region, e.g. #hero or main .banner.');
const defaultContent = idInput('Content id (cnt_...) shown by default; null: none.').nullable();
const zoneChange = zoneView.extend({ draft: filedDraft });

export const zonesList = defineTool({
  name: 'zones_list',
  title: 'List zones',
  description: 'Zones of the site, or of one page. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ page_id: idInput('Only the zones of this page.').optional() }),
  output: z.object({ zones: z.array(zoneView).describe('The zones.') }),
  handler: async (ctx, input) => ({ zones: await new ZonesService(ctx.store).list(ctx.grant.siteId, input.page_id) }),
});

export const zonesGet = defineTool({
  name: 'zones_get',
  title: 'Read a zone',
  description: 'One zone with its variants and placements. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ id: idInput('Zone id (zone_...).') }),
  output: zoneView.extend({
    variants: z.array(variantView).describe('Variants of the zone, any status.'),
    placements: z.array(placementView).describe('Placements of the zone, highest priority first.'),
  }),
  handler: (ctx, input) => new ZonesService(ctx.store).get(ctx.grant.siteId, input.id),
});

export const zonesCreate = defineTool({
  name: 'zones_create',
  title: 'Create a zone',
  description:
    'Creates a named region (CSS selector) of a page, with its default content. For a propose-only token the zone is created without default content and the default is filed as a draft. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true, changesExposure: true },
  input: z.object({ page_id: idInput('The page (page_...).'), name: nameInput, selector, default_content_id: defaultContent.optional() }),
  output: zoneChange,
  handler: async (ctx, input) => {
    if (ctx.drafts) {
      const r = await proposeZoneCreate(ctx.store, ctx.grant.siteId, actor(ctx), input);
      return r.draft ? { ...zoneOut(r.zone), draft: r.draft } : zoneOut(r.zone);
    }
    return new ZonesService(ctx.store).create(ctx.grant.siteId, input);
  },
});

export const zonesUpdate = defineTool({
  name: 'zones_update',
  title: 'Change a zone',
  description:
    'Changes the name, selector or default content of a zone. For a propose-only token a new selector or default content (what visitors see) is filed as a draft; a new name applies at once. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true, idempotent: true, changesExposure: true },
  input: z.object({ id: idInput('Zone id (zone_...).'), name: nameInput.optional(), selector: selector.optional(), default_content_id: defaultContent.optional() }),
  output: zoneChange,
  handler: async (ctx, input) => {
    const { id, ...patch } = input;
    if (ctx.drafts) {
      const r = await proposeZoneUpdate(ctx.store, ctx.grant.siteId, actor(ctx), id, patch);
      return r.draft ? { ...zoneOut(r.zone), draft: r.draft } : zoneOut(r.zone);
    }
    return new ZonesService(ctx.store).update(ctx.grant.siteId, id, patch);
  },
});

export const zonesDelete = defineTool({
  name: 'zones_delete',
  title: 'Delete a zone',
  description:
    'Deletes a zone with its placements and archived variants; refused while it has variants that are not archived or an experiment tests it. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true, destructive: true, idempotent: true },
  input: z.object({ id: idInput('Zone id (zone_...).') }),
  output: z.object({ removed: z.string().describe('The deleted zone id.') }),
  handler: (ctx, input) => new ZonesService(ctx.store).remove(ctx.grant.siteId, input.id, actor(ctx)),
});

import { AppError } from '../../errors/app-error.js';
import type { Repos } from '../../store/repos.js';
import type { Store } from '../../store/store.js';
import type { ZoneRow } from '../../store/zones.js';
import { changeWeb } from './change.js';
import { requireContent } from './content.js';
import { requirePage } from './pages.js';
import { notFound } from './refs.js';
import { placementOut, variantOut, zoneOut, type PlacementView, type VariantView, type ZoneView } from './views.js';

/**
 * The rules of zones. The functions taking `tx` run inside one write operation,
 * scoped to one site; bad input is an AppError and stores nothing.
 */

export async function requireZone(r: Repos, siteId: string, id: string): Promise<ZoneRow> {
  const row = await r.zones.get(siteId, id);
  if (!row) throw notFound('zone', id);
  return row;
}

export interface ZoneInput {
  page_id: string;
  name: string;
  selector: string;
  default_content_id?: string | null | undefined;
}

export interface ZonePatch {
  name?: string | undefined;
  selector?: string | undefined;
  default_content_id?: string | null | undefined;
}

export async function createZone(tx: Repos, siteId: string, z: ZoneInput, now: number): Promise<ZoneRow> {
  await requirePage(tx, siteId, z.page_id);
  const contentId = z.default_content_id ?? null;
  if (contentId !== null) await requireContent(tx, siteId, contentId);
  if (await tx.zones.byName(z.page_id, z.name)) throw new AppError('conflict', `page ${z.page_id} already has a zone named ${JSON.stringify(z.name)}`, { field: 'name' });
  const id = await tx.zones.insert({ siteId, pageId: z.page_id, name: z.name, selector: z.selector, defaultContentId: contentId, now });
  return (await tx.zones.get(siteId, id))!;
}

export async function updateZone(tx: Repos, siteId: string, id: string, z: ZonePatch, now: number): Promise<ZoneRow> {
  const row = await requireZone(tx, siteId, id);
  const contentId = z.default_content_id === undefined ? row.default_content_id : z.default_content_id;
  if (contentId !== null) await requireContent(tx, siteId, contentId);
  const name = z.name ?? row.name;
  const clash = await tx.zones.byName(row.page_id, name);
  if (clash && clash.id !== id) throw new AppError('conflict', `page ${row.page_id} already has a zone named ${JSON.stringify(name)}`, { field: 'name' });
  await tx.zones.update(siteId, id, { name, selector: z.selector ?? row.selector, defaultContentId: contentId, now });
  return (await tx.zones.get(siteId, id))!;
}

/** Deletes a zone with its placements and archived variants; refused while it has live variants or experiments. */
export async function deleteZone(tx: Repos, siteId: string, id: string, by: string, now: number): Promise<void> {
  await requireZone(tx, siteId, id);
  const experiments = await tx.experimentRefs.referencing(siteId, { zoneId: id });
  if (experiments.length > 0) throw new AppError('conflict', `zone ${id} is tested by ${experiments.join(', ')}`, { experiments });
  const variants = await tx.variants.list(siteId, { zoneId: id });
  const live = variants.filter((v) => v.status !== 'archived');
  if (live.length > 0) {
    throw new AppError('conflict', `zone ${id} has ${live.length} variant(s) that are not archived; archive them first`, { variants: live.map((v) => v.id) });
  }
  for (const v of variants) {
    const used = await tx.experimentRefs.referencing(siteId, { variantId: v.id });
    if (used.length > 0) throw new AppError('conflict', `variant ${v.id} of zone ${id} is an arm of ${used.join(', ')}`, { experiments: used });
  }
  await tx.placements.deleteOfZone(siteId, id);
  await tx.overrides.liftOf(siteId, 'zone_id', id, by, now);
  for (const v of variants) await tx.variants.delete(siteId, v.id);
  await tx.zones.delete(siteId, id);
}

/** The zone use cases of one store, returning views. */
export class ZonesService {
  constructor(private readonly store: Store) {}

  /** The zones of the site, or of one page (which must exist). */
  async list(siteId: string, pageId?: string): Promise<ZoneView[]> {
    if (pageId !== undefined) await requirePage(this.store, siteId, pageId);
    return (await this.store.zones.list(siteId, pageId)).map(zoneOut);
  }

  /** One zone with its variants and placements. */
  async get(siteId: string, id: string): Promise<ZoneView & { variants: VariantView[]; placements: PlacementView[] }> {
    const zone = await requireZone(this.store, siteId, id);
    const [variants, placements] = await Promise.all([this.store.variants.list(siteId, { zoneId: zone.id }), this.store.placements.list(siteId, { zoneId: zone.id })]);
    return { ...zoneOut(zone), variants: variants.map(variantOut), placements: placements.map(placementOut) };
  }

  async create(siteId: string, input: ZoneInput): Promise<ZoneView> {
    return zoneOut(await changeWeb(this.store, siteId, (tx, now) => createZone(tx, siteId, input, now)));
  }

  async update(siteId: string, id: string, patch: ZonePatch): Promise<ZoneView> {
    return zoneOut(await changeWeb(this.store, siteId, (tx, now) => updateZone(tx, siteId, id, patch, now)));
  }

  async remove(siteId: string, id: string, by: string): Promise<{ removed: string }> {
    await changeWeb(this.store, siteId, (tx, now) => deleteZone(tx, siteId, id, by, now));
    return { removed: id };
  }
}

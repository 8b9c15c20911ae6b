import { AppError } from '../../errors/app-error.js';
import type { Repos } from '../../store/repos.js';
import type { Store } from '../../store/store.js';
import type { PlacementRow } from '../../store/placements.js';
import { changeWeb } from './change.js';
import { servableByPlacement } from './lifecycle.js';
import { notFound, requireSegment } from './refs.js';
import { requireVariant } from './variants.js';
import { placementOut, type PlacementView } from './views.js';
import { requireZone } from './zones.js';

/**
 * The rules of placements. The functions taking `tx` run inside one write
 * operation, scoped to one site; bad input is an AppError and stores nothing.
 */

export async function requirePlacement(r: Repos, siteId: string, id: string): Promise<PlacementRow> {
  const row = await r.placements.get(siteId, id);
  if (!row) throw notFound('placement', id);
  return row;
}

export interface PlacementInput {
  variant_id: string;
  segment_id?: string | null | undefined;
  priority: number;
  enabled: boolean;
  /** The id reserved for it (a draft approved later keeps the id it was proposed under). */
  id?: string | undefined;
}

export interface PlacementPatch {
  segment_id?: string | null | undefined;
  priority?: number | undefined;
  enabled?: boolean | undefined;
}

export async function createPlacement(tx: Repos, siteId: string, p: PlacementInput, now: number): Promise<PlacementRow> {
  const v = await requireVariant(tx, siteId, p.variant_id);
  if (!servableByPlacement(v.status)) throw new AppError('conflict', `variant ${v.id} is ${v.status}; only published variants are placed`, { status: v.status });
  // Omitted: the variant's own segment; null: everyone.
  const segmentId = p.segment_id === undefined ? v.segment_id : p.segment_id;
  await requireSegment(tx, siteId, segmentId);
  const id = await tx.placements.insert({ siteId, zoneId: v.zone_id, variantId: v.id, segmentId, priority: p.priority, enabled: p.enabled, now, id: p.id });
  return (await tx.placements.get(siteId, id))!;
}

export async function updatePlacement(tx: Repos, siteId: string, id: string, p: PlacementPatch, now: number): Promise<PlacementRow> {
  const row = await requirePlacement(tx, siteId, id);
  const segmentId = p.segment_id === undefined ? row.segment_id : p.segment_id;
  await requireSegment(tx, siteId, segmentId);
  await tx.placements.update(siteId, id, { segmentId, priority: p.priority ?? Number(row.priority), enabled: p.enabled ?? Number(row.enabled) === 1, now });
  return (await tx.placements.get(siteId, id))!;
}

export async function deletePlacement(tx: Repos, siteId: string, id: string): Promise<void> {
  await requirePlacement(tx, siteId, id);
  await tx.placements.delete(siteId, id);
}

/** The placement use cases of one store, returning views. */
export class PlacementsService {
  constructor(private readonly store: Store) {}

  /** Placements of the site, optionally of one zone or variant (which must exist). */
  async list(siteId: string, f: { zoneId?: string | undefined; variantId?: string | undefined }): Promise<PlacementView[]> {
    if (f.zoneId !== undefined) await requireZone(this.store, siteId, f.zoneId);
    if (f.variantId !== undefined) await requireVariant(this.store, siteId, f.variantId);
    return (await this.store.placements.list(siteId, { zoneId: f.zoneId, variantId: f.variantId })).map(placementOut);
  }

  async create(siteId: string, input: PlacementInput): Promise<PlacementView> {
    return placementOut(await changeWeb(this.store, siteId, (tx, now) => createPlacement(tx, siteId, input, now)));
  }

  async update(siteId: string, id: string, patch: PlacementPatch): Promise<PlacementView> {
    return placementOut(await changeWeb(this.store, siteId, (tx, now) => updatePlacement(tx, siteId, id, patch, now)));
  }

  async remove(siteId: string, id: string): Promise<{ removed: string }> {
    await changeWeb(this.store, siteId, (tx) => deletePlacement(tx, siteId, id));
    return { removed: id };
  }
}

import { AppError } from '../../errors/app-error.js';
import type { Repos } from '../../store/repos.js';
import type { Store } from '../../store/store.js';
import type { VariantRow, VariantStatus } from '../../store/variants.js';
import { changeWeb } from './change.js';
import { requireContent } from './content.js';
import { nextStatus, type VariantAction } from './lifecycle.js';
import { notFound, requireSegment } from './refs.js';
import { WATCHDOG, tripped } from './watchdog.js';
import { variantOut, type RenderStats, type VariantView } from './views.js';
import { requireZone } from './zones.js';

/**
 * The rules of variants. The functions taking `tx` run inside one write
 * operation, scoped to one site; bad input is an AppError and stores nothing.
 */

export async function requireVariant(r: Repos, siteId: string, id: string): Promise<VariantRow> {
  const row = await r.variants.get(siteId, id);
  if (!row) throw notFound('variant', id);
  return row;
}

export interface DraftInput {
  zone_id: string;
  content_id: string;
  segment_id?: string | null | undefined;
  name: string;
}

export interface DraftPatch {
  content_id?: string | undefined;
  segment_id?: string | null | undefined;
  name?: string | undefined;
}

export async function createDraft(tx: Repos, siteId: string, v: DraftInput, by: string, now: number): Promise<VariantRow> {
  await requireZone(tx, siteId, v.zone_id);
  await requireContent(tx, siteId, v.content_id);
  const segmentId = v.segment_id ?? null;
  await requireSegment(tx, siteId, segmentId);
  const id = await tx.variants.insert({ siteId, zoneId: v.zone_id, contentId: v.content_id, segmentId, name: v.name, createdBy: by, now });
  return (await tx.variants.get(siteId, id))!;
}

export async function updateDraft(tx: Repos, siteId: string, id: string, v: DraftPatch, now: number): Promise<VariantRow> {
  const row = await requireVariant(tx, siteId, id);
  if (row.status !== 'draft') throw new AppError('conflict', `variant ${id} is ${row.status}; only drafts are edited`, { status: row.status });
  const contentId = v.content_id ?? row.content_id;
  if (v.content_id !== undefined) await requireContent(tx, siteId, contentId);
  const segmentId = v.segment_id === undefined ? row.segment_id : v.segment_id;
  await requireSegment(tx, siteId, segmentId);
  if ((await tx.variants.updateDraft(siteId, id, { contentId, segmentId, name: v.name ?? row.name, now })) === 0) {
    throw new AppError('conflict', `variant ${id} changed meanwhile; read it again`);
  }
  return (await tx.variants.get(siteId, id))!;
}

/** Applies a lifecycle action (see lifecycle.ts); an invalid transition is a conflict. */
export async function transitionVariant(tx: Repos, siteId: string, id: string, action: VariantAction, by: string, now: number, reason: string | null = null): Promise<VariantRow> {
  const row = await requireVariant(tx, siteId, id);
  const to = nextStatus(row.status, action);
  if ((await tx.variants.transition(siteId, id, row.status, to, by, now, action === 'disable' ? (reason ?? `disabled by ${by}`) : null)) === 0) {
    throw new AppError('conflict', `variant ${id} changed meanwhile; read it again`);
  }
  return (await tx.variants.get(siteId, id))!;
}

/** The variant use cases of one store, returning views. */
export class VariantsService {
  constructor(private readonly store: Store) {}

  /** Variants of the site, optionally of one zone (which must exist) or one status. */
  async list(siteId: string, f: { zoneId?: string | undefined; status?: VariantStatus | undefined }): Promise<VariantView[]> {
    if (f.zoneId !== undefined) await requireZone(this.store, siteId, f.zoneId);
    return (await this.store.variants.list(siteId, { zoneId: f.zoneId, status: f.status })).map(variantOut);
  }

  async get(siteId: string, id: string): Promise<VariantView> {
    return variantOut(await requireVariant(this.store, siteId, id));
  }

  async createDraft(siteId: string, input: DraftInput, by: string): Promise<VariantView> {
    return variantOut(await changeWeb(this.store, siteId, (tx, now) => createDraft(tx, siteId, input, by, now)));
  }

  async updateDraft(siteId: string, id: string, patch: DraftPatch): Promise<VariantView> {
    return variantOut(await changeWeb(this.store, siteId, (tx, now) => updateDraft(tx, siteId, id, patch, now)));
  }

  async transition(siteId: string, id: string, action: VariantAction, by: string, reason: string | null): Promise<VariantView> {
    return variantOut(await changeWeb(this.store, siteId, (tx, now) => transitionVariant(tx, siteId, id, action, by, now, reason)));
  }

  /** Renders and failures over the watchdog window (since the variant was last published), the thresholds and the latest errors. */
  async renderStats(siteId: string, id: string): Promise<RenderStats> {
    const v = await requireVariant(this.store, siteId, id);
    const now = Date.now();
    const since = Math.max(now - WATCHDOG.windowMinutes * 60_000, Number(v.published_at ?? 0));
    const [c, errors] = await Promise.all([this.store.renders.counts(siteId, v.id, since), this.store.renders.recentErrors(siteId, v.id, since, 10)]);
    return {
      variant_id: v.id,
      status: v.status,
      window_minutes: WATCHDOG.windowMinutes,
      window_start: new Date(since).toISOString(),
      renders: c.renders,
      failures: c.failures,
      failure_rate: c.renders === 0 ? 0 : c.failures / c.renders,
      min_renders: WATCHDOG.minRenders,
      failure_rate_threshold: WATCHDOG.failureRate,
      would_trip: tripped(c.renders, c.failures),
      disabled_reason: v.disabled_reason,
      recent_errors: errors.map((e) => ({ error: e.error, at: new Date(Number(e.created_at)).toISOString() })),
    };
  }
}

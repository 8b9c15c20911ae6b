import { AppError } from '../../errors/app-error.js';
import type { Repos } from '../../store/repos.js';
import type { Store } from '../../store/store.js';
import type { OverrideRow } from '../../store/overrides.js';
import { changeWeb } from './change.js';
import { servableByArm, servableByPlacement } from './lifecycle.js';
import { requirePage } from './pages.js';
import { notFound } from './refs.js';
import { requireVariant } from './variants.js';
import { overrideOut, type OverrideView } from './views.js';
import { requireZone } from './zones.js';

/**
 * The rules of overrides. The functions taking `tx` run inside one write
 * operation, scoped to one site; bad input is an AppError and stores nothing.
 */

export type OverrideInput =
  | { kind: 'personalization_off'; page_id: string; note?: string | undefined }
  | { kind: 'pin_zone'; zone_id: string; variant_id: string; note?: string | undefined };

export interface ForceArmInput {
  experiment_id: string;
  arm_id: string;
  visitor_id: string;
  note?: string | undefined;
  /** The id reserved for it (a draft approved later keeps the id it was proposed under). */
  id?: string | undefined;
}

/** Publishes a site-wide override (personalization_off or pin_zone); one active override per page or zone. */
export async function publishOverride(tx: Repos, siteId: string, o: OverrideInput, by: string, now: number): Promise<OverrideRow> {
  const active = await tx.overrides.list(siteId, true);
  let id: string;
  if (o.kind === 'personalization_off') {
    await requirePage(tx, siteId, o.page_id);
    const dup = active.find((x) => x.kind === 'personalization_off' && x.page_id === o.page_id);
    if (dup) throw new AppError('conflict', `personalization is already off for page ${o.page_id} (override ${dup.id})`, { override_id: dup.id });
    id = await tx.overrides.insert({ siteId, kind: o.kind, pageId: o.page_id, zoneId: null, variantId: null, experimentId: null, armId: null, visitorId: null, note: o.note ?? null, setBy: by, now });
  } else {
    const zone = await requireZone(tx, siteId, o.zone_id);
    const v = await requireVariant(tx, siteId, o.variant_id);
    if (v.zone_id !== zone.id) throw new AppError('validation_failed', `variant_id: variant ${v.id} belongs to zone ${v.zone_id}, not ${zone.id}`, { field: 'variant_id' });
    if (!servableByPlacement(v.status)) throw new AppError('conflict', `variant ${v.id} is ${v.status}; only published variants are pinned`, { status: v.status });
    const dup = active.find((x) => x.kind === 'pin_zone' && x.zone_id === zone.id);
    if (dup) throw new AppError('conflict', `zone ${zone.id} is already pinned (override ${dup.id}); lift it first`, { override_id: dup.id });
    id = await tx.overrides.insert({ siteId, kind: o.kind, pageId: zone.page_id, zoneId: zone.id, variantId: v.id, experimentId: null, armId: null, visitorId: null, note: o.note ?? null, setBy: by, now });
  }
  return (await tx.overrides.get(siteId, id))!;
}

/** Forces one visitor into an arm of an experiment (QA); replaces an earlier force of the same visitor and experiment. */
export async function forceArm(tx: Repos, siteId: string, o: ForceArmInput, by: string, now: number): Promise<OverrideRow> {
  const e = await tx.experimentRefs.get(siteId, o.experiment_id);
  if (!e) throw notFound('experiment', o.experiment_id);
  const arm = (await tx.experimentRefs.arms(siteId)).find((a) => a.id === o.arm_id && a.experiment_id === e.id);
  if (!arm) throw new AppError('validation_failed', `arm_id: ${o.arm_id} is not an arm of experiment ${e.id}`, { field: 'arm_id' });
  if (arm.variant_id !== null) {
    const v = await tx.variants.get(siteId, arm.variant_id);
    if (!v || !servableByArm(v.status)) throw new AppError('conflict', `the arm's variant ${arm.variant_id} is ${v ? v.status : 'gone'} and cannot be served`);
  }
  for (const x of await tx.overrides.list(siteId, true)) {
    if (x.kind === 'force_arm' && x.experiment_id === e.id && x.visitor_id === o.visitor_id) await tx.overrides.lift(siteId, x.id, by, now);
  }
  const id = await tx.overrides.insert({
    siteId,
    kind: 'force_arm',
    pageId: e.page_id,
    zoneId: e.zone_id,
    variantId: arm.variant_id,
    experimentId: e.id,
    armId: arm.id,
    visitorId: o.visitor_id,
    note: o.note ?? null,
    setBy: by,
    now,
    id: o.id,
  });
  return (await tx.overrides.get(siteId, id))!;
}

export async function liftOverride(tx: Repos, siteId: string, id: string, by: string, now: number): Promise<OverrideRow> {
  const row = await tx.overrides.get(siteId, id);
  if (!row) throw notFound('override', id);
  if (row.lifted_at !== null) throw new AppError('conflict', `override ${id} was already lifted by ${row.lifted_by ?? '?'}`, { lifted_by: row.lifted_by });
  await tx.overrides.lift(siteId, id, by, now);
  return (await tx.overrides.get(siteId, id))!;
}

/** The override use cases of one store, returning views. */
export class OverridesService {
  constructor(private readonly store: Store) {}

  async list(siteId: string, activeOnly: boolean): Promise<OverrideView[]> {
    return (await this.store.overrides.list(siteId, activeOnly)).map(overrideOut);
  }

  async publish(siteId: string, input: OverrideInput, by: string): Promise<OverrideView> {
    return overrideOut(await changeWeb(this.store, siteId, (tx, now) => publishOverride(tx, siteId, input, by, now)));
  }

  async forceArm(siteId: string, input: ForceArmInput, by: string): Promise<OverrideView> {
    return overrideOut(await changeWeb(this.store, siteId, (tx, now) => forceArm(tx, siteId, input, by, now)));
  }

  async lift(siteId: string, id: string, by: string): Promise<OverrideView> {
    return overrideOut(await changeWeb(this.store, siteId, (tx, now) => liftOverride(tx, siteId, id, by, now)));
  }
}

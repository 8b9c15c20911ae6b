import { AppError } from '../../errors/app-error.js';
import type { ExperimentRow } from '../../store/experiments.js';
import type { Store } from '../../store/store.js';
import type { OverrideRow } from '../../store/overrides.js';
import type { PlacementRow } from '../../store/placements.js';
import type { ZoneRow } from '../../store/zones.js';
import { requireExperiment, updateExperiment, type UpdateInput } from '../experiments/definition.js';
import { resumeExperiment, startExperiment } from '../experiments/lifecycle.js';
import { requireContent } from '../web/content.js';
import { forceArm, liftOverride } from '../web/overrides.js';
import { createPlacement, requirePlacement, updatePlacement } from '../web/placements.js';
import { createZone, requireZone, updateZone } from '../web/zones.js';
import type { DraftPayload, DraftView } from './schema.js';
import { dryRun, fileDraft, proposeChecked } from './service.js';

/**
 * The proposals of a propose-only token for changes of who sees what, other
 * than segments (service.ts). Each is checked by running the real operation
 * and rolling it back, so it is refused exactly when doing it would be; what
 * is filed is what approval runs. Each resolves with the object as it stands
 * (or, for something new, as it will be) and the draft.
 */

const name = (s: string) => JSON.stringify(s);

// ---- layout tests -----------------------------------------------------------------------------

/** Proposes starting a draft layout test (experiments_start). */
export async function proposeExperimentStart(store: Store, siteId: string, actor: string, id: string): Promise<{ experiment: ExperimentRow; draft: DraftView }> {
  const { result, draft } = await proposeChecked(
    store,
    siteId,
    actor,
    (tx, now) => startExperiment(tx, siteId, id, now),
    (row) => ({ kind: 'experiment_start', targetId: id, payload: {}, summary: `start layout test ${name(row.name)} (${id})` }),
  );
  return { experiment: (await store.experiments.get(siteId, id)) ?? result, draft };
}

/** Proposes resuming a paused layout test (experiments_resume). */
export async function proposeExperimentResume(store: Store, siteId: string, actor: string, id: string): Promise<{ experiment: ExperimentRow; draft: DraftView }> {
  const { result, draft } = await proposeChecked(
    store,
    siteId,
    actor,
    (tx, now) => resumeExperiment(tx, siteId, id, now),
    (row) => ({ kind: 'experiment_resume', targetId: id, payload: {}, summary: `resume layout test ${name(row.name)} (${id})` }),
  );
  return { experiment: (await store.experiments.get(siteId, id)) ?? result, draft };
}

/**
 * Proposes a change of a running or paused layout test (weights, scheduled end,
 * stop early: who gets which arm from now on). A draft test is changed at once
 * by the caller (no visitor sees it): `null` tells it so.
 */
export async function proposeExperimentUpdate(
  store: Store,
  siteId: string,
  actor: string,
  id: string,
  input: UpdateInput,
): Promise<{ experiment: ExperimentRow; draft: DraftView } | null> {
  const row = await requireExperiment(store, siteId, id);
  if (row.status === 'draft') return null;
  const payload: DraftPayload<'experiment_update'> = {};
  if (input.weights !== undefined) payload.weights = input.weights;
  if (input.scheduled_end_at !== undefined) payload.scheduled_end_at = input.scheduled_end_at;
  if (input.stop_early !== undefined) payload.stop_early = input.stop_early;
  const { draft } = await proposeChecked(
    store,
    siteId,
    actor,
    // Everything given is checked (a field a running test cannot change is refused now, not at approval).
    (tx, now) => updateExperiment(tx, siteId, id, input, now),
    () => ({ kind: 'experiment_update', targetId: id, payload, summary: `change ${Object.keys(payload).join(', ')} of running layout test ${name(row.name)} (${id})` }),
  );
  return { experiment: (await store.experiments.get(siteId, id)) ?? row, draft };
}

// ---- placements -------------------------------------------------------------------------------

/** Proposes placing a published variant (placements_create); the placement keeps the id shown here once approved. */
export async function proposePlacementCreate(
  store: Store,
  siteId: string,
  actor: string,
  input: { variant_id: string; segment_id?: string | null | undefined; priority: number; enabled: boolean },
): Promise<{ placement: PlacementRow; draft: DraftView }> {
  const { result, draft } = await proposeChecked(
    store,
    siteId,
    actor,
    (tx, now) => createPlacement(tx, siteId, input, now),
    (p) => ({
      kind: 'placement_create',
      targetId: p.id,
      payload: { variant_id: p.variant_id, segment_id: p.segment_id, priority: Number(p.priority), enabled: Number(p.enabled) === 1 },
      summary: `place variant ${p.variant_id} in zone ${p.zone_id} for ${p.segment_id === null ? 'everyone' : `segment ${p.segment_id}`} (priority ${Number(p.priority)}${Number(p.enabled) === 1 ? '' : ', disabled'}) as ${p.id}`,
    }),
  );
  return { placement: result, draft };
}

/** Proposes changing a placement (placements_update). */
export async function proposePlacementUpdate(
  store: Store,
  siteId: string,
  actor: string,
  id: string,
  patch: { segment_id?: string | null | undefined; priority?: number | undefined; enabled?: boolean | undefined },
): Promise<{ placement: PlacementRow; draft: DraftView }> {
  const payload: DraftPayload<'placement_update'> = {};
  if (patch.segment_id !== undefined) payload.segment_id = patch.segment_id;
  if (patch.priority !== undefined) payload.priority = patch.priority;
  if (patch.enabled !== undefined) payload.enabled = patch.enabled;
  if (Object.keys(payload).length === 0) throw new AppError('validation_failed', 'nothing to change: give segment_id, priority or enabled', { field: 'id' });
  const { draft } = await proposeChecked(
    store,
    siteId,
    actor,
    (tx, now) => updatePlacement(tx, siteId, id, patch, now),
    () => ({ kind: 'placement_update', targetId: id, payload, summary: `change ${Object.keys(payload).join(', ')} of placement ${id}` }),
  );
  return { placement: await requirePlacement(store, siteId, id), draft };
}

/** Proposes deleting a placement (placements_delete). */
export async function proposePlacementDelete(store: Store, siteId: string, actor: string, id: string): Promise<{ placement: PlacementRow; draft: DraftView }> {
  const placement = await requirePlacement(store, siteId, id);
  const draft = await store.write(async (tx) => {
    await requirePlacement(tx, siteId, id);
    return fileDraft(tx, siteId, { kind: 'placement_delete', targetId: id, payload: {}, summary: `delete placement ${id} (variant ${placement.variant_id} in zone ${placement.zone_id})`, actor, now: Date.now() });
  });
  return { placement, draft };
}

// ---- zones ------------------------------------------------------------------------------------

/**
 * Changes a zone under propose-only: its name applies at once (only people see
 * it); a new selector or default content (what visitors see in it) is filed as
 * a draft. `draft` is null when nothing of the change needs approval.
 */
export async function proposeZoneUpdate(
  store: Store,
  siteId: string,
  actor: string,
  id: string,
  patch: { name?: string | undefined; selector?: string | undefined; default_content_id?: string | null | undefined },
): Promise<{ zone: ZoneRow; draft: DraftView | null }> {
  const zone = await requireZone(store, siteId, id);
  const payload: DraftPayload<'zone_update'> = {};
  if (patch.selector !== undefined && patch.selector !== zone.selector) payload.selector = patch.selector;
  if (patch.default_content_id !== undefined && patch.default_content_id !== zone.default_content_id) payload.default_content_id = patch.default_content_id;
  const fields = Object.keys(payload);
  // Checked as zones_update would be (content exists, name free) before anything is stored.
  if (fields.length > 0) await dryRun(store, (tx) => updateZone(tx, siteId, id, patch, Date.now()));
  return store.write(async (tx) => {
    const now = Date.now();
    const current = patch.name !== undefined ? await updateZone(tx, siteId, id, { name: patch.name }, now) : await requireZone(tx, siteId, id);
    if (fields.length === 0) return { zone: current, draft: null };
    const what = fields.map((f) => (f === 'default_content_id' ? `default content ${payload.default_content_id ?? 'none'}` : `selector ${name(payload.selector!)}`));
    const draft = await fileDraft(tx, siteId, { kind: 'zone_update', targetId: id, payload, summary: `set ${what.join(' and ')} of zone ${name(current.name)} (${id})`, actor, now });
    return { zone: current, draft };
  });
}

/** Creates a zone under propose-only: the zone at once, without default content; a default content is filed as a draft. */
export async function proposeZoneCreate(
  store: Store,
  siteId: string,
  actor: string,
  input: { page_id: string; name: string; selector: string; default_content_id?: string | null | undefined },
): Promise<{ zone: ZoneRow; draft: DraftView | null }> {
  const contentId = input.default_content_id ?? null;
  return store.write(async (tx) => {
    const now = Date.now();
    if (contentId !== null) await requireContent(tx, siteId, contentId);
    const zone = await createZone(tx, siteId, { ...input, default_content_id: null }, now);
    if (contentId === null) return { zone, draft: null };
    const draft = await fileDraft(tx, siteId, {
      kind: 'zone_update',
      targetId: zone.id,
      payload: { default_content_id: contentId },
      summary: `set default content ${contentId} of new zone ${name(zone.name)} (${zone.id})`,
      actor,
      now,
    });
    return { zone, draft };
  });
}

// ---- overrides --------------------------------------------------------------------------------

/** Proposes lifting an active override (overrides_lift). */
export async function proposeOverrideLift(store: Store, siteId: string, actor: string, id: string): Promise<{ override: OverrideRow; draft: DraftView }> {
  const { draft } = await proposeChecked(
    store,
    siteId,
    actor,
    (tx, now) => liftOverride(tx, siteId, id, actor, now),
    (o) => ({ kind: 'override_lift', targetId: id, payload: {}, summary: `lift ${o.kind} override ${id}` }),
  );
  return { override: (await store.overrides.get(siteId, id))!, draft };
}

/** Proposes forcing a visitor into an arm (overrides_force_arm); the override keeps the id shown here once approved. */
export async function proposeForceArm(
  store: Store,
  siteId: string,
  actor: string,
  input: { experiment_id: string; arm_id: string; visitor_id: string; note?: string | undefined },
): Promise<{ override: OverrideRow; draft: DraftView }> {
  const { result, draft } = await proposeChecked(
    store,
    siteId,
    actor,
    (tx, now) => forceArm(tx, siteId, input, actor, now),
    (o) => ({
      kind: 'override_force_arm',
      targetId: o.id,
      payload: { experiment_id: input.experiment_id, arm_id: input.arm_id, visitor_id: input.visitor_id, ...(input.note === undefined ? {} : { note: input.note }) },
      summary: `force visitor ${input.visitor_id} into arm ${input.arm_id} of layout test ${input.experiment_id} as ${o.id}`,
    }),
  );
  return { override: result, draft };
}

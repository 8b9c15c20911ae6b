import { AppError } from '../../errors/app-error.js';
import type { DraftRow } from '../../store/drafts.js';
import type { Repos } from '../../store/repos.js';
import type { SegmentsService } from '../segments/service.js';
import { updateExperiment } from '../experiments/definition.js';
import { resumeExperiment, startExperiment } from '../experiments/lifecycle.js';
import { forceArm, liftOverride } from '../web/overrides.js';
import { createPlacement, requirePlacement, updatePlacement } from '../web/placements.js';
import { updateZone } from '../web/zones.js';
import { DRAFT_KINDS, DRAFT_PAYLOADS, type DraftKind, type DraftPayload } from './schema.js';

type Applier = (tx: Repos, segments: SegmentsService, siteId: string, targetId: string, payload: unknown, actor: string, now: number) => Promise<Record<string, unknown>>;

const p = <K extends DraftKind>(kind: K, payload: unknown): DraftPayload<K> => DRAFT_PAYLOADS[kind].parse(payload) as DraftPayload<K>;

/**
 * How approval applies each kind: the operation a token without propose-only
 * runs for the same call, with exactly the proposed arguments. Each returns
 * what it did, kept with the draft.
 */
const APPLY: Record<DraftKind, Applier> = {
  segment_create: async (tx, segments, siteId, id) => {
    const row = await segments.publish(tx, siteId, id);
    return { segment_id: row.id, status: row.status, members: row.members };
  },
  segment_update: async (tx, segments, siteId, id, payload) => {
    const row = await segments.update(tx, siteId, id, p('segment_update', payload));
    return { segment_id: row.id, members: row.members };
  },
  experiment_start: async (tx, _s, siteId, id, _p, _a, now) => ({ experiment_id: id, status: (await startExperiment(tx, siteId, id, now)).status }),
  experiment_resume: async (tx, _s, siteId, id, _p, _a, now) => ({ experiment_id: id, status: (await resumeExperiment(tx, siteId, id, now)).status }),
  experiment_update: async (tx, _s, siteId, id, payload, _a, now) => ({
    experiment_id: id,
    status: (await updateExperiment(tx, siteId, id, p('experiment_update', payload), now)).status,
  }),
  placement_create: async (tx, _s, siteId, id, payload, _a, now) => {
    const row = await createPlacement(tx, siteId, { ...p('placement_create', payload), id }, now);
    return { placement_id: row.id };
  },
  placement_update: async (tx, _s, siteId, id, payload, _a, now) => ({ placement_id: (await updatePlacement(tx, siteId, id, p('placement_update', payload), now)).id }),
  placement_delete: async (tx, _s, siteId, id) => {
    await requirePlacement(tx, siteId, id);
    await tx.placements.delete(siteId, id);
    return { removed: id };
  },
  zone_update: async (tx, _s, siteId, id, payload, _a, now) => {
    const row = await updateZone(tx, siteId, id, p('zone_update', payload), now);
    return { zone_id: row.id, default_content_id: row.default_content_id };
  },
  override_lift: async (tx, _s, siteId, id, _p, actor, now) => ({ override_id: (await liftOverride(tx, siteId, id, actor, now)).id }),
  override_force_arm: async (tx, _s, siteId, id, payload, actor, now) => ({ override_id: (await forceArm(tx, siteId, { ...p('override_force_arm', payload), id }, actor, now)).id }),
};

/** Applies a draft's proposal (see APPLY); the caller marks it approved. */
export async function applyDraft(tx: Repos, segments: SegmentsService, siteId: string, row: DraftRow, actor: string, now: number): Promise<Record<string, unknown>> {
  const kind = DRAFT_KINDS.find((k) => k === row.kind);
  if (!kind) throw new AppError('conflict', `draft ${row.id} is of kind ${row.kind}, which this svc cannot apply`, { kind: row.kind });
  return APPLY[kind](tx, segments, siteId, row.target_id, JSON.parse(row.payload) as unknown, actor, now);
}

import { AppError } from '../../errors/app-error.js';
import { newId } from '../../store/ids.js';
import type { DraftRow } from '../../store/drafts.js';
import type { Repos, WriteOp } from '../../store/repos.js';
import type { Store } from '../../store/store.js';
import type { SegmentRow } from '../../store/segments.js';
import type { SegmentInput, SegmentsService } from '../segments/service.js';
import { decisionService } from '../web/decisions.js';
import { applyDraft } from './apply.js';
import { DRAFT_PAYLOADS, draftOut, type DraftKind, type DraftPayload, type DraftView } from './schema.js';

/** What the draft use cases work with. */
export interface DraftDeps {
  store: Store;
  segments: SegmentsService;
}

/** Thrown inside a write operation to roll it back and hand its result out (a dry run). */
class RolledBack extends Error {
  constructor(readonly value: unknown) {
    super('dry run: rolled back');
  }
}

/**
 * Runs a write operation and rolls it back: the result of the real operation
 * on the current data, with nothing stored. A proposal is checked this way, so
 * it is refused exactly when doing it would be (and approval runs it again on
 * the data of that moment).
 */
export async function dryRun<T>(store: Store, fn: WriteOp<T>): Promise<T> {
  try {
    await store.write(async (tx) => {
      throw new RolledBack(await fn(tx));
    });
  } catch (err) {
    if (err instanceof RolledBack) return err.value as T;
    throw err;
  }
  throw new Error('a dry run committed');
}

const PROPOSED_ACTION = 'Nothing of it applies yet. Approve it (inbox_approve) to apply exactly this change, or dismiss it (inbox_dismiss) with a reason to reject it.';

/**
 * Files a draft and its inbox item in the caller's write operation. The same
 * proposal still pending (same kind, object and payload) is returned instead
 * of being filed twice.
 */
export async function fileDraft<K extends DraftKind>(
  tx: Repos,
  siteId: string,
  f: { kind: K; targetId: string; payload: DraftPayload<K>; summary: string; actor: string; now: number },
): Promise<DraftView> {
  const payload = JSON.stringify(DRAFT_PAYLOADS[f.kind].parse(f.payload));
  const same = (await tx.drafts.pendingFor(siteId, f.kind, f.targetId)).find((d) => d.payload === payload);
  if (same) return draftOut(same, (await tx.stall.draftItem(siteId, same.id))?.id ?? null);
  const id = newId('drf');
  await tx.drafts.insert({ id, siteId, kind: f.kind, targetId: f.targetId, payload, summary: f.summary, proposedBy: f.actor, now: f.now });
  const itemId = newId('inbox');
  await tx.stall.insertDraftItem({ id: itemId, siteId, title: `Draft: ${f.summary}`, proposedAction: PROPOSED_ACTION, draftId: id, now: f.now });
  return draftOut((await tx.drafts.get(siteId, id))!, itemId);
}

/** A draft with its inbox item, or not_found. */
export async function requireDraft(r: Repos, siteId: string, id: string): Promise<{ row: DraftRow; view: DraftView }> {
  const row = await r.drafts.get(siteId, id);
  if (!row) throw new AppError('not_found', `no draft ${JSON.stringify(id)} in this site`, { field: 'id' });
  return { row, view: draftOut(row, (await r.stall.draftItem(siteId, id))?.id ?? null) };
}

// ---- segments ------------------------------------------------------------------------------

const segmentSummary = (row: SegmentRow) => `create segment ${JSON.stringify(row.name)} (${row.id}, priority ${row.priority})`;

/**
 * Proposes a segment: stored as a draft segment (no members, evaluated
 * nowhere, invisible to decisions and the profile REST API) with a draft and
 * an inbox item. Draft variants, placements and other draft segments may name
 * it; approval makes it live as it then stands.
 */
export async function proposeSegmentCreate(deps: DraftDeps, siteId: string, actor: string, input: SegmentInput): Promise<{ segment: SegmentRow; draft: DraftView }> {
  return deps.store.write(async (tx) => {
    const segment = await deps.segments.create(tx, siteId, input, { draft: true });
    const draft = await fileDraft(tx, siteId, {
      kind: 'segment_create',
      targetId: segment.id,
      payload: { name: segment.name, rule: JSON.parse(segment.rule) as unknown, priority: segment.priority },
      summary: segmentSummary(segment),
      actor,
      now: Date.now(),
    });
    return { segment, draft };
  });
}

/**
 * Proposes a change of a segment. A draft segment is changed in place (no one
 * sees it yet) and its pending draft follows, so approval makes live what the
 * reviewer reads; a live segment keeps its rule until a person approves the
 * change (checked now exactly as segments_update checks it).
 */
export async function proposeSegmentUpdate(
  deps: DraftDeps,
  siteId: string,
  actor: string,
  id: string,
  patch: Partial<SegmentInput>,
): Promise<{ segment: SegmentRow; draft: DraftView }> {
  return deps.store.write(async (tx) => {
    const row = await deps.segments.require(siteId, id, tx);
    const now = Date.now();
    if (row.status === 'draft') {
      const segment = await deps.segments.update(tx, siteId, id, patch);
      const pending = (await tx.drafts.pendingFor(siteId, 'segment_create', id))[0];
      if (!pending) throw new AppError('conflict', `draft segment ${id} has no pending draft`, { field: 'id' });
      const payload = JSON.stringify(DRAFT_PAYLOADS.segment_create.parse({ name: segment.name, rule: JSON.parse(segment.rule), priority: segment.priority }));
      await tx.drafts.revise(siteId, pending.id, payload, segmentSummary(segment), now);
      await tx.stall.retitleDraftItem(siteId, pending.id, `Draft: ${segmentSummary(segment)}`, PROPOSED_ACTION, now);
      return { segment, draft: (await requireDraft(tx, siteId, pending.id)).view };
    }
    const merged: SegmentInput = { name: patch.name ?? row.name, rule: patch.rule ?? JSON.parse(row.rule), priority: patch.priority ?? row.priority };
    const rule = await deps.segments.check(tx, siteId, merged, { selfId: id });
    const name = merged.name.trim();
    if (name !== row.name && (await tx.segments.list(siteId)).some((s) => s.id !== id && s.name === name)) {
      throw new AppError('conflict', `a segment named ${JSON.stringify(name)} exists in this site`, { field: 'name' });
    }
    const payload: DraftPayload<'segment_update'> = {};
    if (patch.name !== undefined) payload.name = name;
    if (patch.rule !== undefined) payload.rule = rule;
    if (patch.priority !== undefined) payload.priority = patch.priority;
    const fields = Object.keys(payload);
    if (fields.length === 0) throw new AppError('validation_failed', 'nothing to change: give name, rule or priority', { field: 'id' });
    const draft = await fileDraft(tx, siteId, { kind: 'segment_update', targetId: id, payload, summary: `change ${fields.join(', ')} of segment ${JSON.stringify(row.name)} (${id})`, actor, now });
    return { segment: row, draft };
  });
}

// ---- everything else: checked by a dry run, then filed -------------------------------------

/**
 * Proposes a change checked by running it and rolling it back: `run` is the
 * real operation (refused exactly as it would be), `file` says what to file
 * from its would-be result. Resolves with that result and the draft.
 */
export async function proposeChecked<T, K extends DraftKind>(
  store: Store,
  siteId: string,
  actor: string,
  run: (tx: Repos, now: number) => Promise<T>,
  file: (result: T) => { kind: K; targetId: string; payload: DraftPayload<K>; summary: string },
): Promise<{ result: T; draft: DraftView }> {
  const result = await dryRun(store, (tx) => run(tx, Date.now()));
  const draft = await store.write((tx) => fileDraft(tx, siteId, { ...file(result), actor, now: Date.now() }));
  return { result, draft };
}

// ---- decisions -----------------------------------------------------------------------------

async function pendingDraft(tx: Repos, siteId: string, id: string): Promise<DraftRow> {
  const { row } = await requireDraft(tx, siteId, id);
  if (row.status !== 'pending') throw new AppError('conflict', `draft ${id} is already ${row.status}`, { field: 'id', status: row.status });
  return row;
}

/**
 * Approves a pending draft: applies exactly what was proposed, as the
 * operation would have run for a token without propose-only (segment members,
 * segment.changed and triggers, decisions), in the caller's write operation,
 * and marks the draft and its inbox item approved. When the change no longer
 * applies (the object changed or went away), nothing is stored and the draft
 * stays pending.
 */
export async function approveDraftIn(tx: Repos, deps: DraftDeps, siteId: string, id: string, actor: string): Promise<DraftView> {
  const row = await pendingDraft(tx, siteId, id);
  const now = Date.now();
  const result = await applyDraft(tx, deps.segments, siteId, row, actor, now);
  if (!(await tx.drafts.decide(siteId, id, { status: 'approved', by: actor, at: now, reason: null, result: JSON.stringify(result) }))) {
    throw new AppError('conflict', `draft ${id} was decided concurrently`, { field: 'id' });
  }
  const item = await tx.stall.draftItem(siteId, id);
  if (item) await tx.stall.decide(siteId, item.id, { status: 'approved', by: actor, at: now, reason: null, experimentId: null });
  return (await requireDraft(tx, siteId, id)).view;
}

/**
 * Rejects a pending draft with a reason: nothing of it applies. A proposed
 * segment is deleted (refused while another segment's rule names it). Marks
 * the draft rejected and its inbox item dismissed.
 */
export async function rejectDraftIn(tx: Repos, deps: DraftDeps, siteId: string, id: string, actor: string, reason: string): Promise<DraftView> {
  const row = await pendingDraft(tx, siteId, id);
  const now = Date.now();
  if (row.kind === 'segment_create') {
    const segment = await tx.segments.get(siteId, row.target_id);
    if (segment?.status === 'draft') await deps.segments.remove(tx, siteId, segment.id);
  }
  if (!(await tx.drafts.decide(siteId, id, { status: 'rejected', by: actor, at: now, reason, result: null }))) {
    throw new AppError('conflict', `draft ${id} was decided concurrently`, { field: 'id' });
  }
  const item = await tx.stall.draftItem(siteId, id);
  if (item) await tx.stall.decide(siteId, item.id, { status: 'dismissed', by: actor, at: now, reason, experimentId: null });
  return (await requireDraft(tx, siteId, id)).view;
}

/** approveDraftIn in a write operation of its own; the site's decisions are rebuilt at once. */
export async function approveDraft(deps: DraftDeps, siteId: string, id: string, actor: string): Promise<DraftView> {
  const view = await deps.store.write((tx) => approveDraftIn(tx, deps, siteId, id, actor));
  decisionService(deps.store).invalidate(siteId);
  return view;
}

/** rejectDraftIn in a write operation of its own. */
export async function rejectDraft(deps: DraftDeps, siteId: string, id: string, actor: string, reason: string): Promise<DraftView> {
  return deps.store.write((tx) => rejectDraftIn(tx, deps, siteId, id, actor, reason));
}

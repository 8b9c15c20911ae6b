import { z } from 'zod';
import { AppError } from '../../errors/app-error.js';
import { newId } from '../../store/ids.js';
import type { Store } from '../../store/store.js';
import type { TriggerFields, TriggerRow } from '../../store/triggers.js';
import { TRIGGER_KINDS } from './rules.js';
import { HOUR, triggerView, type DeletedTrigger, type DisabledTrigger, type TriggerView } from './views.js';
import { parseClock } from './zoned.js';

const clock = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'use HH:MM, 00:00 to 23:59');

/** The definition of a trigger: the input of create (every field) and update (the fields given). */
export const triggerDefinitionSchema = z.object({
  name: z.string().trim().min(1).max(200).describe('Name.'),
  on_kind: z.enum(TRIGGER_KINDS).describe('segment_entered: the profile enters a segment; event: the profile does an event of a type (/api/events); score: a score of the profile reaches min_score (/api/score).'),
  segment_id: z.string().min(1).max(128).optional().describe('segment_entered: the segment.'),
  event_type: z.string().min(1).max(64).optional().describe('event: the event type.'),
  min_score: z.number().finite().optional().describe('score: fires when a score at or above this follows one below it (or none).'),
  message_id: z.string().trim().min(1).max(200).describe("The message template id the customer's mailer or chat tool sends."),
  message_values: z.record(z.string(), z.unknown()).meta({ additionalProperties: true }).optional().describe('Fixed template values sent with every fire (no personal data).'),
  include_email: z.boolean().optional().describe("Send the profile's email in the message POST (to the site's own endpoint only). Default false."),
  cap_count: z.number().int().min(1).max(1000).optional().describe('Frequency cap: at most this many fires per profile per window (default 1).'),
  cap_window_hours: z.number().positive().max(8760).optional().describe('Frequency cap window in hours (default 24).'),
  quiet_start: clock.nullable().optional().describe("Quiet hours start, HH:MM local in the site's time zone (with quiet_end; null clears)."),
  quiet_end: clock.nullable().optional().describe('Quiet hours end, HH:MM local; before quiet_start means the window crosses midnight.'),
});
export type TriggerDefinition = z.output<typeof triggerDefinitionSchema>;
export type TriggerPatch = Partial<TriggerDefinition>;

/** The trigger `id` of the site, or not_found. */
export async function ownTrigger(store: Store, siteId: string, id: string): Promise<TriggerRow> {
  const t = await store.triggers.get(siteId, id);
  if (!t) throw new AppError('not_found', `no trigger ${id}`, { field: 'id' });
  return t;
}

/** Checks a definition against the rules (what each kind needs, quiet hours, the size of the values) and the site's segments. */
async function fieldsOf(store: Store, siteId: string, d: TriggerDefinition): Promise<TriggerFields> {
  let onValue: string | null = null;
  let scoreMin: number | null = null;
  if (d.on_kind === 'segment_entered') {
    if (!d.segment_id) throw new AppError('validation_failed', 'segment_id: required for on_kind segment_entered', { field: 'segment_id' });
    if (!(await store.segments.get(siteId, d.segment_id))) throw new AppError('not_found', `no segment ${d.segment_id}`, { field: 'segment_id' });
    onValue = d.segment_id;
  } else if (d.on_kind === 'event') {
    if (!d.event_type) throw new AppError('validation_failed', 'event_type: required for on_kind event', { field: 'event_type' });
    onValue = d.event_type;
  } else {
    if (d.min_score === undefined) throw new AppError('validation_failed', 'min_score: required for on_kind score', { field: 'min_score' });
    scoreMin = d.min_score;
  }
  const qs = d.quiet_start ?? null;
  const qe = d.quiet_end ?? null;
  if ((qs === null) !== (qe === null)) throw new AppError('validation_failed', 'quiet_start and quiet_end: give both or neither', { field: 'quiet_start' });
  if (qs !== null && parseClock(qs) === parseClock(qe!)) throw new AppError('validation_failed', 'quiet_end: equals quiet_start (an empty window); use null for no quiet hours', { field: 'quiet_end' });
  const values = d.message_values ?? {};
  if (JSON.stringify(values).length > 10_000) throw new AppError('validation_failed', 'message_values: at most 10,000 characters as JSON', { field: 'message_values' });
  return {
    name: d.name,
    on_kind: d.on_kind,
    on_value: onValue,
    score_min: scoreMin,
    message_id: d.message_id,
    message_values: JSON.stringify(values),
    include_email: d.include_email === true ? 1 : 0,
    cap_count: d.cap_count ?? 1,
    cap_window_ms: Math.round((d.cap_window_hours ?? 24) * HOUR),
    quiet_start: qs,
    quiet_end: qe,
  };
}

function definitionOf(t: TriggerRow): TriggerDefinition {
  return {
    name: t.name,
    on_kind: t.on_kind,
    segment_id: t.on_kind === 'segment_entered' ? (t.on_value ?? undefined) : undefined,
    event_type: t.on_kind === 'event' ? (t.on_value ?? undefined) : undefined,
    min_score: t.score_min ?? undefined,
    message_id: t.message_id,
    message_values: JSON.parse(t.message_values) as Record<string, unknown>,
    include_email: t.include_email === 1,
    cap_count: t.cap_count,
    cap_window_hours: t.cap_window_ms / HOUR,
    quiet_start: t.quiet_start,
    quiet_end: t.quiet_end,
  };
}

export async function listTriggers(store: Store, siteId: string, enabled: boolean | undefined): Promise<TriggerView[]> {
  return (await store.triggers.list(siteId, enabled)).map(triggerView);
}

export async function getTrigger(store: Store, siteId: string, id: string): Promise<TriggerView> {
  return triggerView(await ownTrigger(store, siteId, id));
}

/** Creates a trigger, disabled until enableTrigger. */
export async function createTrigger(store: Store, siteId: string, by: string, d: TriggerDefinition): Promise<TriggerView> {
  const fields = await fieldsOf(store, siteId, d);
  const t = await store.write((tx) => tx.triggers.create(newId('trg'), siteId, fields, by, Date.now()));
  return triggerView(t);
}

/**
 * Changes the fields given (the others stay). A change of kind drops the
 * value of the old kind unless the patch names it again.
 */
export async function updateTrigger(store: Store, siteId: string, id: string, patch: TriggerPatch): Promise<TriggerView> {
  const current = await ownTrigger(store, siteId, id);
  const merged = { ...definitionOf(current) };
  for (const [k, v] of Object.entries(patch)) if (v !== undefined) (merged as Record<string, unknown>)[k] = v;
  if (patch.on_kind !== undefined && patch.on_kind !== current.on_kind) {
    if (patch.on_kind !== 'segment_entered' && patch.segment_id === undefined) merged.segment_id = undefined;
    if (patch.on_kind !== 'event' && patch.event_type === undefined) merged.event_type = undefined;
  }
  const fields = await fieldsOf(store, siteId, merged);
  await store.write((tx) => tx.triggers.update(siteId, id, fields, Date.now()));
  return triggerView(await ownTrigger(store, siteId, id));
}

/** Starts firing a trigger; refused (conflict) until the site's live endpoint is set. */
export async function enableTrigger(store: Store, siteId: string, id: string): Promise<TriggerView> {
  await ownTrigger(store, siteId, id);
  const endpoint = await store.triggers.endpoint(siteId);
  if (!endpoint?.url) throw new AppError('conflict', 'set the live endpoint first (triggers_endpoint_set)', { field: 'id' });
  await store.write((tx) => tx.triggers.setEnabled(siteId, id, true, Date.now()));
  return triggerView(await ownTrigger(store, siteId, id));
}

/** Stops a trigger and cancels its pending automatic fires. */
export async function disableTrigger(store: Store, siteId: string, id: string): Promise<DisabledTrigger> {
  await ownTrigger(store, siteId, id);
  const cancelled = await store.write(async (tx) => {
    await tx.triggers.setEnabled(siteId, id, false, Date.now());
    return tx.triggers.cancelPending(siteId, id);
  });
  return { trigger: triggerView(await ownTrigger(store, siteId, id)), cancelled_fires: cancelled };
}

/** Deletes a trigger and its fires; an unknown id deletes nothing. */
export async function deleteTrigger(store: Store, siteId: string, id: string): Promise<DeletedTrigger> {
  const t = await store.triggers.get(siteId, id);
  if (!t) return { deleted: false, fires_deleted: 0 };
  const n = await store.write((tx) => tx.triggers.remove(siteId, id));
  return { deleted: true, fires_deleted: n };
}

import { AppError } from '../../errors/app-error.js';
import { newId } from '../../store/ids.js';
import type { Repos } from '../../store/repos.js';
import type { LeadCallRow } from '../../store/leads.js';
import { CATALOGUE } from '../../webhooks/catalogue.js';
import { checkTransition } from '../leads/pipeline.js';
import { isoInZone, safeTimeZone } from '../triggers/zoned.js';
import { callEnd, OUTCOME_STATUS, parseCallback, type CallInput } from './rules.js';

export interface RecordedCall {
  call: LeadCallRow;
  /** Why the outcome did not move the lead (null when it moved it or was not meant to). */
  status_note: string | null;
}

/**
 * Maps one call into the pipeline, inside a write operation: resolves its lead
 * (the lead named, or the newest lead of the profile named), moves the lead's
 * status as OUTCOME_STATUS says when the move is allowed, turns the callback
 * (given, or parsed from notes and transcript in the site's time zone) into an
 * open follow-up task, stores the call with its transcript on the lead's record,
 * and enqueues call.completed (call id, outcome, callback time; never the
 * transcript, notes or a caller value). Throws not_found for an unknown lead or
 * a profile without a lead, conflict when the call id is already recorded.
 */
export async function recordCall(
  tx: Repos,
  input: { siteId: string; call: CallInput; source: 'tool' | 'import'; by: string; now: number },
): Promise<RecordedCall> {
  const { siteId, call, now } = input;
  if (await tx.leads.call(siteId, call.call_id)) throw new AppError('conflict', `call ${call.call_id} is already recorded`, { field: 'call_id' });
  let leadId = call.lead_id;
  if (leadId === undefined) {
    const profile = await tx.profileRead.find(siteId, 'profile_id', call.profile_id!);
    if (!profile) throw new AppError('not_found', `no profile ${call.profile_id}`, { field: 'profile_id' });
    const newest = await tx.leads.newestOfProfile(siteId, profile.id);
    if (!newest) throw new AppError('not_found', `profile ${profile.id} has no lead to map the call to`, { field: 'profile_id' });
    leadId = newest.id;
  }
  const lead = await tx.leads.get(siteId, leadId);
  if (!lead) throw new AppError('not_found', `no lead ${leadId}`, { field: 'lead_id' });
  const tz = safeTimeZone((await tx.sites.get(siteId))?.timezone);
  const startedAt = Date.parse(call.started_at);
  const endedAt = callEnd(call);

  const target = OUTCOME_STATUS[call.outcome];
  let statusAfter = lead.status;
  let statusNote: string | null = null;
  if (target !== null && target !== lead.status) {
    const check = checkTransition(lead.status, target, lead.workable === 1);
    if (check.ok) {
      await tx.leads.setStatus(siteId, lead.id, target, now);
      statusAfter = target;
    } else statusNote = check.reason;
  }

  const callbackAt =
    call.callback_at !== undefined
      ? Date.parse(call.callback_at)
      : parseCallback({ notes: call.notes ?? null, transcript: call.transcript ?? null, outcome: call.outcome, startedAt, tz });
  let taskId: string | null = null;
  if (callbackAt !== null) {
    taskId = newId('task');
    await tx.leads.addTask({
      id: taskId,
      site_id: siteId,
      lead_id: lead.id,
      title: `Call back (call ${call.call_id})`,
      due_at: callbackAt,
      call_id: call.call_id,
      created_by: input.by,
      created_at: now,
    });
  }
  const row: LeadCallRow = {
    site_id: siteId,
    id: call.call_id,
    lead_id: lead.id,
    profile_id: lead.profile_id,
    started_at: startedAt,
    ended_at: endedAt,
    outcome: call.outcome,
    notes: call.notes ?? null,
    transcript: call.transcript ?? null,
    callback_at: callbackAt,
    task_id: taskId,
    status_before: lead.status,
    status_after: statusAfter,
    source: input.source,
    recorded_by: input.by,
    created_at: now,
  };
  await tx.leads.insertCall(row);
  const payload = CATALOGUE['call.completed'].schema.parse({
    event: 'call.completed',
    site_id: siteId,
    call_id: call.call_id,
    lead_id: lead.id,
    profile_id: lead.profile_id,
    outcome: call.outcome,
    callback_at: callbackAt === null ? null : isoInZone(callbackAt, tz),
    duration_seconds: Math.max(0, Math.round((endedAt - startedAt) / 1000)),
    timestamp: new Date(now).toISOString(),
  });
  await tx.activity.enqueue(siteId, 'call.completed', payload, now);
  return { call: row, status_note: statusNote };
}

import { AppError } from '../../errors/app-error.js';
import type { ErrorCode } from '../../errors/codes.js';
import { newId } from '../../store/ids.js';
import type { Repos } from '../../store/repos.js';
import type { Store } from '../../store/store.js';
import type { LeadCallRow } from '../../store/leads.js';
import { CATALOGUE } from '../../webhooks/catalogue.js';
import { checkTransition } from '../leads/pipeline.js';
import { isoInZone, safeTimeZone } from '../triggers/zoned.js';
import { siteTimeZone } from '../time.js';
import { callEnd, ImportRowError, OUTCOME_STATUS, parseCallback, parseImport, type CallInput } from './rules.js';
import { callView, type CallImport, type CallView } from './views.js';

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

/** Calls of the site, newest first, by lead, outcome and start (never transcripts). */
export async function listCalls(
  store: Store,
  siteId: string,
  f: { leadId?: string | undefined; outcome?: string | undefined; since?: number | undefined; limit: number },
): Promise<CallView[]> {
  const tz = await siteTimeZone(store, siteId);
  const rows = await store.leads.calls({ siteId, ...f });
  return rows.map((c) => callView(c, tz));
}

/** One call with its notes, and its transcript when `transcript` (the caller checks the right to read it). */
export async function getCall(store: Store, siteId: string, callId: string, transcript: boolean): Promise<CallView> {
  const c = await store.leads.call(siteId, callId);
  if (!c) throw new AppError('not_found', `no call ${callId}`, { field: 'call_id' });
  return callView(c, await siteTimeZone(store, siteId), { notes: true, transcript });
}

/** Records one call (see recordCall) in its own write operation. */
export async function recordOneCall(store: Store, siteId: string, by: string, call: CallInput): Promise<CallView> {
  const r = await store.write((tx) => recordCall(tx, { siteId, call, source: 'tool', by, now: Date.now() }));
  return callView(r.call, await siteTimeZone(store, siteId), { statusNote: r.status_note });
}

/**
 * Imports calls from CSV text or JSON rows, all or nothing: every row is
 * mapped like recordCall, in the order the calls happened (so the last call
 * decides the status), in one write operation; the first failing row is
 * named and nothing is stored. Call ids already recorded are skipped.
 */
export async function importCalls(store: Store, siteId: string, by: string, input: { csv?: string | undefined; rows?: unknown[] | undefined }): Promise<CallImport> {
  if ((input.csv === undefined) === (input.rows === undefined)) throw new AppError('validation_failed', 'give exactly one of csv and rows', { field: 'csv' });
  let calls;
  try {
    calls = parseImport(input);
  } catch (err) {
    if (err instanceof ImportRowError) throw rowError(err.row, err.field, err.message);
    throw err;
  }
  const order = calls.map((c, i) => ({ c, i })).sort((a, b) => Date.parse(a.c.started_at) - Date.parse(b.c.started_at) || a.i - b.i);
  const result = await store.write(async (tx) => {
    const done = [];
    const skipped: string[] = [];
    const now = Date.now();
    for (const { c, i } of order) {
      if (await tx.leads.call(siteId, c.call_id)) {
        skipped.push(c.call_id);
        continue;
      }
      try {
        done.push(await recordCall(tx, { siteId, call: c, source: 'import', by, now }));
      } catch (err) {
        if (err instanceof AppError) throw rowError(i + 1, (err.details as { field?: string } | undefined)?.field ?? null, err.message, c.call_id, err.code);
        throw err;
      }
    }
    return { done, skipped };
  });
  const tz = await siteTimeZone(store, siteId);
  return {
    imported: result.done.length,
    skipped: result.skipped,
    moved: result.done.filter((d) => d.call.status_after !== d.call.status_before).length,
    callbacks: result.done.filter((d) => d.call.task_id !== null).length,
    calls: result.done.map((d) => callView(d.call, tz, { statusNote: d.status_note })),
  };
}

function rowError(row: number, field: string | null, message: string, callId?: string, code: ErrorCode = 'validation_failed'): AppError {
  const where = row === 0 ? 'import' : `row ${row}${callId ? ` (call ${callId})` : ''}`;
  return new AppError(code === 'not_found' || code === 'conflict' ? code : 'validation_failed', `${where}: ${message}; nothing was imported`, {
    row,
    ...(field ? { field } : {}),
  });
}

import { z } from 'zod';
import type { LeadCallRow } from '../../store/leads.js';
import { iso } from '../time.js';
import { isoInZone } from '../triggers/zoned.js';
import { CALL_OUTCOMES } from './rules.js';

/** A call mapped into the pipeline as tools show it; notes and transcript only when asked for. */
export const callViewSchema = z.object({
  call_id: z.string().describe('The call id.'),
  lead_id: z.string().describe('The lead it was mapped to.'),
  profile_id: z.string().describe("The lead's profile."),
  started_at: z.string().describe('Start, ISO 8601 UTC.'),
  ended_at: z.string().describe('End, ISO 8601 UTC.'),
  duration_seconds: z.number().int().describe('Length in seconds.'),
  outcome: z.enum(CALL_OUTCOMES).describe('What the call came to.'),
  status_before: z.string().describe("The lead's status before the call."),
  status_after: z.string().describe("The lead's status after it."),
  status_note: z.string().nullable().optional().describe('Why the outcome did not move the lead, when it did not.'),
  callback_at: z.string().nullable().describe("The agreed callback in the site's time zone (ISO 8601 with offset); null when none."),
  task_id: z.string().nullable().describe('The follow-up task made from the callback.'),
  source: z.enum(['tool', 'import']).describe('Recorded by a tool call or an import.'),
  notes: z.string().nullable().optional().describe('Outcome notes (calls_get only).'),
  transcript: z.string().nullable().optional().describe('The transcript (calls_get with include_transcript, admin scope only).'),
  recorded_by: z.string().describe('Who recorded it.'),
  created_at: z.string().describe('When it was recorded.'),
});
export type CallView = z.input<typeof callViewSchema>;

/** A call with its callback in `tz`, the site's time zone; `extra` adds the status note, notes or transcript. */
export function callView(c: LeadCallRow, tz: string, extra: { notes?: boolean; transcript?: boolean; statusNote?: string | null } = {}): CallView {
  const v: CallView = {
    call_id: c.id,
    lead_id: c.lead_id,
    profile_id: c.profile_id,
    started_at: iso(c.started_at)!,
    ended_at: iso(c.ended_at)!,
    duration_seconds: Math.max(0, Math.round((c.ended_at - c.started_at) / 1000)),
    outcome: c.outcome as (typeof CALL_OUTCOMES)[number],
    status_before: c.status_before,
    status_after: c.status_after,
    callback_at: c.callback_at === null ? null : isoInZone(c.callback_at, tz),
    task_id: c.task_id,
    source: c.source,
    recorded_by: c.recorded_by,
    created_at: iso(c.created_at)!,
  };
  if (extra.statusNote !== undefined) v.status_note = extra.statusNote;
  if (extra.notes) v.notes = c.notes;
  if (extra.transcript) v.transcript = c.transcript;
  return v;
}

/** What an import did. */
export const callImportSchema = z.object({
  imported: z.number().int().describe('Calls recorded.'),
  skipped: z.array(z.string()).describe('Call ids already recorded, left as they were.'),
  moved: z.number().int().describe("Calls that moved their lead's status."),
  callbacks: z.number().int().describe('Follow-up tasks created from callbacks.'),
  calls: z.array(callViewSchema).describe('The recorded calls.'),
});
export type CallImport = z.input<typeof callImportSchema>;

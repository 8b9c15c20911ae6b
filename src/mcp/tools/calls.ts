import { z } from 'zod';
import { AppError } from '../../errors/app-error.js';
import type { ErrorCode } from '../../errors/codes.js';
import type { LeadCallRow } from '../../store/leads.js';
import { CALL_OUTCOMES, callInputSchema, IMPORT_COLUMNS, ImportRowError, MAX_IMPORT_ROWS, OUTCOME_STATUS, parseImport } from '../../domain/calls/rules.js';
import { recordCall } from '../../domain/calls/service.js';
import { isoInZone, safeTimeZone } from '../../domain/triggers/zoned.js';
import { defineTool, type ToolContext } from '../tool.js';
import { iso, isoInput, limitInput, ms } from './shared.js';

const area = 'calls';

const MAPPING_TEXT = CALL_OUTCOMES.map((o) => `${o} → ${OUTCOME_STATUS[o] ?? 'unchanged'}`).join(', ');

const callView = z.object({
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

function view(c: LeadCallRow, tz: string, extra: { notes?: boolean; transcript?: boolean; statusNote?: string | null } = {}): z.input<typeof callView> {
  const v: z.input<typeof callView> = {
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

const actor = (ctx: ToolContext) => `token:${ctx.grant.tokenId}`;
async function siteTz(ctx: ToolContext): Promise<string> {
  return safeTimeZone((await ctx.store.sites.get(ctx.grant.siteId))?.timezone);
}

export const callsList = defineTool({
  name: 'calls_list',
  title: 'List calls',
  description: 'Voice calls mapped into the leads pipeline, newest first, by lead, outcome and time. Never transcripts. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({
    lead_id: z.string().min(1).max(128).optional().describe('Only calls of this lead.'),
    outcome: z.enum(CALL_OUTCOMES).optional().describe('Only this outcome.'),
    since: isoInput.optional().describe('Started at or after this time.'),
    limit: limitInput(500, 50),
  }),
  output: z.object({ calls: z.array(callView).describe('The calls.') }),
  handler: async (ctx, input) => {
    const tz = await siteTz(ctx);
    const rows = await ctx.store.leads.calls({ siteId: ctx.grant.siteId, leadId: input.lead_id, outcome: input.outcome, since: ms(input.since), limit: input.limit });
    return { calls: rows.map((c) => view(c, tz)) };
  },
});

export const callsGet = defineTool({
  name: 'calls_get',
  title: 'Read a call',
  description: 'One call with its outcome notes; the transcript only when asked for, and only for admin-scope tokens (it is personal data). Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({
    call_id: z.string().min(1).max(128).describe('The call id.'),
    include_transcript: z.boolean().default(false).describe('Return the transcript (admin scope).'),
  }),
  output: callView,
  handler: async (ctx, input) => {
    if (input.include_transcript && !ctx.pii) throw new AppError('insufficient_scope', 'the transcript needs the admin scope', { missing: 'scope:admin' });
    const c = await ctx.store.leads.call(ctx.grant.siteId, input.call_id);
    if (!c) throw new AppError('not_found', `no call ${input.call_id}`, { field: 'call_id' });
    return view(c, await siteTz(ctx), { notes: true, transcript: input.include_transcript });
  },
});

export const callsRecord = defineTool({
  name: 'calls_record',
  title: 'Record a call',
  description: `Maps one voice call into the leads pipeline: the outcome moves the lead's status when the move is allowed (${MAPPING_TEXT}); a callback time (given, or parsed from the notes or transcript in the site's time zone, e.g. "call me back Tuesday at 3pm" relative to the call's start) becomes an open follow-up task; the transcript is stored on the lead's record only. Emits call.completed (call id, outcome, callback time; never the transcript). Scope: write.`,
  area,
  scope: 'write',
  flags: { changesData: true },
  input: z.object({ call: callInputSchema.describe('The call.') }),
  output: callView,
  handler: async (ctx, input) => {
    const site = ctx.grant.siteId;
    const r = await ctx.store.write((tx) => recordCall(tx, { siteId: site, call: input.call, source: 'tool', by: actor(ctx), now: Date.now() }));
    return view(r.call, await siteTz(ctx), { statusNote: r.status_note });
  },
});

export const callsImport = defineTool({
  name: 'calls_import',
  title: 'Import calls from a telephony export',
  description: `Imports calls, all or nothing: CSV text with a header row (columns, any order: ${IMPORT_COLUMNS.join(', ')}; call_id, started_at, outcome and lead_id or profile_id required; ended_at or duration_seconds; times ISO 8601 with offset) or a JSON array of objects with the same fields. Every row is validated and mapped like calls_record, in one transaction: the first failing row (numbered from 1 after the header) is named and nothing is stored. Call ids already recorded are skipped. At most ${MAX_IMPORT_ROWS} calls. Scope: write.`,
  area,
  scope: 'write',
  flags: { changesData: true, idempotent: true },
  input: z.object({
    csv: z.string().min(1).max(20_000_000).optional().describe('CSV text of the export.'),
    rows: z.array(z.unknown()).max(MAX_IMPORT_ROWS).optional().describe('Or the calls as a JSON array of objects.'),
  }),
  output: z.object({
    imported: z.number().int().describe('Calls recorded.'),
    skipped: z.array(z.string()).describe('Call ids already recorded, left as they were.'),
    moved: z.number().int().describe("Calls that moved their lead's status."),
    callbacks: z.number().int().describe('Follow-up tasks created from callbacks.'),
    calls: z.array(callView).describe('The recorded calls.'),
  }),
  handler: async (ctx, input) => {
    if ((input.csv === undefined) === (input.rows === undefined)) throw new AppError('validation_failed', 'give exactly one of csv and rows', { field: 'csv' });
    const site = ctx.grant.siteId;
    let calls;
    try {
      calls = parseImport(input);
    } catch (err) {
      if (err instanceof ImportRowError) throw rowError(err.row, err.field, err.message);
      throw err;
    }
    // Applied in the order the calls happened, so the last call decides the status.
    const order = calls.map((c, i) => ({ c, i })).sort((a, b) => Date.parse(a.c.started_at) - Date.parse(b.c.started_at) || a.i - b.i);
    const result = await ctx.store.write(async (tx) => {
      const done = [];
      const skipped: string[] = [];
      const now = Date.now();
      for (const { c, i } of order) {
        if (await tx.leads.call(site, c.call_id)) {
          skipped.push(c.call_id);
          continue;
        }
        try {
          done.push(await recordCall(tx, { siteId: site, call: c, source: 'import', by: actor(ctx), now }));
        } catch (err) {
          if (err instanceof AppError) throw rowError(i + 1, (err.details as { field?: string } | undefined)?.field ?? null, err.message, c.call_id, err.code);
          throw err;
        }
      }
      return { done, skipped };
    });
    const tz = await siteTz(ctx);
    return {
      imported: result.done.length,
      skipped: result.skipped,
      moved: result.done.filter((d) => d.call.status_after !== d.call.status_before).length,
      callbacks: result.done.filter((d) => d.call.task_id !== null).length,
      calls: result.done.map((d) => view(d.call, tz, { statusNote: d.status_note })),
    };
  },
});

function rowError(row: number, field: string | null, message: string, callId?: string, code: ErrorCode = 'validation_failed'): AppError {
  const where = row === 0 ? 'import' : `row ${row}${callId ? ` (call ${callId})` : ''}`;
  return new AppError(code === 'not_found' || code === 'conflict' ? code : 'validation_failed', `${where}: ${message}; nothing was imported`, {
    row,
    ...(field ? { field } : {}),
  });
}

import { z } from 'zod';
import { AppError } from '../../errors/app-error.js';
import { CALL_OUTCOMES, callInputSchema, IMPORT_COLUMNS, MAX_IMPORT_ROWS, OUTCOME_STATUS } from '../../domain/calls/rules.js';
import { getCall, importCalls, listCalls, recordOneCall } from '../../domain/calls/service.js';
import { callImportSchema, callViewSchema } from '../../domain/calls/views.js';
import { defineTool, type ToolContext } from '../tool.js';
import { isoInput, limitInput, ms } from './shared.js';

const area = 'calls';

const MAPPING_TEXT = CALL_OUTCOMES.map((o) => `${o} → ${OUTCOME_STATUS[o] ?? 'unchanged'}`).join(', ');

const actor = (ctx: ToolContext) => `token:${ctx.grant.tokenId}`;

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
  output: z.object({ calls: z.array(callViewSchema).describe('The calls.') }),
  handler: async (ctx, input) => ({
    calls: await listCalls(ctx.store, ctx.grant.siteId, { leadId: input.lead_id, outcome: input.outcome, since: ms(input.since), limit: input.limit }),
  }),
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
  output: callViewSchema,
  handler: (ctx, input) => {
    if (input.include_transcript && !ctx.pii) throw new AppError('insufficient_scope', 'the transcript needs the admin scope', { missing: 'scope:admin' });
    return getCall(ctx.store, ctx.grant.siteId, input.call_id, input.include_transcript);
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
  output: callViewSchema,
  handler: (ctx, input) => recordOneCall(ctx.store, ctx.grant.siteId, actor(ctx), input.call),
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
    rows: z.array(z.unknown().meta({ type: 'object' })).max(MAX_IMPORT_ROWS).optional().describe('Or the calls as a JSON array of objects.'),
  }),
  output: callImportSchema,
  handler: (ctx, input) => importCalls(ctx.store, ctx.grant.siteId, actor(ctx), input),
});

import * as chrono from 'chrono-node';
import { z } from 'zod';
import { CALL_OUTCOMES } from '../../webhooks/events/pipeline.js';
import type { LeadStatus } from '../leads/pipeline.js';
import { wallTime, zonedToUtc } from '../triggers/zoned.js';

export { CALL_OUTCOMES };
export type CallOutcome = (typeof CALL_OUTCOMES)[number];

/**
 * How a call's outcome moves its lead (null: the status stays). The move still
 * has to be an allowed transition (see LEAD_TRANSITIONS); when it is not (a won
 * lead, a lead with no contact value), the status stays and the call says why.
 */
export const OUTCOME_STATUS: Readonly<Record<CallOutcome, LeadStatus | null>> = {
  connected: 'working',
  interested: 'working',
  callback_requested: 'working',
  booked: 'qualified',
  qualified: 'qualified',
  not_interested: 'lost',
  wrong_number: 'unworkable',
  no_contact: 'unworkable',
  voicemail: null,
  no_answer: null,
  other: null,
};

/** Words that announce a callback ("call me back", "callback", "ring me", "follow up", "try again", ...). */
const CALLBACK_CUE =
  /\b(call(?:ing)?\s+(?:me|us|him|her|them|you)?\s*back|call-?back|call\s+again|call\s+(?:me|us)\s+(?:on|at|in|next|tomorrow|this)|ring\s+(?:me|us|back)|follow[\s-]?up|reach\s+(?:me|us)|try\s+(?:me\s+)?again|get\s+back\s+to|back\s+to\s+(?:me|us)|speak\s+(?:again|later))\b/i;

function sentences(text: string): string[] {
  return text
    .split(/(?<=[.!?])\s+|\n+/)
    .map((s) => s.trim())
    .filter(Boolean);
}

const MIN_AHEAD_MS = 60_000;

/**
 * The instant a chrono result denotes, read in the site's time zone. chrono is
 * given the call's local wall time as a UTC reference, so weekday names,
 * "tomorrow" and bare times are resolved on the site's calendar; the wall time
 * it returns is then placed in the zone (DST included). Relative amounts
 * ("in 2 hours") are added to the real start; an explicit zone ("5pm CET", an
 * ISO offset) is taken as written.
 */
function instantOf(r: chrono.ParsedResult, start: number, fakeRef: number, tz: string): number {
  const tags = r.start.tags();
  if (tags.has('result/relativeDateAndTime') || tags.has('casualReference/now')) return start + (r.start.date().getTime() - fakeRef);
  if (r.start.isCertain('timezoneOffset')) return r.start.date().getTime();
  return zonedToUtc(
    {
      year: r.start.get('year')!,
      month: r.start.get('month')!,
      day: r.start.get('day')!,
      hour: r.start.get('hour') ?? 12,
      minute: r.start.get('minute') ?? 0,
    },
    tz,
  );
}

/**
 * The callback date and time agreed in a call, parsed (chrono-node) from the
 * outcome notes, then the transcript: the first date in a sentence that
 * announces a callback (or, for outcome callback_requested, any sentence of
 * the notes), resolved relative to the call's start in the site's time zone
 * `tz`, and later than the start. A day without a time ("call me back on
 * Monday") means 12:00 local. Null when there is none.
 */
export function parseCallback(input: { notes?: string | null; transcript?: string | null; outcome: CallOutcome; startedAt: number; tz: string }): number | null {
  const w = wallTime(input.startedAt, input.tz);
  const fakeRef = Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);
  const sources: { text: string; all: boolean }[] = [];
  if (input.notes) sources.push({ text: input.notes, all: input.outcome === 'callback_requested' });
  if (input.transcript) sources.push({ text: input.transcript, all: false });
  for (const src of sources) {
    for (const sentence of sentences(src.text)) {
      if (!src.all && !CALLBACK_CUE.test(sentence)) continue;
      for (const r of chrono.parse(sentence, { instant: new Date(fakeRef), timezone: 0 }, { forwardDate: true })) {
        const at = instantOf(r, input.startedAt, fakeRef, input.tz);
        // A callback lies ahead of the call (more than a minute: "now" is not a callback).
        if (Number.isFinite(at) && at > input.startedAt + MIN_AHEAD_MS) return at;
      }
    }
  }
  return null;
}

const isoDateTime = z.iso.datetime({ offset: true });

/** One call as a tool call or an import row gives it. */
export const callInputSchema = z
  .object({
    call_id: z.string().trim().min(1).max(128).describe('The call id of the telephony system (unique per site).'),
    lead_id: z.string().trim().min(1).max(128).optional().describe('The lead the call was about.'),
    profile_id: z.string().trim().min(1).max(128).optional().describe('Or the profile: the call is mapped to its newest lead.'),
    started_at: isoDateTime.describe('When the call started, ISO 8601 with offset.'),
    ended_at: isoDateTime.optional().describe('When it ended, ISO 8601 with offset.'),
    duration_seconds: z.number().int().min(0).max(86_400).optional().describe('Or its length in seconds.'),
    outcome: z.enum(CALL_OUTCOMES).describe(`What the call came to: ${CALL_OUTCOMES.join(', ')}.`),
    notes: z.string().max(10_000).optional().describe('Outcome notes of the caller.'),
    transcript: z.string().max(200_000).optional().describe('Transcript; stored on the lead only, never sent in an event or logged.'),
    callback_at: isoDateTime.optional().describe('An agreed callback time; when absent it is parsed from notes and transcript.'),
  })
  .refine((c) => c.lead_id !== undefined || c.profile_id !== undefined, { message: 'name lead_id or profile_id', path: ['lead_id'] })
  .refine((c) => c.ended_at === undefined || Date.parse(c.ended_at) >= Date.parse(c.started_at), { message: 'ended_at is before started_at', path: ['ended_at'] });

export type CallInput = z.output<typeof callInputSchema>;

/** The columns of a CSV import (header row required, any order; unknown columns are an error). */
export const IMPORT_COLUMNS = [
  'call_id',
  'lead_id',
  'profile_id',
  'started_at',
  'ended_at',
  'duration_seconds',
  'outcome',
  'notes',
  'transcript',
  'callback_at',
] as const;

export const MAX_IMPORT_ROWS = 5000;

/** A failing import row: its 1-based number among the data rows, its call id when readable, and what is wrong. */
export class ImportRowError extends Error {
  constructor(
    readonly row: number,
    readonly field: string | null,
    message: string,
  ) {
    super(message);
  }
}

/** Parses RFC 4180 CSV: quoted fields (with "" for a quote) may hold commas and newlines; CRLF or LF. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  let i = 0;
  const s = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  while (i < s.length) {
    const c = s[i]!;
    if (quoted) {
      if (c === '"') {
        if (s[i + 1] === '"') {
          field += '"';
          i += 2;
          continue;
        }
        quoted = false;
        i++;
        continue;
      }
      field += c;
      i++;
      continue;
    }
    if (c === '"' && field === '') {
      quoted = true;
      i++;
    } else if (c === ',') {
      row.push(field);
      field = '';
      i++;
    } else if (c === '\n' || c === '\r') {
      row.push(field);
      field = '';
      rows.push(row);
      row = [];
      i += c === '\r' && s[i + 1] === '\n' ? 2 : 1;
    } else {
      field += c;
      i++;
    }
  }
  if (quoted) throw new ImportRowError(rows.length, null, 'unterminated quoted field');
  if (field !== '' || row.length > 0) {
    row.push(field);
    rows.push(row);
  }
  return rows.filter((r) => !(r.length === 1 && r[0] === ''));
}

/**
 * The calls of an import, validated all or nothing: CSV text (header row of
 * IMPORT_COLUMNS) or a JSON array of objects with the same fields. Throws
 * ImportRowError naming the first failing row (1-based among data rows).
 * Duplicate call ids within one import are an error.
 */
export function parseImport(input: { csv?: string | undefined; rows?: unknown[] | undefined }): CallInput[] {
  let raw: Record<string, unknown>[];
  if (input.csv !== undefined) {
    const table = parseCsv(input.csv);
    if (table.length === 0) throw new ImportRowError(0, null, 'the CSV is empty; the first line names the columns');
    const header = table[0]!.map((h) => h.trim().toLowerCase());
    const unknown = header.filter((h) => !(IMPORT_COLUMNS as readonly string[]).includes(h));
    if (unknown.length > 0) throw new ImportRowError(0, unknown[0]!, `unknown column ${JSON.stringify(unknown[0])}; columns: ${IMPORT_COLUMNS.join(', ')}`);
    const dup = header.find((h, i) => header.indexOf(h) !== i);
    if (dup !== undefined) throw new ImportRowError(0, dup, `column ${dup} appears twice`);
    raw = table.slice(1).map((cells, i) => {
      if (cells.length !== header.length) throw new ImportRowError(i + 1, null, `has ${cells.length} fields, the header has ${header.length}`);
      const o: Record<string, unknown> = {};
      header.forEach((h, j) => {
        const v = cells[j]!;
        if (v.trim() === '') return; // an empty cell is an absent value
        o[h] = h === 'duration_seconds' ? (/^\s*\d+\s*$/.test(v) ? Number(v) : v) : v;
      });
      return o;
    });
  } else if (input.rows !== undefined) {
    raw = input.rows.map((r, i) => {
      if (typeof r !== 'object' || r === null || Array.isArray(r)) throw new ImportRowError(i + 1, null, 'is not an object');
      return r as Record<string, unknown>;
    });
  } else {
    throw new ImportRowError(0, null, 'give csv or rows');
  }
  if (raw.length === 0) throw new ImportRowError(0, null, 'no calls to import');
  if (raw.length > MAX_IMPORT_ROWS) throw new ImportRowError(0, null, `${raw.length} calls; at most ${MAX_IMPORT_ROWS} per import`);
  const seen = new Map<string, number>();
  return raw.map((r, i) => {
    const extra = Object.keys(r).filter((k) => !(IMPORT_COLUMNS as readonly string[]).includes(k));
    if (extra.length > 0) throw new ImportRowError(i + 1, extra[0]!, `unknown field ${JSON.stringify(extra[0])}`);
    const parsed = callInputSchema.safeParse(r);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const field = issue.path.map(String).join('.') || null;
      throw new ImportRowError(i + 1, field, `${field ?? 'row'}: ${issue.message}`);
    }
    const first = seen.get(parsed.data.call_id);
    if (first !== undefined) throw new ImportRowError(i + 1, 'call_id', `call_id ${parsed.data.call_id} already appears in row ${first}`);
    seen.set(parsed.data.call_id, i + 1);
    return parsed.data;
  });
}

/** The end of a call: ended_at, else started_at + duration_seconds, else its start. */
export function callEnd(c: CallInput): number {
  if (c.ended_at !== undefined) return Date.parse(c.ended_at);
  return Date.parse(c.started_at) + (c.duration_seconds ?? 0) * 1000;
}

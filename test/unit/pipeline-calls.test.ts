import { describe, expect, it } from 'vitest';
import { CALL_OUTCOMES, callEnd, ImportRowError, OUTCOME_STATUS, parseCallback, parseCsv, parseImport } from '../../src/domain/calls/rules.js';
import { checkTransition, LEAD_STATUSES, LEAD_TRANSITIONS } from '../../src/domain/leads/pipeline.js';
import { CATALOGUE } from '../../src/webhooks/catalogue.js';

const t = (s: string) => Date.parse(s);
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const friday = t('2026-03-27T10:00:00Z');

describe('callback parsing in the site time zone', () => {
  it('reads "call me back Tuesday at 3pm" relative to the call start, in the zone', () => {
    const notes = 'Busy now. Please call me back Tuesday at 3pm.';
    expect(iso(parseCallback({ notes, outcome: 'callback_requested', startedAt: friday, tz: 'Europe/Berlin' }))).toBe('2026-03-31T13:00:00.000Z');
    expect(iso(parseCallback({ notes, outcome: 'callback_requested', startedAt: friday, tz: 'America/New_York' }))).toBe('2026-03-31T19:00:00.000Z');
    expect(iso(parseCallback({ notes, outcome: 'callback_requested', startedAt: friday, tz: 'UTC' }))).toBe('2026-03-31T15:00:00.000Z');
  });

  it('takes "tomorrow" on the site calendar, across midnight and DST', () => {
    const start = t('2026-03-27T23:30:00Z'); // Friday 23:30 UTC = Saturday 00:30 in Berlin
    const transcript = 'Agent: when suits you?\nCaller: call me back tomorrow at 9am please.';
    expect(iso(parseCallback({ transcript, outcome: 'connected', startedAt: start, tz: 'Europe/Berlin' }))).toBe('2026-03-29T07:00:00.000Z'); // Sunday 09:00 CEST
    expect(iso(parseCallback({ transcript, outcome: 'connected', startedAt: start, tz: 'UTC' }))).toBe('2026-03-28T09:00:00.000Z');
  });

  it('adds relative amounts to the real start and keeps explicit offsets', () => {
    expect(iso(parseCallback({ notes: 'Try again in 2 hours.', outcome: 'no_answer', startedAt: friday, tz: 'Asia/Kolkata' }))).toBe('2026-03-27T12:00:00.000Z');
    expect(iso(parseCallback({ notes: 'Call back 2026-04-02T10:00:00+02:00', outcome: 'connected', startedAt: friday, tz: 'America/New_York' }))).toBe(
      '2026-04-02T08:00:00.000Z',
    );
  });

  it('means noon local for a day without a time', () => {
    expect(iso(parseCallback({ notes: 'Call me back on Monday.', outcome: 'connected', startedAt: friday, tz: 'Europe/Berlin' }))).toBe('2026-03-30T10:00:00.000Z');
  });

  it('ignores dates that are not a callback or lie in the past', () => {
    expect(parseCallback({ transcript: 'I visited your shop last Monday at 3pm.', outcome: 'connected', startedAt: friday, tz: 'UTC' })).toBeNull();
    expect(parseCallback({ notes: 'Monday at 3pm was the demo.', outcome: 'connected', startedAt: friday, tz: 'UTC' })).toBeNull();
    expect(parseCallback({ notes: 'Call me back yesterday, ha.', outcome: 'connected', startedAt: friday, tz: 'UTC' })).toBeNull();
    expect(parseCallback({ outcome: 'connected', startedAt: friday, tz: 'UTC' })).toBeNull();
    // callback_requested: any date in the notes counts.
    expect(iso(parseCallback({ notes: 'Tuesday 10:00', outcome: 'callback_requested', startedAt: friday, tz: 'UTC' }))).toBe('2026-03-31T10:00:00.000Z');
  });
});

describe('outcome to status mapping', () => {
  it('maps every outcome of the catalogue', () => {
    expect(Object.keys(OUTCOME_STATUS).sort()).toEqual([...CALL_OUTCOMES].sort());
    expect(CATALOGUE['call.completed'].schema.shape.outcome.options).toEqual([...CALL_OUTCOMES]);
    expect(OUTCOME_STATUS).toMatchObject({
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
    });
  });

  it('moves only along allowed transitions', () => {
    expect(checkTransition('new', 'working', true)).toEqual({ ok: true });
    expect(checkTransition('working', 'working', true)).toEqual({ ok: true });
    expect(checkTransition('won', 'lost', true).ok).toBe(false);
    expect(checkTransition('won', 'working', true).ok).toBe(false);
    expect(checkTransition('lost', 'working', true)).toEqual({ ok: true });
    expect(checkTransition('lost', 'qualified', true).ok).toBe(false);
    expect(checkTransition('unworkable', 'working', false)).toMatchObject({ ok: false, reason: expect.stringContaining('no contact value') });
    expect(checkTransition('unworkable', 'lost', false)).toEqual({ ok: true });
    expect(checkTransition('new', 'unworkable', true)).toEqual({ ok: true });
    expect(LEAD_STATUSES).toEqual(['new', 'working', 'qualified', 'won', 'lost', 'unworkable']);
    for (const s of LEAD_STATUSES) for (const to of LEAD_TRANSITIONS[s]) expect(LEAD_STATUSES).toContain(to);
  });
});

describe('call import validation', () => {
  const header = 'call_id,lead_id,started_at,ended_at,outcome,notes';

  it('parses quoted CSV with commas, quotes, newlines and CRLF', () => {
    expect(parseCsv('a,b\r\n"x, y","say ""hi""\nthere"\r\n')).toEqual([
      ['a', 'b'],
      ['x, y', 'say "hi"\nthere'],
    ]);
    expect(() => parseCsv('a\n"open')).toThrow(ImportRowError);
  });

  it('accepts a valid export, ended_at or duration_seconds, any column order', () => {
    const calls = parseImport({
      csv: `${header}\nc1,lead_1,2026-03-27T10:00:00Z,2026-03-27T10:03:04Z,connected,"call me back Tuesday, 3pm"\nc2,lead_2,2026-03-27T11:00:00+01:00,,voicemail,\n`,
    });
    expect(calls.map((c) => c.call_id)).toEqual(['c1', 'c2']);
    expect(calls[0]!.notes).toBe('call me back Tuesday, 3pm');
    expect(calls[1]!.notes).toBeUndefined();
    expect(callEnd(calls[0]!) - t(calls[0]!.started_at)).toBe(184_000);
    const j = parseImport({ rows: [{ outcome: 'booked', call_id: 'c3', profile_id: 'prf_1', started_at: '2026-03-27T10:00:00Z', duration_seconds: 60 }] });
    expect(callEnd(j[0]!)).toBe(t('2026-03-27T10:01:00Z'));
    const d = parseImport({ csv: 'outcome,call_id,profile_id,started_at,duration_seconds\nno_answer,c4,prf_9,2026-03-27T10:00:00Z,12\n' });
    expect(d[0]).toMatchObject({ duration_seconds: 12, profile_id: 'prf_9' });
  });

  const fails = (input: Parameters<typeof parseImport>[0]) => {
    try {
      parseImport(input);
    } catch (err) {
      expect(err).toBeInstanceOf(ImportRowError);
      const e = err as ImportRowError;
      return { row: e.row, field: e.field, message: e.message };
    }
    throw new Error('expected the import to fail');
  };

  it('names the first failing row and field', () => {
    const good = 'c1,lead_1,2026-03-27T10:00:00Z,2026-03-27T10:01:00Z,connected,';
    expect(fails({ csv: `${header}\n${good}\nc2,lead_2,yesterday,,connected,\n` })).toMatchObject({ row: 2, field: 'started_at' });
    expect(fails({ csv: `${header}\n${good}\nc2,lead_2,2026-03-27T10:00:00Z,,married,\n` })).toMatchObject({ row: 2, field: 'outcome' });
    expect(fails({ csv: `${header}\n${good}\nc3,,2026-03-27T10:00:00Z,,connected,\n` })).toMatchObject({ row: 2, field: 'lead_id' });
    expect(fails({ csv: `${header}\nc1,lead_1,2026-03-27T10:00:00Z,2026-03-27T09:00:00Z,connected,\n` })).toMatchObject({ row: 1, field: 'ended_at' });
    expect(fails({ csv: `${header}\n${good}\n${good}\n` })).toMatchObject({ row: 2, field: 'call_id', message: expect.stringContaining('row 1') });
    expect(fails({ csv: `${header}\n${good}\nc2,lead_2\n` })).toMatchObject({ row: 2 });
    expect(fails({ csv: `${header},phone\n${good},+4912345\n` })).toMatchObject({ row: 0, field: 'phone' });
    expect(fails({ csv: `${header}\n` })).toMatchObject({ row: 0, message: expect.stringContaining('no calls') });
    expect(fails({ rows: [{ call_id: 'c1', lead_id: 'l', started_at: '2026-03-27T10:00:00Z', outcome: 'connected', email: 'a@b.c' }] })).toMatchObject({ row: 1, field: 'email' });
    expect(fails({ rows: ['nope'] })).toMatchObject({ row: 1 });
    expect(fails({ rows: [{ call_id: 'c1', lead_id: 'l', started_at: '2026-03-27T10:00:00', outcome: 'connected' }] })).toMatchObject({ row: 1, field: 'started_at' });
  });
});

import { describe, expect, it } from 'vitest';
import { isoWeekAt, isoWeekOfDay, localDay, startOfLocalDay } from '../../src/domain/stall/week.js';

const at = (s: string) => Date.parse(s);
const day = (s: string) => Math.floor(Date.parse(`${s}T00:00:00Z`) / 86_400_000);

describe('ISO weeks', () => {
  it('numbers weeks by the year of their Thursday, at and around the 2026/2027 boundary', () => {
    expect(isoWeekOfDay(day('2026-12-27'))).toEqual({ year: 2026, week: 52 }); // Sunday
    expect(isoWeekOfDay(day('2026-12-28'))).toEqual({ year: 2026, week: 53 }); // Monday
    expect(isoWeekOfDay(day('2026-12-31'))).toEqual({ year: 2026, week: 53 }); // Thursday
    expect(isoWeekOfDay(day('2027-01-01'))).toEqual({ year: 2026, week: 53 }); // Friday
    expect(isoWeekOfDay(day('2027-01-03'))).toEqual({ year: 2026, week: 53 }); // Sunday
    expect(isoWeekOfDay(day('2027-01-04'))).toEqual({ year: 2027, week: 1 }); // Monday
    expect(isoWeekOfDay(day('2021-01-03'))).toEqual({ year: 2020, week: 53 });
    expect(isoWeekOfDay(day('2024-12-30'))).toEqual({ year: 2025, week: 1 });
    expect(isoWeekOfDay(day('2026-01-01'))).toEqual({ year: 2026, week: 1 });
  });

  it('starts a week on Monday 00:00 UTC in UTC, and 2026-12-31 / 2027-01-01 share week 2026-W53', () => {
    const w = isoWeekAt(at('2026-12-31T12:00:00Z'), 'UTC');
    expect(w.label).toBe('2026-W53');
    expect(new Date(w.start).toISOString()).toBe('2026-12-28T00:00:00.000Z');
    expect(new Date(w.end).toISOString()).toBe('2027-01-04T00:00:00.000Z');
    expect(isoWeekAt(at('2027-01-01T00:00:00Z'), 'UTC').label).toBe('2026-W53');
    expect(isoWeekAt(at('2027-01-03T23:59:59.999Z'), 'UTC').label).toBe('2026-W53');
    expect(isoWeekAt(at('2027-01-04T00:00:00Z'), 'UTC').label).toBe('2027-W01');
  });

  it('uses the site time zone: Monday 00:00 local is the boundary, not UTC midnight', () => {
    // Berlin is UTC+1 in January: local Monday 2027-01-04 00:00 is 2027-01-03T23:00Z.
    expect(isoWeekAt(at('2027-01-03T22:59:59.999Z'), 'Europe/Berlin').label).toBe('2026-W53');
    const w = isoWeekAt(at('2027-01-03T23:00:00Z'), 'Europe/Berlin');
    expect(w.label).toBe('2027-W01');
    expect(new Date(w.start).toISOString()).toBe('2027-01-03T23:00:00.000Z');
    // Los Angeles is UTC-8: the same UTC instant is still Sunday there.
    expect(isoWeekAt(at('2027-01-04T07:59:59.999Z'), 'America/Los_Angeles').label).toBe('2026-W53');
    const la = isoWeekAt(at('2027-01-04T08:00:00Z'), 'America/Los_Angeles');
    expect(la.label).toBe('2027-W01');
    expect(new Date(la.start).toISOString()).toBe('2027-01-04T08:00:00.000Z');
    // Tokyo (UTC+9): Monday 09:00 local on 2027-01-04 is 00:00Z, already in W01 since 2027-01-03T15:00Z.
    expect(new Date(isoWeekAt(at('2027-01-04T00:00:00Z'), 'Asia/Tokyo').start).toISOString()).toBe('2027-01-03T15:00:00.000Z');
  });

  it('counts weeks back across the year boundary', () => {
    expect(isoWeekAt(at('2027-01-06T12:00:00Z'), 'UTC', 1).label).toBe('2026-W53');
    expect(isoWeekAt(at('2027-01-06T12:00:00Z'), 'UTC', 2).label).toBe('2026-W52');
    const w = isoWeekAt(at('2027-01-06T12:00:00Z'), 'Europe/Berlin', 4);
    expect(w.label).toBe('2026-W50');
    expect(new Date(w.start).toISOString()).toBe('2026-12-06T23:00:00.000Z');
  });

  it('has 167 hours in the week of the spring daylight-saving change and 169 in the autumn one', () => {
    const spring = isoWeekAt(at('2026-03-27T12:00:00Z'), 'Europe/Berlin'); // clocks go forward Sunday 2026-03-29
    expect(new Date(spring.start).toISOString()).toBe('2026-03-22T23:00:00.000Z');
    expect(new Date(spring.end).toISOString()).toBe('2026-03-29T22:00:00.000Z');
    expect((spring.end - spring.start) / 3_600_000).toBe(167);
    const autumn = isoWeekAt(at('2026-10-22T12:00:00Z'), 'Europe/Berlin'); // back Sunday 2026-10-25
    expect((autumn.end - autumn.start) / 3_600_000).toBe(169);
  });

  it('starts a day whose local midnight does not exist at its first instant', () => {
    // Chile moves 00:00 -> 01:00 on Sunday 2026-09-06.
    const d = day('2026-09-06');
    const t = startOfLocalDay(d, 'America/Santiago');
    expect(localDay(t, 'America/Santiago')).toBe(d);
    expect(localDay(t - 1, 'America/Santiago')).toBe(d - 1);
  });
});

import { describe, expect, it } from 'vitest';
import { capWindowStart, inQuietHours, reachesScore, releaseTime, underCap } from '../../src/domain/triggers/rules.js';
import { isoInZone, offsetMs, parseClock, wallTime, zonedToUtc } from '../../src/domain/triggers/zoned.js';

const t = (s: string) => Date.parse(s);
const iso = (ms: number) => new Date(ms).toISOString();

describe('zoned time', () => {
  it('reads wall time and offsets across DST', () => {
    expect(wallTime(t('2026-03-29T00:59:59Z'), 'Europe/Berlin')).toMatchObject({ day: 29, hour: 1, minute: 59 });
    expect(wallTime(t('2026-03-29T01:00:00Z'), 'Europe/Berlin')).toMatchObject({ day: 29, hour: 3, minute: 0 });
    expect(offsetMs(t('2026-01-15T12:00:00Z'), 'Europe/Berlin')).toBe(3_600_000);
    expect(offsetMs(t('2026-07-15T12:00:00Z'), 'Europe/Berlin')).toBe(7_200_000);
    expect(offsetMs(t('2026-07-15T12:00:00Z'), 'Asia/Kolkata')).toBe(19_800_000);
    expect(isoInZone(t('2026-03-31T13:00:00Z'), 'Europe/Berlin')).toBe('2026-03-31T15:00:00+02:00');
    expect(isoInZone(t('2026-01-31T13:00:00Z'), 'America/New_York')).toBe('2026-01-31T08:00:00-05:00');
  });

  it('places local times, moving one skipped by DST forward and taking the earlier of a repeated one', () => {
    expect(iso(zonedToUtc({ year: 2026, month: 3, day: 29, hour: 7, minute: 0 }, 'Europe/Berlin'))).toBe('2026-03-29T05:00:00.000Z');
    expect(iso(zonedToUtc({ year: 2026, month: 3, day: 28, hour: 7, minute: 0 }, 'Europe/Berlin'))).toBe('2026-03-28T06:00:00.000Z');
    // 02:30 does not exist on 29 March 2026 in Berlin: 03:30 CEST.
    expect(iso(zonedToUtc({ year: 2026, month: 3, day: 29, hour: 2, minute: 30 }, 'Europe/Berlin'))).toBe('2026-03-29T01:30:00.000Z');
    // 02:30 exists twice on 25 October 2026: the first (CEST).
    expect(iso(zonedToUtc({ year: 2026, month: 10, day: 25, hour: 2, minute: 30 }, 'Europe/Berlin'))).toBe('2026-10-25T00:30:00.000Z');
    // Day overflow rolls into the next month.
    expect(iso(zonedToUtc({ year: 2026, month: 1, day: 32, hour: 0, minute: 0 }, 'UTC'))).toBe('2026-02-01T00:00:00.000Z');
  });

  it('parses HH:MM clocks strictly', () => {
    expect(parseClock('00:00')).toBe(0);
    expect(parseClock('23:59')).toBe(1439);
    expect(parseClock('24:00')).toBeNull();
    expect(parseClock('7:00')).toBeNull();
  });
});

describe('quiet hours', () => {
  const night = { start: '22:00', end: '07:00' };

  it('is quiet from start (inclusive) to end (exclusive), across midnight', () => {
    const tz = 'Europe/Berlin';
    expect(inQuietHours(t('2026-01-10T20:59:00Z'), night, tz)).toBe(false); // 21:59
    expect(inQuietHours(t('2026-01-10T21:00:00Z'), night, tz)).toBe(true); // 22:00
    expect(inQuietHours(t('2026-01-10T23:30:00Z'), night, tz)).toBe(true); // 00:30
    expect(inQuietHours(t('2026-01-11T05:59:00Z'), night, tz)).toBe(true); // 06:59
    expect(inQuietHours(t('2026-01-11T06:00:00Z'), night, tz)).toBe(false); // 07:00
    expect(inQuietHours(t('2026-01-10T12:00:00Z'), { start: '09:00', end: '09:00' }, tz)).toBe(false);
  });

  it('defers a fire to the end of the quiet hours, never drops it', () => {
    const tz = 'Europe/Berlin';
    expect(releaseTime(t('2026-01-10T20:59:00Z'), night, tz)).toBe(t('2026-01-10T20:59:00Z'));
    expect(iso(releaseTime(t('2026-01-10T21:00:00Z'), night, tz))).toBe('2026-01-11T06:00:00.000Z');
    expect(iso(releaseTime(t('2026-01-11T02:00:00Z'), night, tz))).toBe('2026-01-11T06:00:00.000Z');
    expect(releaseTime(t('2026-01-10T12:00:00Z'), null, tz)).toBe(t('2026-01-10T12:00:00Z'));
  });

  it('ends at the local end time across the DST changes of a zone', () => {
    // Spring forward (Berlin, 29 March 2026): 22:30 CET -> 07:00 CEST, only 7.5 hours later.
    expect(iso(releaseTime(t('2026-03-28T21:30:00Z'), night, 'Europe/Berlin'))).toBe('2026-03-29T05:00:00.000Z');
    // Fall back (Berlin, 25 October 2026): 23:00 CEST -> 07:00 CET, 9 hours later.
    expect(iso(releaseTime(t('2026-10-24T21:00:00Z'), night, 'Europe/Berlin'))).toBe('2026-10-25T06:00:00.000Z');
    // New York, 1 November 2026: 21:30 EDT -> 08:00 EST.
    expect(iso(releaseTime(t('2026-11-01T01:30:00Z'), { start: '21:00', end: '08:00' }, 'America/New_York'))).toBe('2026-11-01T13:00:00.000Z');
    // An end that the spring-forward night skips (02:30) releases at the first instant after the gap.
    expect(iso(releaseTime(t('2026-03-28T22:30:00Z'), { start: '23:00', end: '02:30' }, 'Europe/Berlin'))).toBe('2026-03-29T01:30:00.000Z');
  });

  it('uses the site time zone, not UTC', () => {
    const at = t('2026-01-10T17:00:00Z'); // 17:00 UTC, 22:30 in Kolkata, 12:00 in New York
    expect(inQuietHours(at, night, 'UTC')).toBe(false);
    expect(iso(releaseTime(at, { start: '22:00', end: '06:00' }, 'Asia/Kolkata'))).toBe('2026-01-11T00:30:00.000Z');
    expect(releaseTime(at, night, 'America/New_York')).toBe(at);
  });

  it('handles a same-day window', () => {
    const lunch = { start: '12:00', end: '14:00' };
    expect(releaseTime(t('2026-05-05T11:59:00Z'), lunch, 'UTC')).toBe(t('2026-05-05T11:59:00Z'));
    expect(iso(releaseTime(t('2026-05-05T12:30:00Z'), lunch, 'UTC'))).toBe('2026-05-05T14:00:00.000Z');
    expect(releaseTime(t('2026-05-05T14:00:00Z'), lunch, 'UTC')).toBe(t('2026-05-05T14:00:00Z'));
  });
});

describe('frequency cap and score threshold', () => {
  it('allows fires strictly under the cap', () => {
    const cap = { count: 2, windowMs: 86_400_000 };
    expect(underCap(0, cap)).toBe(true);
    expect(underCap(1, cap)).toBe(true);
    expect(underCap(2, cap)).toBe(false);
    expect(underCap(3, cap)).toBe(false);
    expect(capWindowStart(t('2026-01-02T00:00:00Z'), cap)).toBe(t('2026-01-01T00:00:00Z'));
  });

  it('fires when a score reaches the threshold from below, once', () => {
    expect(reachesScore(null, 80, 80)).toBe(true);
    expect(reachesScore(79.9, 80, 80)).toBe(true);
    expect(reachesScore(80, 90, 80)).toBe(false);
    expect(reachesScore(50, 79.9, 80)).toBe(false);
    expect(reachesScore(50, null, 80)).toBe(false);
  });
});

import { parseClock, wallTime, zonedToUtc } from './zoned.js';

/** What makes a trigger fire for a profile. */
export const TRIGGER_KINDS = ['segment_entered', 'event', 'score'] as const;
export type TriggerKind = (typeof TRIGGER_KINDS)[number];

/** Why a fire was created: one of the trigger kinds, by hand (`manual`) or a test fire (`test`). */
export type FireReason = TriggerKind | 'manual' | 'test';

/** Quiet hours: local start and end ("HH:MM") in the site's time zone; start after end crosses midnight. */
export interface QuietHours {
  start: string;
  end: string;
}

/**
 * Whether an instant lies in the quiet hours of `tz`. The window is
 * [start, end) in local time: 22:00-07:00 is quiet from 22:00 up to 06:59:59
 * the next morning. start == end means no quiet hours.
 */
export function inQuietHours(at: number, q: QuietHours, tz: string): boolean {
  const start = parseClock(q.start);
  const end = parseClock(q.end);
  if (start === null || end === null || start === end) return false;
  const w = wallTime(at, tz);
  const m = w.hour * 60 + w.minute;
  return start < end ? m >= start && m < end : m >= start || m < end;
}

/**
 * When a fire due at `at` may be sent: `at` itself outside quiet hours, else
 * the end of the quiet hours it falls in (the next local `end` time; when that
 * local time does not exist on a DST night, the first instant after the gap).
 * A fire in quiet hours is deferred, never dropped.
 */
export function releaseTime(at: number, q: QuietHours | null, tz: string): number {
  if (q === null || !inQuietHours(at, q, tz)) return at;
  const end = parseClock(q.end)!;
  const w = wallTime(at, tz);
  const m = w.hour * 60 + w.minute;
  // Before the end on the same local day (the after-midnight part, or a same-day window), else the next day's.
  const day = m < end ? w.day : w.day + 1;
  const t = zonedToUtc({ year: w.year, month: w.month, day, hour: Math.floor(end / 60), minute: end % 60 }, tz);
  return t > at ? t : at;
}

/** A frequency cap: at most `count` fires of one trigger per profile within `windowMs`. */
export interface FrequencyCap {
  count: number;
  windowMs: number;
}

/**
 * Whether another fire may be created now, given how many fires of the same
 * trigger for the same profile were created in the window (now - windowMs, now].
 */
export function underCap(firesInWindow: number, cap: FrequencyCap): boolean {
  return firesInWindow < cap.count;
}

/** The start (exclusive) of the cap window that ends at `now`. */
export function capWindowStart(now: number, cap: FrequencyCap): number {
  return now - cap.windowMs;
}

/** Whether a score crosses a trigger's threshold: it reaches `min` now and the profile's previous score (if any) was below. */
export function reachesScore(previous: number | null, current: number | null, min: number): boolean {
  if (current === null || current < min) return false;
  return previous === null || previous < min;
}

/**
 * ISO 8601 weeks in a site's time zone. A week starts on Monday at 00:00 local
 * time (or, where a daylight-saving jump skips local midnight, at the first
 * instant of that Monday) and belongs to the ISO year of its Thursday, so
 * 2026-12-31 (a Thursday) is in 2026-W53 and 2027-01-01 too; 2027-W01 starts on
 * Monday 2027-01-04.
 */

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', { timeZone, year: 'numeric', month: 'numeric', day: 'numeric', hourCycle: 'h23' });
    formatters.set(timeZone, f);
  }
  return f;
}

/** Whether `tz` is an IANA time zone this runtime knows. */
export function isTimeZone(tz: string): boolean {
  try {
    formatter(tz);
    return true;
  } catch {
    return false;
  }
}

/** The local calendar date of an instant in `tz`, as days since 1970-01-01. */
export function localDay(t: number, timeZone: string): number {
  const parts = formatter(timeZone).formatToParts(new Date(t));
  const get = (type: string) => Number(parts.find((p) => p.type === type)!.value);
  return Math.floor(Date.UTC(get('year'), get('month') - 1, get('day')) / 86_400_000);
}

/** ISO year and week number of a calendar date given as days since 1970-01-01. */
export function isoWeekOfDay(day: number): { year: number; week: number } {
  const d = new Date(day * 86_400_000);
  const weekday = (d.getUTCDay() + 6) % 7; // Monday 0 .. Sunday 6
  const thursday = day - weekday + 3;
  const year = new Date(thursday * 86_400_000).getUTCFullYear();
  const jan1 = Math.floor(Date.UTC(year, 0, 1) / 86_400_000);
  return { year, week: Math.floor((thursday - jan1) / 7) + 1 };
}

/** The label of an ISO week, e.g. 2026-W53. */
export function weekLabel(w: { year: number; week: number }): string {
  return `${w.year}-W${String(w.week).padStart(2, '0')}`;
}

/** The first instant (UTC ms) whose local date in `tz` is `day` or later. */
export function startOfLocalDay(day: number, timeZone: string): number {
  // Local midnight lies within 15 hours of UTC midnight of the same date in every zone.
  let lo = day * 86_400_000 - 15 * 3_600_000;
  let hi = day * 86_400_000 + 15 * 3_600_000;
  // Offsets are whole minutes: search minutes, then the answer is exact.
  while (hi - lo > 60_000) {
    const mid = lo + Math.floor((hi - lo) / 120_000) * 60_000;
    if (localDay(mid, timeZone) >= day) hi = mid;
    else lo = mid;
  }
  return hi;
}

export interface IsoWeek {
  label: string;
  year: number;
  week: number;
  /** Monday of the week as days since 1970-01-01. */
  monday: number;
  /** First instant of the week in the zone (UTC ms), inclusive. */
  start: number;
  /** First instant of the next week (UTC ms), exclusive. */
  end: number;
}

/** The ISO week containing instant `t` in `timeZone`, shifted back `back` weeks. */
export function isoWeekAt(t: number, timeZone: string, back = 0): IsoWeek {
  const day = localDay(t, timeZone);
  const weekday = (new Date(day * 86_400_000).getUTCDay() + 6) % 7;
  const monday = day - weekday - 7 * back;
  const w = isoWeekOfDay(monday);
  return {
    label: weekLabel(w),
    year: w.year,
    week: w.week,
    monday,
    start: startOfLocalDay(monday, timeZone),
    end: startOfLocalDay(monday + 7, timeZone),
  };
}

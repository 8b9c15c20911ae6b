/**
 * Wall-clock arithmetic in an IANA time zone (the site's `sites.timezone`)
 * with nothing but Intl: the local date and time of an instant, and the
 * instant of a local date and time, DST gaps and overlaps included.
 */

export interface WallTime {
  year: number;
  /** 1 to 12. */
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    if (formatters.size > 500) formatters.clear();
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

/** `tz` when it is a known time zone, else UTC (a bad stored value never breaks a fire or a call). */
export function safeTimeZone(tz: string | null | undefined): string {
  return tz && isTimeZone(tz) ? tz : 'UTC';
}

/** The local date and time of an instant in `tz`. */
export function wallTime(ms: number, tz: string): WallTime {
  const parts: Record<string, number> = {};
  for (const p of formatter(tz).formatToParts(new Date(ms))) if (p.type !== 'literal') parts[p.type] = Number(p.value);
  return { year: parts.year!, month: parts.month!, day: parts.day!, hour: parts.hour! % 24, minute: parts.minute!, second: parts.second! };
}

/** The offset of `tz` from UTC at an instant, in ms (Berlin in winter: +3,600,000). */
export function offsetMs(ms: number, tz: string): number {
  const w = wallTime(ms, tz);
  const asUtc = Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);
  return asUtc - Math.floor(ms / 1000) * 1000;
}

/**
 * The instant at which the clocks of `tz` show a local date and time. Day and
 * month overflow roll over (day 32 is the 1st of the next month). A local time
 * that does not exist (skipped by a DST change, e.g. 02:30 on the spring-forward
 * night) is moved forward by the length of the gap (03:30); one that exists
 * twice (the fall-back hour) is the earlier of the two instants.
 */
export function zonedToUtc(w: Pick<WallTime, 'year' | 'month' | 'day' | 'hour' | 'minute'> & { second?: number }, tz: string): number {
  const wall = Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second ?? 0);
  // Candidates with the offsets in force shortly before and after: one of them is consistent.
  const before = offsetMs(wall - 86_400_000 / 2, tz);
  const after = offsetMs(wall + 86_400_000 / 2, tz);
  const candidates = [wall - before, wall - after].sort((a, b) => a - b);
  for (const t of candidates) if (t + offsetMs(t, tz) === wall) return t;
  // In a gap: no instant shows this wall time; the clock jumped from before to after.
  return wall - before;
}

/** Local midnight-based minutes of a "HH:MM" string, or null when malformed. */
export function parseClock(hhmm: string): number | null {
  const m = /^([01]\d|2[0-3]):([0-5]\d)$/.exec(hhmm);
  return m ? Number(m[1]) * 60 + Number(m[2]) : null;
}

/** ISO 8601 of an instant with the offset of `tz` at that instant, e.g. 2026-03-31T15:00:00+02:00. */
export function isoInZone(ms: number, tz: string): string {
  const w = wallTime(ms, tz);
  const off = Math.round(offsetMs(ms, tz) / 60_000);
  const sign = off < 0 ? '-' : '+';
  const abs = Math.abs(off);
  const p = (n: number, l = 2) => String(n).padStart(l, '0');
  return `${p(w.year, 4)}-${p(w.month)}-${p(w.day)}T${p(w.hour)}:${p(w.minute)}:${p(w.second)}${sign}${p(Math.floor(abs / 60))}:${p(abs % 60)}`;
}

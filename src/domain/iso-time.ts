const pad2 = (n: number) => (n < 10 ? `0${n}` : `${n}`);
const pad3 = (n: number) => (n < 10 ? `00${n}` : n < 100 ? `0${n}` : `${n}`);
/** The last millisecond of 9999-12-31: up to it, toISOString writes four-digit years. */
const LAST_FOUR_DIGIT_YEAR_MS = 253_402_300_799_999;

/**
 * new Date(t).toISOString(), written without it for whole milliseconds of
 * 1970-9999 (V8 formats a date through a printf-style formatter, several
 * thousand instructions a call; a snapshot writes six to ten of them); any
 * other value goes to toISOString as before (its six-digit years, its
 * RangeError). A unit test holds it to toISOString.
 */
export function isoTime(t: number): string {
  if (!Number.isInteger(t) || t < 0 || t > LAST_FOUR_DIGIT_YEAR_MS) return new Date(t).toISOString();
  const days = Math.floor(t / 86_400_000);
  let ms = t - days * 86_400_000;
  // Civil date of a day count (H. Hinnant's days_from_civil, inverted), proleptic Gregorian as Date is.
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  const h = Math.floor(ms / 3_600_000);
  ms -= h * 3_600_000;
  const min = Math.floor(ms / 60_000);
  ms -= min * 60_000;
  const sec = Math.floor(ms / 1000);
  ms -= sec * 1000;
  const y = year < 1000 ? `000${year}`.slice(-4) : `${year}`;
  return `${y}-${pad2(month)}-${pad2(day)}T${pad2(h)}:${pad2(min)}:${pad2(sec)}.${pad3(ms)}Z`;
}

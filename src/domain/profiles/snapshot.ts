import type { ProfileFacts } from '../../store/profile-read.js';
import type { ProfileSnapshot } from './schema.js';
import { isoTime } from '../iso-time.js';

const iso = (t: number | null) => (t === null ? null : isoTime(t));

/** Trait keys that hold plaintext personal data. */
export const PII_TRAITS: ReadonlySet<string> = new Set(['email', 'phone', 'name']);

/**
 * The snapshot of a profile. Without `pii` it holds no plaintext email, phone,
 * name or trait value anywhere: only hashes, ids, trait names and activity.
 */
export function buildSnapshot(f: ProfileFacts, pii: boolean): ProfileSnapshot {
  const traits = JSON.parse(f.profile.traits) as Record<string, string>;
  const identity: ProfileSnapshot['identity'] = {
    known: f.profile.known === 1,
    visitor_ids: f.identities.filter((i) => i.kind === 'visitor').map((i) => i.value),
    external_ids: f.identities.filter((i) => i.kind === 'external_id').map((i) => i.value),
    email_sha256: f.hashes.filter((h) => h.kind === 'email_sha256').map((h) => h.hash),
    phone_sha256: f.hashes.filter((h) => h.kind === 'phone_sha256').map((h) => h.hash),
    trait_keys: Object.keys(traits).sort(),
  };
  if (pii) {
    identity.email = traits.email ?? null;
    identity.phone = traits.phone ?? null;
    identity.name = traits.name ?? null;
    identity.traits = traits;
  }
  return {
    profile_id: f.profile.id,
    identity,
    segments: {
      primary: f.profile.primary_segment,
      member_of: f.segments.map((s) => ({ id: s.id, name: s.name, priority: s.priority, since: iso(s.since)! })),
    },
    activity: {
      first_seen: iso(f.sessions.first_seen),
      last_seen: iso(f.sessions.last_seen),
      sessions: f.sessions.count,
      events: f.events.reduce((n, e) => n + e.n, 0),
      events_by_type: f.events.map((e) => ({ type: e.type, count: e.n, last_at: iso(e.last)! })),
      conversions: f.conversions.count,
      revenue: f.conversions.revenue,
      currency: f.conversions.currency,
      revenue_other_currencies: f.conversions.otherCurrencies,
      last_conversion_at: iso(f.conversions.last),
      leads: f.leads,
      last_score: f.lastScore ? { score: f.lastScore.score, at: iso(f.lastScore.at)! } : null,
    },
    meta: {
      site_id: f.profile.site_id,
      created_at: iso(f.profile.created_at)!,
      updated_at: iso(f.profile.updated_at)!,
      merged_profile_ids: f.mergedFrom,
      pii,
    },
  };
}

/**
 * Whether JSON.stringify writes `s` as it is between quotes: printable ASCII but `"` and `\`. A loop, not a
 * regular expression: a snapshot tests a dozen strings, and a string built by concatenation (not flat) sent
 * each test through V8's runtime (~2,000 instructions a call).
 */
function plain(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return false;
  }
  return true;
}
/**
 * Whether the snapshot being written may hold a character above U+007F: set by whatever writes a string that is
 * not plain (conservatively: a control character or a quote sets it too). snapshotJson starts it false.
 */
let wide = false;
/** JSON of a string: as JSON.stringify writes it; the common case (nothing to escape) without calling it. */
const str = (s: string): string => {
  if (plain(s)) return `"${s}"`;
  wide = true;
  return JSON.stringify(s);
};
/** Whether every character of `s` is ASCII (U+0000..U+007F). */
function ascii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}
/** JSON of a time (val(iso(t))): isoTime writes only digits, `-`, `+`, `:`, `.`, `T` and `Z`, nothing to escape. */
const isoJson = (t: number | null): string => (t === null ? 'null' : `"${isoTime(t)}"`);
/** JSON of any leaf value (a number may come as a string or bigint-like from PostgreSQL): as JSON.stringify writes it. */
const val = (v: unknown): string => {
  if (typeof v === 'string') return str(v);
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : 'null';
  if (v === null || v === undefined) return 'null';
  wide = true;
  return JSON.stringify(v);
};
const strs = (list: string[]): string => {
  let out = '[';
  for (let i = 0; i < list.length; i++) out += (i === 0 ? '' : ',') + str(list[i]!);
  return `${out}]`;
};

/**
 * `keys` (distinct: an object's own keys) sorted as Array#sort sorts them: a few (a profile's traits) by
 * insertion, comparing with `<` as the default sort compares (UTF-16 code units; keys are distinct, so any
 * correct sort gives this order); many by sort itself. Array#sort cost ~3,500 instructions a call, even on a
 * handful of keys.
 */
function sortedKeys(keys: string[]): string[] {
  if (keys.length > 16) return keys.sort();
  for (let i = 1; i < keys.length; i++) {
    const k = keys[i]!;
    let j = i - 1;
    while (j >= 0 && keys[j]! > k) {
      keys[j + 1] = keys[j]!;
      j--;
    }
    keys[j + 1] = k;
  }
  return keys;
}

/** JSON.stringify of the other currencies' totals (usually none). */
function otherCurrencies(list: { currency: string; revenue: number }[]): string {
  if (list.length === 0) return '[]';
  wide = true;
  return JSON.stringify(list);
}

/** String.prototype.isWellFormed (Node 20+, not in the ES2023 lib this project compiles against). */
const isWellFormed = (s: string): boolean => (s as unknown as { isWellFormed(): boolean }).isWellFormed();

/**
 * Whether `text`, the stored JSON that JSON.parse read as `o`, is already JSON.stringify(o), so that the answer
 * can embed the stored text instead of writing the object again. Every writer of profiles.traits stores
 * JSON.stringify of a record of strings (ProfileRepo.createProfile and setTraits) or the same bytes built by
 * hand (the seeder's synthetic profiles), so this is the usual case; it is checked, not assumed (rows written
 * by an older version, an import or by hand): true only when `text` is `{`, then each own key of `o` in
 * iteration order as `"key":"value"` with the value a string, comma-separated, then `}` — the order, the
 * members and the absence of whitespace are those of JSON.stringify(o) — and no key or value holds a
 * character JSON.stringify escapes: `text` has no backslash (so no string in it has an escape, and a raw `"`
 * or control character cannot be in a string JSON.parse accepted) and no lone surrogate (which JSON.stringify
 * writes as `\udXXX`). Duplicate keys (JSON.parse keeps the last), integer-like keys out of ascending order
 * (an object iterates them first), spaces, escapes such as `\u0041` or `\/`, and non-string values all fail
 * and are written by JSON.stringify as before.
 */
export function stringified(text: string, o: Record<string, unknown>): boolean {
  if (text.charCodeAt(0) !== 0x7b || text.indexOf('\\') !== -1) return false;
  let at = 1;
  for (const k in o) {
    const v = o[k];
    if (typeof v !== 'string') return false;
    if (at !== 1) {
      if (text.charCodeAt(at) !== 0x2c) return false;
      at++;
    }
    // "k":"v"
    if (text.charCodeAt(at) !== 0x22 || !text.startsWith(k, at + 1)) return false;
    at += 1 + k.length;
    if (text.charCodeAt(at) !== 0x22 || text.charCodeAt(at + 1) !== 0x3a || text.charCodeAt(at + 2) !== 0x22 || !text.startsWith(v, at + 3)) return false;
    at += 3 + v.length;
    if (text.charCodeAt(at) !== 0x22) return false;
    at++;
  }
  return at === text.length - 1 && text.charCodeAt(at) === 0x7d && isWellFormed(text);
}

/** A stored traits text read by flatTraits: its keys and their values, in the text's order. */
export interface FlatTraits {
  keys: string[];
  values: string[];
  /** Whether every character of the text is ASCII. */
  ascii: boolean;
}

/**
 * The stored traits text of the usual form read without JSON.parse (which built an object, a string per key and
 * value, for the three values and the key names a snapshot reads): `{`, then `"key":"value"` members separated by
 * commas, then `}`, with no whitespace, no backslash (so no escape) and no control character, at most 16 members,
 * no two keys alike and no key starting with a digit (an array index would be iterated first by the object
 * JSON.parse builds); the text is then JSON.stringify of what JSON.parse reads from it (stringified holds), and
 * `keys` are Object.keys of it, in order, `values` its values. Anything else answers null (read with JSON.parse as
 * before): another form, a lone surrogate, more members, a value that is not a string. Every writer of
 * profiles.traits stores JSON.stringify of a record of strings (a few keys), so this is the usual case.
 */
export function flatTraits(text: string): FlatTraits | null {
  const n = text.length;
  if (n < 2 || text.charCodeAt(0) !== 0x7b || text.charCodeAt(n - 1) !== 0x7d) return null;
  const keys: string[] = [];
  const values: string[] = [];
  let ascii = true;
  let i = 1;
  while (i < n - 1) {
    if (keys.length !== 0) {
      if (text.charCodeAt(i) !== 0x2c) return null;
      i++;
    }
    // "key"
    if (text.charCodeAt(i) !== 0x22) return null;
    let j = i + 1;
    for (; j < n; j++) {
      const c = text.charCodeAt(j);
      if (c === 0x22) break;
      if (c < 0x20 || c === 0x5c) return null;
      if (c > 0x7f) ascii = false;
    }
    const first = text.charCodeAt(i + 1);
    // :"value"
    if (j >= n - 1 || (first >= 0x30 && first <= 0x39) || text.charCodeAt(j + 1) !== 0x3a || text.charCodeAt(j + 2) !== 0x22) return null;
    let k = j + 3;
    for (; k < n; k++) {
      const c = text.charCodeAt(k);
      if (c === 0x22) break;
      if (c < 0x20 || c === 0x5c) return null;
      if (c > 0x7f) ascii = false;
    }
    if (k >= n - 1 || keys.length === 16) return null;
    const key = text.slice(i + 1, j);
    for (let d = 0; d < keys.length; d++) if (keys[d] === key) return null;
    keys.push(key);
    values.push(text.slice(j + 3, k));
    i = k + 1;
  }
  if (i !== n - 1 || (!ascii && !isWellFormed(text))) return null;
  return { keys, values, ascii };
}

/** The value of `key` among flat traits, or null. */
function flatValue(t: FlatTraits, key: string): string | null {
  for (let i = 0; i < t.keys.length; i++) if (t.keys[i] === key) return t.values[i]!;
  return null;
}

/**
 * JSON.stringify(buildSnapshot(f, pii)), byte for byte (the same keys in the
 * same order, the same escapes and number renderings), written directly: no
 * snapshot object, no walk of it. The hot read path (GET /profile) answers
 * with it; a unit test holds it to buildSnapshot. `body.ascii` is set true
 * only when every character of the answer is ASCII (what every string it
 * wrote as it is already showed, plus a scan of embedded traits), so that the
 * caller may send it as Latin-1 (the same bytes as UTF-8, without measuring
 * and encoding it as UTF-8); false means it may not be.
 */
export function snapshotJson(f: ProfileFacts, pii: boolean, body?: { ascii: boolean }): string {
  wide = false;
  const p = f.profile;
  const flat = flatTraits(p.traits);
  const visitors: string[] = [];
  const externals: string[] = [];
  for (const i of f.identities) {
    if (i.kind === 'visitor') visitors.push(i.value);
    else if (i.kind === 'external_id') externals.push(i.value);
  }
  const emails: string[] = [];
  const phones: string[] = [];
  for (const h of f.hashes) {
    if (h.kind === 'email_sha256') emails.push(h.hash);
    else if (h.kind === 'phone_sha256') phones.push(h.hash);
  }
  let j = `{"profile_id":${val(p.id)},"identity":{"known":${p.known === 1},"visitor_ids":${strs(visitors)},"external_ids":${strs(externals)},"email_sha256":${strs(emails)},"phone_sha256":${strs(phones)},"trait_keys":`;
  if (flat !== null) {
    // The usual stored text: its keys and values as JSON.parse would read them, the text itself as the traits
    // (the values looked up before the keys are sorted in place).
    const named = pii ? `,"email":${val(flatValue(flat, 'email'))},"phone":${val(flatValue(flat, 'phone'))},"name":${val(flatValue(flat, 'name'))},"traits":${p.traits}` : '';
    j += strs(sortedKeys(flat.keys)) + named;
    if (pii && !flat.ascii) wide = true;
  } else {
    const traits = JSON.parse(p.traits) as Record<string, unknown>;
    j += strs(sortedKeys(Object.keys(traits)));
    if (pii) {
      j += `,"email":${val(traits.email ?? null)},"phone":${val(traits.phone ?? null)},"name":${val(traits.name ?? null)},"traits":`;
      if (stringified(p.traits, traits)) {
        j += p.traits;
        if (!ascii(p.traits)) wide = true;
      } else {
        j += JSON.stringify(traits);
        wide = true;
      }
    }
  }
  j += `},"segments":{"primary":${val(p.primary_segment)},"member_of":[`;
  for (let i = 0; i < f.segments.length; i++) {
    const s = f.segments[i]!;
    j += `${i === 0 ? '' : ','}{"id":${val(s.id)},"name":${val(s.name)},"priority":${val(s.priority)},"since":${isoJson(s.since)}}`;
  }
  let events = 0;
  for (const e of f.events) events += e.n;
  j += `]},"activity":{"first_seen":${isoJson(f.sessions.first_seen)},"last_seen":${isoJson(f.sessions.last_seen)},"sessions":${val(f.sessions.count)},"events":${val(events)},"events_by_type":[`;
  for (let i = 0; i < f.events.length; i++) {
    const e = f.events[i]!;
    j += `${i === 0 ? '' : ','}{"type":${val(e.type)},"count":${val(e.n)},"last_at":${isoJson(e.last)}}`;
  }
  const c = f.conversions;
  j += `],"conversions":${val(c.count)},"revenue":${val(c.revenue)},"currency":${val(c.currency)},"revenue_other_currencies":${otherCurrencies(c.otherCurrencies)},"last_conversion_at":${isoJson(c.last)},"leads":${val(f.leads)},"last_score":`;
  j += f.lastScore ? `{"score":${val(f.lastScore.score)},"at":${isoJson(f.lastScore.at)}}` : 'null';
  j += `},"meta":{"site_id":${val(p.site_id)},"created_at":${isoJson(p.created_at)},"updated_at":${isoJson(p.updated_at)},"merged_profile_ids":${strs(f.mergedFrom)},"pii":${pii}}}`;
  if (body !== undefined) body.ascii = !wide;
  return j;
}

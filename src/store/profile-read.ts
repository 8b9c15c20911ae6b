import type { Sql, SqliteSql } from './sql.js';

export interface ProfileRow {
  id: string;
  site_id: string;
  known: number;
  traits: string;
  primary_segment: string | null;
  merged_into: string | null;
  created_at: number;
  updated_at: number;
}

export type LookupKind = 'profile_id' | 'visitor_id' | 'email' | 'external_id' | 'email_sha256' | 'phone_sha256';

export interface ProfileFacts {
  profile: ProfileRow;
  identities: { kind: string; value: string }[];
  hashes: { kind: string; hash: string }[];
  segments: { id: string; name: string; priority: number; since: number }[];
  sessions: { count: number; first_seen: number | null; last_seen: number | null };
  events: { type: string; n: number; last: number }[];
  /** `revenue`: conversions in the site's currency only; `otherCurrencies`: the rest, per currency (never added). */
  conversions: { count: number; revenue: number; last: number | null; currency: string; otherCurrencies: { currency: string; revenue: number }[] };
  leads: number;
  lastScore: { score: number | null; at: number } | null;
  mergedFrom: string[];
}

/** A profile by id, by identity, by identity hash: ProfileRow's columns, named (read by position on SQLite, see profileOf). */
const PROFILE_COLUMNS = 'p.id, p.site_id, p.known, p.traits, p.primary_segment, p.merged_into, p.created_at, p.updated_at';
const PROFILE_BY_ID = `SELECT ${PROFILE_COLUMNS} FROM profiles p WHERE p.id = ? AND p.site_id = ?`;
const PROFILE_BY_IDENTITY = `SELECT ${PROFILE_COLUMNS} FROM identities i JOIN profiles p ON p.id = i.profile_id AND p.site_id = i.site_id WHERE i.site_id = ? AND i.kind = ? AND i.value = ?`;
const PROFILE_BY_HASH = `SELECT ${PROFILE_COLUMNS} FROM identity_hashes h JOIN profiles p ON p.id = h.profile_id AND p.site_id = h.site_id WHERE h.site_id = ? AND h.kind = ? AND h.hash = ?`;

/** A profile row of PROFILE_COLUMNS read as an array. */
function profileOf(r: unknown[] | undefined): ProfileRow | undefined {
  if (r === undefined) return undefined;
  return {
    id: r[0] as string,
    site_id: r[1] as string,
    known: r[2] as number,
    traits: r[3] as string,
    primary_segment: r[4] as string | null,
    merged_into: r[5] as string | null,
    created_at: r[6] as number,
    updated_at: r[7] as number,
  };
}

/** `count` as a number (PostgreSQL may return count(*) as a string). */
function withCount<T extends { count: number }>(row: T): T {
  return { ...row, count: Number(row.count) };
}

/** Read-side queries behind profile snapshots. Every query is scoped by site. */
export class ProfileReadRepo {
  constructor(private readonly x: Sql) {}

  /**
   * One profile row of a PROFILE_BY_* statement. On SQLite it is read as an array at once (SqliteSql.getRow): no
   * object with a property per column, which cost more than the values on the hot profile read.
   */
  private one(sql: string, params: unknown[]): ProfileRow | undefined | Promise<ProfileRow | undefined> {
    return this.x.dialect === 'sqlite' ? profileOf((this.x as SqliteSql).getRow(sql, params)) : this.x.get<ProfileRow>(sql, params);
  }

  /** The surviving profile for a look-up, following merges; undefined when nothing matches in this site. */
  async find(siteId: string, kind: LookupKind, value: string): Promise<ProfileRow | undefined> {
    const stored = LOOKUP_IDENTITY_KIND[kind];
    const row =
      stored === null
        ? await this.one(PROFILE_BY_ID, [value, siteId])
        : await this.one(PROFILE_BY[kind], [siteId, stored, value]);
    return this.survivor(siteId, row);
  }

  /** `row` if it is not merged, else its survivor (chains of merges followed up to 16 hops). */
  private async survivor(siteId: string, found: ProfileRow | undefined): Promise<ProfileRow | undefined> {
    let row = found;
    for (let hops = 1; row !== undefined && row.merged_into !== null; hops++) {
      if (hops >= 16) return undefined;
      row = await this.one(PROFILE_BY_ID, [row.merged_into, siteId]);
    }
    return row;
  }

  /**
   * The surviving profile for a look-up and its facts (find, then facts), undefined when nothing matches in this
   * site. On SQLite one statement reads both (FIND_FACTS: the look-up's row joined to the facts' columns), where
   * find and facts took two, each bound, stepped and read on its own; a merged profile's survivor is found as find
   * finds it and its facts read by SQLITE_FACTS. The result is a promise only when it had to wait (PostgreSQL, a
   * merged profile, conversions in another currency).
   */
  findWithFacts(siteId: string, kind: LookupKind, value: string): ProfileFacts | undefined | Promise<ProfileFacts | undefined> {
    if (this.x.dialect !== 'sqlite') return this.find(siteId, kind, value).then(this.factsOfFound);
    const stored = LOOKUP_IDENTITY_KIND[kind];
    // Bound by position (the statements' `?`s in order): an object would be read a property at a time, each checked.
    const r = stored === null ? (this.x as SqliteSql).getRow(FIND_FACTS_BY_ID, [value, siteId]) : (this.x as SqliteSql).getRow(FIND_FACTS[kind], [siteId, stored, value]);
    // An aggregate over no row still answers one, of NULLs: no profile matched.
    if (r === undefined || r[0] === null) return undefined;
    const lists = JSON.parse(r[2] as string) as FactLists;
    const s = lists[FACT_SCALARS];
    // The profile's own columns travel in the scalars (FIND_SCALARS); its site is the one the statement matched.
    const profile: ProfileRow = {
      id: r[0] as string,
      site_id: siteId,
      known: s[0],
      traits: r[1] as string,
      primary_segment: s[1],
      merged_into: s[2],
      created_at: s[3],
      updated_at: s[4],
    };
    if (profile.merged_into !== null) return this.survivor(siteId, profile).then(this.factsOfFound);
    return this.factsOfLists(profile, lists, r[3] as number, r[4] as number | null, PROFILE_SCALARS);
  }

  /** The facts of a found profile; undefined when none was found. */
  private readonly factsOfFound = (p: ProfileRow | undefined): Promise<ProfileFacts> | undefined => (p === undefined ? undefined : this.facts(p));

  async facts(profile: ProfileRow): Promise<ProfileFacts> {
    const x = this.x;
    const id = [profile.id];
    if (x.dialect === 'sqlite') return this.sqliteFacts(profile);
    return {
      profile,
      identities: await x.all<{ kind: string; value: string }>(
        'SELECT kind, value FROM identities WHERE profile_id = ? ORDER BY kind, created_at',
        id,
      ),
      hashes: await x.all<{ kind: string; hash: string }>(
        'SELECT kind, hash FROM identity_hashes WHERE profile_id = ? ORDER BY kind, created_at DESC',
        id,
      ),
      segments: await x.all<{ id: string; name: string; priority: number; since: number }>(
        'SELECT s.id, s.name, s.priority, m.since FROM segment_members m JOIN segments s ON s.id = m.segment_id WHERE m.profile_id = ? ORDER BY s.priority DESC, s.id',
        id,
      ),
      sessions: withCount(
        (await x.get<{ count: number; first_seen: number | null; last_seen: number | null }>(
          'SELECT count(*) AS count, min(first_seen) AS first_seen, max(last_seen) AS last_seen FROM sessions WHERE profile_id = ?',
          id,
        ))!,
      ),
      events: (
        await x.all<{ type: string; n: number; last: number }>(
          'SELECT type, count(*) AS n, max(ts) AS last FROM events WHERE profile_id = ? GROUP BY type ORDER BY n DESC, type LIMIT 50',
          id,
        )
      ).map((r) => ({ ...r, n: Number(r.n) })),
      conversions: await conversionTotals(x, profile.site_id, profile.id),
      leads: Number((await x.get<{ n: number }>('SELECT count(*) AS n FROM leads WHERE profile_id = ?', id))!.n),
      lastScore:
        (await x.get<{ score: number | null; at: number }>(
          'SELECT score, received_at AS at FROM scores WHERE profile_id = ? ORDER BY received_at DESC, id DESC LIMIT 1',
          id,
        )) ?? null,
      mergedFrom: (await x.all<{ id: string }>('SELECT id FROM profiles WHERE merged_into = ? ORDER BY id', id)).map((r) => r.id),
    };
  }

  /**
   * The same facts on SQLite in one statement instead of ten: the lists
   * and counts whose values are text and integers come back as JSON arrays
   * of one row; the conversion totals and the last score, whose values may
   * be REAL, come as columns of that row so that no number goes through a
   * JSON rendering. A profile with conversions in another currency than the
   * site's (rare) reads its totals with conversionTotals, as above.
   *
   * The lists are put in the portable statements' orders here, not by an
   * ORDER BY inside json_group_array: SQLite builds each such aggregate's
   * order in a temporary b-tree of its own (open, a page allocated and
   * zeroed, close), which cost more than the rest of the list. Each list
   * comes in the order its index is scanned and is sorted stably by the
   * ORDER BY's keys (byFacts): rows whose keys tie keep the scan order,
   * which is the order an aggregate's ORDER BY gives them too (SQLite breaks
   * such ties by a sequence number in scan order).
   */
  private sqliteFacts(profile: ProfileRow): ProfileFacts | Promise<ProfileFacts> {
    const r = (this.x as SqliteSql).getRow(SQLITE_FACTS, [{ id: profile.id, site: profile.site_id }])!;
    return this.factsOfLists(profile, JSON.parse(r[0] as string) as FactLists, r[1] as number, r[2] as number | null, 0);
  }

  /**
   * The facts of `profile` from FACTS_LISTS parsed (`lists`) and the two REAL columns beside it (the conversions'
   * revenue in the site's currency, the last score); the facts' scalars start at `at` in the seventh element.
   */
  private factsOfLists(profile: ProfileRow, lists: FactLists, revenue: number, score: number | null, at: number): ProfileFacts | Promise<ProfileFacts> {
    const [identityList, hashList, segmentList, eventList, merged, sessions, s] = lists;
    const identities = sortedBy(identityList, byKindThenTime).map(([kind, value]) => ({ kind, value }));
    const hashes = sortedBy(hashList, byKindThenNewest).map(([kind, hash]) => ({ kind, hash }));
    const segments = sortedBy(segmentList, byPriorityThenId).map(([id, name, priority, since]) => ({
      id,
      name,
      priority,
      since,
    }));
    // The top 50 by count, then type (each type once: the order is total, so the cut is the portable statement's).
    const events = topEvents(eventGroups(eventList)).map(([type, n, last]) => ({ type, n, last }));
    const scoreAt = s[at + 5] as number | null;
    const facts: ProfileFacts = {
      profile,
      identities,
      hashes,
      segments,
      sessions: { count: sessions[0], first_seen: sessions[1], last_seen: sessions[2] },
      events,
      conversions: { count: s[at + 2] as number, revenue, last: s[at + 3] as number | null, currency: (s[at + 1] as string | null) ?? '', otherCurrencies: [] },
      leads: s[at] as number,
      lastScore: scoreAt === null ? null : { score, at: scoreAt },
      mergedFrom: sortedBy(merged, binaryOrder),
    };
    if (s[at + 4] === 0) return facts;
    return conversionTotals(this.x, profile.site_id, profile.id).then((conversions) => ({ ...facts, conversions }));
  }
}

/**
 * SQLite's BINARY collation of two texts read from it: the order of their
 * UTF-8 bytes, which is the order of their code points. JavaScript's `<`
 * compares UTF-16 code units, which differs only between a surrogate (a code
 * point above U+FFFF) and U+E000..U+FFFF; those two ranges are swapped here.
 */
export function binaryOrder(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x !== y) {
      if (x >= 0xd800 && y >= 0xd800) {
        x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
        y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
      }
      return x - y;
    }
  }
  return a.length - b.length;
}

/** `list` in `order`, stably (Array#sort is stable); left as it is when it already is in that order, the usual case. */
function sortedBy<T>(list: T[], order: (a: T, b: T) => number): T[] {
  for (let i = 1; i < list.length; i++) if (order(list[i - 1]!, list[i]!) > 0) return list.sort(order);
  return list;
}

/**
 * The event counts of FACTS_LISTS as GROUP BY type gives them (type, count(*), max(ts); one group a type, in no
 * particular order): a profile's events themselves (type, ts) when it has at most RAW_EVENTS of them, counted
 * here, else the statement's groups as they came. Up to RAW_EVENTS events SQLite scans and writes them for less
 * than its GROUP BY costs: the index holds them by time (events_profile: profile_id, ts, type), so the grouping
 * needs a sorter (allocated, filled, sorted and freed per snapshot), ~40% of the facts statement's events part.
 */
function eventGroups(list: EventList): [string, number, number][] {
  if (list.length === 0 || list[0]!.length === 3) return list as [string, number, number][];
  const groups: [string, number, number][] = [];
  for (const [type, ts] of list as [string, number][]) {
    let g = 0;
    while (g < groups.length && groups[g]![0] !== type) g++;
    if (g === groups.length) groups.push([type, 1, ts]);
    else {
      const group = groups[g]!;
      group[1]++;
      if (ts > group[2]) group[2] = ts;
    }
  }
  return groups;
}
/**
 * A profile with at most this many events has them in FACTS_LISTS one by one (see eventGroups). Measured in-process
 * (CPU of the subquery, JSON.parse and the counting, 2 to 4 types): 2 events 1.7 against 2.3 us grouped, 8 events
 * 3.9 against 4.0, 12 events 4.7 against 4.6, 16 events 6.3 against 5.4: each event costs more handed over than
 * sorted, so the cut is near where the two meet.
 */
const RAW_EVENTS = 10;

/** The events' ORDER BY n DESC, type LIMIT 50 (the groups of GROUP BY type: no two of the same type). */
function topEvents(list: [string, number, number][]): [string, number, number][] {
  const sorted = sortedBy(list, byCountThenType);
  return sorted.length > EVENT_TYPES_SHOWN ? sorted.slice(0, EVENT_TYPES_SHOWN) : sorted;
}
const EVENT_TYPES_SHOWN = 50;

/** ORDER BY kind, created_at (identities: kind, value, created_at). */
const byKindThenTime = (a: [string, string, number], b: [string, string, number]) => binaryOrder(a[0], b[0]) || a[2] - b[2];
/** ORDER BY kind, created_at DESC (identity hashes: kind, hash, created_at). */
const byKindThenNewest = (a: [string, string, number], b: [string, string, number]) => binaryOrder(a[0], b[0]) || b[2] - a[2];
/** ORDER BY s.priority DESC, s.id (segments: id, name, priority, since). */
const byPriorityThenId = (a: [string, string, number, number], b: [string, string, number, number]) => b[2] - a[2] || binaryOrder(a[0], b[0]);
/** ORDER BY n DESC, type (event counts: type, n, last). */
const byCountThenType = (a: [string, number, number], b: [string, number, number]) => b[1] - a[1] || binaryOrder(a[0], b[0]);

/**
 * FACTS_LISTS parsed: identities (kind, value, created_at), hashes (kind, hash, created_at), segments (id, name,
 * priority, since), event counts (type, n, last), merged profile ids, the sessions' count, first and last seen,
 * and the scalars (FIND_SCALARS then FACTS_SCALARS, or FACTS_SCALARS alone): integers and texts, which JSON
 * carries exactly.
 */
type FactLists = [
  [string, string, number][],
  [string, string, number][],
  [string, string, number, number][],
  EventList,
  string[],
  [number, number | null, number | null],
  FactScalars,
];
/** The event counts of FactLists: the groups (type, n, last), or up to RAW_EVENTS events (type, ts) (eventGroups). */
type EventList = [string, number, number][] | [string, number][];
/**
 * FIND_SCALARS (known, primary_segment, merged_into, created_at, updated_at), when the look-up read the profile,
 * then FACTS_SCALARS (leads, the site's currency, the conversions' count, last time and count in another
 * currency, the last score's time).
 */
type FactScalars = (number | string | null)[] & [number, string | null, string | null, number, number];
/** Where the scalars are in FactLists. */
const FACT_SCALARS = 6;
/** The profile's columns carried in the scalars by FIND_FACTS (ProfileRow's but id, site_id and traits). */
const FIND_SCALARS = 'p.known, p.primary_segment, p.merged_into, p.created_at, p.updated_at';
/** How many FIND_SCALARS there are (FACTS_SCALARS follow them). */
const PROFILE_SCALARS = 5;

/**
 * The facts of the profile whose id is the SQL expression `id`, over FACTS_JOINS (SQLite; see
 * ProfileReadRepo.factsOfLists): one JSON text (FactLists) and, after it, the two values that may be REAL as
 * columns of their own (the conversions' revenue in the site's currency, the last score), so that no REAL goes
 * through SQLite's JSON rendering (15 significant digits). Every other value is in the text: better-sqlite3 sets
 * each column of a row on its array through V8's API (about 1,200 instructions a column), more than SQLite takes
 * to write an integer or a short text into the JSON and V8 to parse it, so the look-up's columns but the id and
 * the traits travel there too (`scalars`: FIND_SCALARS, or none for a profile already read). The lists come
 * unordered (json_group_array gives `[]`, never NULL, for no rows; sorted by factsOfLists) with the sort keys the
 * portable statements order by; the event counts come one per type, all of them (topEvents keeps the first 50 by
 * count, then type: an ORDER BY ... LIMIT 50 here cost a sorter and a temporary b-tree per snapshot, ~16% of this
 * statement's instructions, for a cut that matters only to a profile with more than 50 event types), or, for a
 * profile with at most RAW_EVENTS events, the events themselves (grouped by eventGroups: cheaper than GROUP BY's
 * sorter; `coalesce` runs the grouping only when the first subquery gave NULL, i.e. over RAW_EVENTS). The
 * sessions' count, first and last seen are the sixth element (a correlated subquery: SQLite has no LATERAL, so it
 * cannot be a subquery in FROM once the id comes from the row of a look-up). The site and its conversions are
 * joined (LEFT JOIN: one row whether or not the site or conversions exist) and aggregated by the statement
 * itself: conversionTotals's figures over the site's currency. The last score is its row, joined by rowid to the
 * one id a subquery finds in the ordered index (scores_profile holds the rowid): one descent of the index and one
 * of the table, where a scalar subquery per column took two of each.
 */
const FACTS_COLUMNS = (id: string, scalars: string, created = ''): string =>
  "'[' || " +
  `(SELECT json_group_array(json_array(kind, value, ${sortTime(created)})) FROM identities WHERE profile_id = ${id}) || ',' || ` +
  `(SELECT json_group_array(json_array(kind, hash, ${sortTime(created)})) FROM identity_hashes WHERE profile_id = ${id}) || ',' || ` +
  `(SELECT json_group_array(json_array(s.id, s.name, s.priority, m.since)) FROM segment_members m JOIN segments s ON s.id = m.segment_id WHERE m.profile_id = ${id}) || ',' || ` +
  `coalesce((SELECT CASE WHEN count(*) <= ${RAW_EVENTS} THEN json_group_array(json_array(type, ts)) END FROM (SELECT type, ts FROM events WHERE profile_id = ${id} LIMIT ${RAW_EVENTS + 1})), ` +
  `(SELECT json_group_array(json_array(type, n, last)) FROM (SELECT type, count(*) AS n, max(ts) AS last FROM events WHERE profile_id = ${id} GROUP BY type))) || ',' || ` +
  `(SELECT json_group_array(id) FROM profiles WHERE merged_into = ${id}) || ',' || ` +
  `(SELECT json_array(count(*), min(first_seen), max(last_seen)) FROM sessions WHERE profile_id = ${id}) || ',' || ` +
  // FACTS_SCALARS
  `json_array(${scalars}(SELECT count(*) FROM leads WHERE profile_id = ${id}), s.currency, count(c.id), max(c.created_at), ` +
  "count(CASE WHEN c.currency <> s.currency THEN 1 END), sc.received_at) || ']' AS lists, " +
  'coalesce(sum(CASE WHEN c.currency = s.currency THEN c.revenue END), 0) AS conv_revenue, sc.score';
/**
 * The identities' and hashes' created_at as FACTS_COLUMNS writes it: only their order is read (sortedBy), so where
 * the profile's own created_at is at hand (`created`, FIND_FACTS) it is written less that, the same order for
 * every value: usually 0 or a few digits, which SQLite writes and V8 parses as a small integer, where a
 * 13-digit time takes V8's Strtod (~400 instructions each).
 */
const sortTime = (created: string): string => (created === '' ? 'created_at' : `created_at - ${created}`);

/** The joins FACTS_COLUMNS reads: the site `site`, the conversions and the last score of the profile `id`. */
const FACTS_JOINS = (id: string, site: string): string =>
  `LEFT JOIN sites s ON s.id = ${site} LEFT JOIN conversions c ON c.site_id = s.id AND c.profile_id = ${id} ` +
  `LEFT JOIN scores sc ON sc.id = (SELECT id FROM scores WHERE profile_id = ${id} ORDER BY received_at DESC, id DESC LIMIT 1)`;

/** The facts of one profile in one row: `@id` its id, `@site` its site (two bound values, not one per use). */
const SQLITE_FACTS = `SELECT ${FACTS_COLUMNS('@id', '')} FROM (SELECT 1) AS one ${FACTS_JOINS('@id', '@site')}`;

/**
 * A look-up and the facts of the profile it finds, in one row (ProfileReadRepo.findWithFacts): the profile's id
 * and traits, then FACTS_COLUMNS of p with FIND_SCALARS. Bound by position: the id, then the site (by id); the
 * site, identities' or identity_hashes' kind, then the value (by an identity or a hash). The aggregate answers
 * one row even when nothing matches: its columns are then NULL. The profile's site is the one bound (p.site_id
 * equals it), so it is not read.
 */
const FIND_FACTS_BY_ID = `SELECT p.id, p.traits, ${FACTS_COLUMNS('p.id', `${FIND_SCALARS}, `, 'p.created_at')} FROM profiles p ${FACTS_JOINS('p.id', 'p.site_id')} WHERE p.id = ? AND p.site_id = ?`;
const FIND_FACTS_BY_IDENTITY =
  `SELECT p.id, p.traits, ${FACTS_COLUMNS('p.id', `${FIND_SCALARS}, `, 'p.created_at')} FROM identities i JOIN profiles p ON p.id = i.profile_id AND p.site_id = i.site_id ` +
  `${FACTS_JOINS('p.id', 'p.site_id')} WHERE i.site_id = ? AND i.kind = ? AND i.value = ?`;
const FIND_FACTS_BY_HASH =
  `SELECT p.id, p.traits, ${FACTS_COLUMNS('p.id', `${FIND_SCALARS}, `, 'p.created_at')} FROM identity_hashes h JOIN profiles p ON p.id = h.profile_id AND p.site_id = h.site_id ` +
  `${FACTS_JOINS('p.id', 'p.site_id')} WHERE h.site_id = ? AND h.kind = ? AND h.hash = ?`;
const FIND_FACTS: Record<LookupKind, string> = {
  profile_id: FIND_FACTS_BY_ID,
  visitor_id: FIND_FACTS_BY_IDENTITY,
  email: FIND_FACTS_BY_IDENTITY,
  external_id: FIND_FACTS_BY_IDENTITY,
  email_sha256: FIND_FACTS_BY_HASH,
  phone_sha256: FIND_FACTS_BY_HASH,
};
/** The PROFILE_BY_* statement of a look-up by an identity or a hash (find; a profile id reads PROFILE_BY_ID). */
const PROFILE_BY: Record<LookupKind, string> = {
  profile_id: PROFILE_BY_ID,
  visitor_id: PROFILE_BY_IDENTITY,
  email: PROFILE_BY_IDENTITY,
  external_id: PROFILE_BY_IDENTITY,
  email_sha256: PROFILE_BY_HASH,
  phone_sha256: PROFILE_BY_HASH,
};
/** The kind stored in identities or identity_hashes for a look-up (null for a profile id). */
const LOOKUP_IDENTITY_KIND: Record<LookupKind, string | null> = {
  profile_id: null,
  visitor_id: 'visitor',
  email: 'email',
  external_id: 'external_id',
  email_sha256: 'email_sha256',
  phone_sha256: 'phone_sha256',
};

/**
 * A profile's conversions: count and last time over all of them; revenue summed
 * in the site's currency only, and per other currency apart (a site whose
 * currency changed has conversions in both; amounts in two currencies are
 * never added).
 */
async function conversionTotals(x: Sql, siteId: string, profileId: string): Promise<ProfileFacts['conversions']> {
  // From the site, so that a profile without conversions still gets the site's currency (one row, c.currency NULL).
  const rows = await x.all<{ currency: string | null; site_currency: string; count: number; revenue: number; last: number | null }>(
    'SELECT c.currency, s.currency AS site_currency, count(c.id) AS count, coalesce(sum(c.revenue), 0) AS revenue, max(c.created_at) AS last ' +
      'FROM sites s LEFT JOIN conversions c ON c.site_id = s.id AND c.profile_id = ? WHERE s.id = ? GROUP BY c.currency, s.currency ORDER BY c.currency',
    [profileId, siteId],
  );
  const out: ProfileFacts['conversions'] = { count: 0, revenue: 0, last: null, currency: rows[0]?.site_currency ?? '', otherCurrencies: [] };
  for (const r of rows) {
    if (r.currency === null) continue;
    out.count += Number(r.count);
    if (r.last !== null && (out.last === null || Number(r.last) > out.last)) out.last = Number(r.last);
    if (r.currency === r.site_currency) out.revenue = Number(r.revenue);
    else out.otherCurrencies.push({ currency: r.currency, revenue: Number(r.revenue) });
  }
  return out;
}

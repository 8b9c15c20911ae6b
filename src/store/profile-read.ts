import type { Sql } from './sql.js';

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

const PROFILE_BY_ID = 'SELECT * FROM profiles WHERE id = ? AND site_id = ?';
const BY_IDENTITY = 'SELECT profile_id FROM identities WHERE site_id = ? AND kind = ? AND value = ?';
const BY_HASH = 'SELECT profile_id FROM identity_hashes WHERE site_id = ? AND kind = ? AND hash = ?';

/** `count` as a number (PostgreSQL may return count(*) as a string). */
function withCount<T extends { count: number }>(row: T): T {
  return { ...row, count: Number(row.count) };
}

/** Read-side queries behind profile snapshots. Every query is scoped by site. */
export class ProfileReadRepo {
  constructor(private readonly x: Sql) {}

  private async identityOwner(siteId: string, kind: string, value: string): Promise<string | undefined> {
    return (await this.x.get<{ profile_id: string }>(BY_IDENTITY, [siteId, kind, value]))?.profile_id;
  }

  /** The surviving profile for a look-up, following merges; undefined when nothing matches in this site. */
  async find(siteId: string, kind: LookupKind, value: string): Promise<ProfileRow | undefined> {
    let id: string | undefined;
    switch (kind) {
      case 'profile_id':
        id = value;
        break;
      case 'visitor_id':
        id = await this.identityOwner(siteId, 'visitor', value);
        break;
      case 'email':
        id = await this.identityOwner(siteId, 'email', value);
        break;
      case 'external_id':
        id = await this.identityOwner(siteId, 'external_id', value);
        break;
      case 'email_sha256':
      case 'phone_sha256':
        id = (await this.x.get<{ profile_id: string }>(BY_HASH, [siteId, kind, value]))?.profile_id;
        break;
    }
    for (let hops = 0; id !== undefined && hops < 16; hops++) {
      const row = await this.x.get<ProfileRow>(PROFILE_BY_ID, [id, siteId]);
      if (!row) return undefined;
      if (row.merged_into === null) return row;
      id = row.merged_into;
    }
    return undefined;
  }

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
   * The same facts on SQLite in three statements instead of ten: the lists
   * and counts whose values are text and integers come back as JSON arrays
   * of one row (the same queries, orders and limits as above); the
   * conversions and the last score, whose values may be REAL, keep their own
   * statements so that no number goes through a JSON rendering.
   */
  private async sqliteFacts(profile: ProfileRow): Promise<ProfileFacts> {
    const x = this.x;
    const row = (await x.get<SqliteFactsRow>(SQLITE_FACTS, new Array<string>(SQLITE_FACTS_PARAMS).fill(profile.id)))!;
    const identities = (JSON.parse(row.identities) as [string, string][]).map(([kind, value]) => ({ kind, value }));
    const hashes = (JSON.parse(row.hashes) as [string, string][]).map(([kind, hash]) => ({ kind, hash }));
    const segments = (JSON.parse(row.segments) as [string, string, number, number][]).map(([id, name, priority, since]) => ({ id, name, priority, since }));
    const events = (JSON.parse(row.events) as [string, number, number][]).map(([type, n, last]) => ({ type, n, last }));
    return {
      profile,
      identities,
      hashes,
      segments,
      sessions: { count: row.session_count, first_seen: row.first_seen, last_seen: row.last_seen },
      events,
      conversions: await conversionTotals(x, profile.site_id, profile.id),
      leads: row.leads,
      lastScore:
        (await x.get<{ score: number | null; at: number }>(
          'SELECT score, received_at AS at FROM scores WHERE profile_id = ? ORDER BY received_at DESC, id DESC LIMIT 1',
          [profile.id],
        )) ?? null,
      mergedFrom: JSON.parse(row.merged) as string[],
    };
  }
}

interface SqliteFactsRow {
  identities: string;
  hashes: string;
  segments: string;
  session_count: number;
  first_seen: number | null;
  last_seen: number | null;
  events: string;
  leads: number;
  merged: string;
}

/** The text-and-integer facts of one profile in one row (SQLite; every `?` is the profile id; see ProfileReadRepo.sqliteFacts). */
const SQLITE_FACTS =
  'SELECT ' +
  "(SELECT json_group_array(json_array(kind, value) ORDER BY kind, created_at) FROM identities WHERE profile_id = ?) AS identities, " +
  "(SELECT json_group_array(json_array(kind, hash) ORDER BY kind, created_at DESC) FROM identity_hashes WHERE profile_id = ?) AS hashes, " +
  '(SELECT json_group_array(json_array(s.id, s.name, s.priority, m.since) ORDER BY s.priority DESC, s.id) FROM segment_members m JOIN segments s ON s.id = m.segment_id WHERE m.profile_id = ?) AS segments, ' +
  'ss.session_count, ss.first_seen, ss.last_seen, ' +
  "(SELECT json_group_array(json_array(type, n, last) ORDER BY n DESC, type) FROM (SELECT type, count(*) AS n, max(ts) AS last FROM events WHERE profile_id = ? GROUP BY type ORDER BY n DESC, type LIMIT 50)) AS events, " +
  '(SELECT count(*) FROM leads WHERE profile_id = ?) AS leads, ' +
  '(SELECT json_group_array(id ORDER BY id) FROM profiles WHERE merged_into = ?) AS merged ' +
  'FROM (SELECT count(*) AS session_count, min(first_seen) AS first_seen, max(last_seen) AS last_seen FROM sessions WHERE profile_id = ?) AS ss';
const SQLITE_FACTS_PARAMS = SQLITE_FACTS.split('?').length - 1;

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

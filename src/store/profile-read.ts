import type { Db } from './db.js';

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
  conversions: { count: number; revenue: number; last: number | null };
  leads: number;
  lastScore: { score: number | null; at: number } | null;
  mergedFrom: string[];
}

/** Read-side queries behind profile snapshots. Every query is scoped by site. */
export class ProfileReadRepo {
  private readonly q;

  constructor(db: Db) {
    this.q = {
      byId: db.prepare<[string, string], ProfileRow>('SELECT * FROM profiles WHERE id = ? AND site_id = ?'),
      byIdentity: db.prepare<[string, string, string], { profile_id: string }>(
        'SELECT profile_id FROM identities WHERE site_id = ? AND kind = ? AND value = ?',
      ),
      byHash: db.prepare<[string, string, string], { profile_id: string }>(
        'SELECT profile_id FROM identity_hashes WHERE site_id = ? AND kind = ? AND hash = ?',
      ),
      identities: db.prepare<[string], { kind: string; value: string }>(
        'SELECT kind, value FROM identities WHERE profile_id = ? ORDER BY kind, created_at',
      ),
      hashes: db.prepare<[string], { kind: string; hash: string }>(
        'SELECT kind, hash FROM identity_hashes WHERE profile_id = ? ORDER BY kind, created_at DESC',
      ),
      segments: db.prepare<[string], { id: string; name: string; priority: number; since: number }>(
        'SELECT s.id, s.name, s.priority, m.since FROM segment_members m JOIN segments s ON s.id = m.segment_id WHERE m.profile_id = ? ORDER BY s.priority DESC, s.id',
      ),
      sessions: db.prepare<[string], { count: number; first_seen: number | null; last_seen: number | null }>(
        'SELECT count(*) AS count, min(first_seen) AS first_seen, max(last_seen) AS last_seen FROM sessions WHERE profile_id = ?',
      ),
      events: db.prepare<[string], { type: string; n: number; last: number }>(
        'SELECT type, count(*) AS n, max(ts) AS last FROM events WHERE profile_id = ? GROUP BY type ORDER BY n DESC, type LIMIT 50',
      ),
      conversions: db.prepare<[string], { count: number; revenue: number; last: number | null }>(
        'SELECT count(*) AS count, coalesce(sum(revenue), 0) AS revenue, max(created_at) AS last FROM conversions WHERE profile_id = ?',
      ),
      leads: db.prepare<[string], { n: number }>('SELECT count(*) AS n FROM leads WHERE profile_id = ?'),
      lastScore: db.prepare<[string], { score: number | null; at: number }>(
        'SELECT score, received_at AS at FROM scores WHERE profile_id = ? ORDER BY received_at DESC, id DESC LIMIT 1',
      ),
      mergedFrom: db.prepare<[string], { id: string }>('SELECT id FROM profiles WHERE merged_into = ? ORDER BY id'),
    };
  }

  /** The surviving profile for a look-up, following merges; undefined when nothing matches in this site. */
  find(siteId: string, kind: LookupKind, value: string): ProfileRow | undefined {
    let id: string | undefined;
    switch (kind) {
      case 'profile_id':
        id = value;
        break;
      case 'visitor_id':
        id = this.q.byIdentity.get(siteId, 'visitor', value)?.profile_id;
        break;
      case 'email':
        id = this.q.byIdentity.get(siteId, 'email', value)?.profile_id;
        break;
      case 'external_id':
        id = this.q.byIdentity.get(siteId, 'external_id', value)?.profile_id;
        break;
      case 'email_sha256':
      case 'phone_sha256':
        id = this.q.byHash.get(siteId, kind, value)?.profile_id;
        break;
    }
    for (let hops = 0; id !== undefined && hops < 16; hops++) {
      const row = this.q.byId.get(id, siteId);
      if (!row) return undefined;
      if (row.merged_into === null) return row;
      id = row.merged_into;
    }
    return undefined;
  }

  facts(profile: ProfileRow): ProfileFacts {
    const id = profile.id;
    return {
      profile,
      identities: this.q.identities.all(id),
      hashes: this.q.hashes.all(id),
      segments: this.q.segments.all(id),
      sessions: this.q.sessions.get(id)!,
      events: this.q.events.all(id),
      conversions: this.q.conversions.get(id)!,
      leads: this.q.leads.get(id)!.n,
      lastScore: this.q.lastScore.get(id) ?? null,
      mergedFrom: this.q.mergedFrom.all(id).map((r) => r.id),
    };
  }
}

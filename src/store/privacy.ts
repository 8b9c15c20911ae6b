import type { Db } from './db.js';

export interface ErasureCounts {
  profiles: number;
  identities: number;
  identity_hashes: number;
  sessions: number;
  events: number;
  scores: number;
  conversions: number;
  leads: number;
  segment_members: number;
  outbox: number;
  deliveries: number;
}

/**
 * GDPR erasure: deletes every row of a person in a site. Runs inside a write
 * transaction. Outbox rows and webhook deliveries whose payload names one of
 * the person's ids or identifiers are deleted too, so nothing is sent later.
 */
export class PrivacyRepo {
  constructor(private readonly db: Db) {}

  erase(siteId: string, profileId: string): ErasureCounts {
    const db = this.db;
    const ids = db
      // Two index searches (primary key, profiles_merged), not a scan of the site's profiles.
      .prepare<[string, string, string, string], { id: string }>(
        'SELECT id FROM profiles WHERE id = ? AND site_id = ? UNION SELECT id FROM profiles WHERE merged_into = ? AND +site_id = ?',
      )
      .all(profileId, siteId, profileId, siteId)
      .map((r) => r.id);
    const marks = ids.map(() => '?').join(',');
    const needles = new Set<string>(ids);
    for (const r of db
      .prepare(`SELECT value FROM identities WHERE site_id = ? AND profile_id IN (${marks})`)
      .all(siteId, ...ids) as { value: string }[]) {
      needles.add(r.value);
    }
    for (const r of db.prepare(`SELECT id FROM sessions WHERE site_id = ? AND profile_id IN (${marks})`).all(siteId, ...ids) as { id: string }[]) {
      needles.add(r.id);
    }
    const del = (table: string, column = 'profile_id') =>
      db.prepare(`DELETE FROM ${table} WHERE site_id = ? AND ${column} IN (${marks})`).run(siteId, ...ids).changes;
    const scrub = (table: string) => {
      let n = 0;
      const st = db.prepare(`DELETE FROM ${table} WHERE site_id = ? AND instr(payload, ?) > 0`);
      for (const v of needles) if (v.length >= 4) n += st.run(siteId, JSON.stringify(v)).changes;
      return n;
    };
    const counts: ErasureCounts = {
      identities: del('identities'),
      identity_hashes: del('identity_hashes'),
      sessions: del('sessions'),
      events: del('events'),
      scores: del('scores'),
      conversions: del('conversions'),
      leads: del('leads'),
      segment_members: del('segment_members'),
      outbox: scrub('outbox'),
      deliveries: scrub('deliveries'),
      profiles: del('profiles', 'id'),
    };
    return counts;
  }
}

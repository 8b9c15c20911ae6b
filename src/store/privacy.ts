import type { Sql } from './sql.js';
import { LeadsRepo } from './leads.js';
import type { WriterCaches } from './writer-caches.js';

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

/** The tables an erasure deletes from (PostgreSQL vacuums them afterwards). */
export const ERASED_TABLES = [
  'profile_companies',
  'lead_notes',
  'lead_tasks',
  'lead_calls',
  'trigger_fires',
  'identities',
  'identity_hashes',
  'sessions',
  'events',
  'scores',
  'conversions',
  'leads',
  'segment_members',
  'outbox',
  'deliveries',
  'profiles',
] as const;

/**
 * GDPR erasure: deletes every row of a person in a site. Runs inside a write
 * operation. Outbox rows and webhook deliveries whose payload names one of
 * the person's ids or identifiers are deleted too, so nothing is sent later.
 */
export class PrivacyRepo {
  constructor(
    private readonly x: Sql,
    private readonly erasures: { pending: boolean },
    /** Dropped by an erasure: it deletes sessions the writer may have cached. */
    private readonly caches?: WriterCaches,
  ) {}

  async erase(siteId: string, profileId: string): Promise<ErasureCounts> {
    const x = this.x;
    const ids = (
      await x.all<{ id: string }>(
        // Two index searches (primary key, profiles_merged), not a scan of the site's profiles.
        // `+site_id` keeps SQLite off the site index (PostgreSQL plans this well as written).
        `SELECT id FROM profiles WHERE id = ? AND site_id = ? UNION SELECT id FROM profiles WHERE merged_into = ? AND ${x.dialect === 'pg' ? '' : '+'}site_id = ?`,
        [profileId, siteId, profileId, siteId],
      )
    ).map((r) => r.id);
    if (ids.length === 0) {
      // Nothing of the person in this site (and `IN ()` below is not portable SQL).
      return {
        identities: 0,
        identity_hashes: 0,
        sessions: 0,
        events: 0,
        scores: 0,
        conversions: 0,
        leads: 0,
        segment_members: 0,
        outbox: 0,
        deliveries: 0,
        profiles: 0,
      };
    }
    this.erasures.pending = true;
    this.caches?.clear();
    const marks = ids.map(() => '?').join(',');
    const needles = new Set<string>(ids);
    for (const r of await x.all<{ value: string }>(`SELECT value FROM identities WHERE site_id = ? AND profile_id IN (${marks})`, [siteId, ...ids])) {
      needles.add(r.value);
    }
    for (const r of await x.all<{ id: string }>(`SELECT id FROM sessions WHERE site_id = ? AND profile_id IN (${marks})`, [siteId, ...ids])) {
      needles.add(r.id);
    }
    const del = async (table: string, column = 'profile_id') =>
      (await x.run(`DELETE FROM ${table} WHERE site_id = ? AND ${column} IN (${marks})`, [siteId, ...ids])).changes;
    const scrub = async (table: string) => {
      let n = 0;
      const sql = `DELETE FROM ${table} WHERE site_id = ? AND ${x.dialect === 'pg' ? 'strpos' : 'instr'}(payload, ?) > 0`;
      for (const v of needles) if (v.length >= 4) n += (await x.run(sql, [siteId, JSON.stringify(v)])).changes;
      return n;
    };
    // Lead notes, tasks, calls (transcripts) and trigger fires of the person go first (they hang off the leads).
    await new LeadsRepo(x).eraseProfiles(siteId, ids);
    const counts: ErasureCounts = {
      identities: await del('identities'),
      identity_hashes: await del('identity_hashes'),
      sessions: await del('sessions'),
      events: await del('events'),
      scores: await del('scores'),
      conversions: await del('conversions'),
      leads: await del('leads'),
      segment_members: await del('segment_members'),
      outbox: await scrub('outbox'),
      deliveries: await scrub('deliveries'),
      profiles: await del('profiles', 'id'),
    };
    return counts;
  }
}

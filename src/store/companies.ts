import type { Sql } from './sql.js';

export interface CompanyRecordRow {
  site_id: string;
  domain: string;
  name: string | null;
  website: string | null;
  created_by: string;
  created_at: number;
  updated_at: number;
}

export interface IpRangeRow {
  cidr: string;
  domain: string;
  name: string | null;
  loaded_at: number;
}

/** A session row as the signal aggregation reads it: who (profile, for the email domain) and from where (ip). */
export interface SessionRef {
  session_id: string;
  profile_id: string;
  ip: string | null;
}

export interface PageviewRow extends SessionRef {
  url: unknown;
}

export interface ScoreRow extends SessionRef {
  score: number;
  at: number;
}

export interface ConversionRefRow extends SessionRef {
  revenue: number | null;
  currency: string;
}

const RANGE_BATCH = 200;

/** The url property of an event body (JSON text), per dialect; the ingestion stores only valid JSON. */
const URL_OF = {
  sqlite: "json_extract(e.body, '$.url')",
  pg: "(e.body::jsonb ->> 'url')",
};

/**
 * Company accounts: explicit records, operator IP ranges, and the read side
 * of company-level signals (window scans joined to the session that carries
 * the profile and IP). Every query is scoped by site.
 */
export class CompaniesRepo {
  constructor(private readonly x: Sql) {}

  /** Creates or updates the explicit record of a company. Writes: call inside a write operation. */
  async upsert(r: { siteId: string; domain: string; name: string | null; website: string | null; by: string; now: number }): Promise<CompanyRecordRow> {
    await this.x.run(
      `INSERT INTO company_accounts (site_id, domain, name, website, created_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (site_id, domain) DO UPDATE SET name = coalesce(excluded.name, company_accounts.name),
         website = coalesce(excluded.website, company_accounts.website), updated_at = excluded.updated_at`,
      [r.siteId, r.domain, r.name, r.website, r.by, r.now, r.now],
    );
    return (await this.record(r.siteId, r.domain))!;
  }

  record(siteId: string, domain: string): Promise<CompanyRecordRow | undefined> {
    return this.x.get<CompanyRecordRow>('SELECT * FROM company_accounts WHERE site_id = ? AND domain = ?', [siteId, domain]);
  }

  records(siteId: string): Promise<CompanyRecordRow[]> {
    return this.x.all<CompanyRecordRow>('SELECT * FROM company_accounts WHERE site_id = ? ORDER BY domain', [siteId]);
  }

  /** Replaces the site's IP ranges with `ranges`; returns how many were there before. Writes: call inside a write operation. */
  async replaceRanges(siteId: string, ranges: readonly { cidr: string; domain: string; name: string | null }[], now: number): Promise<number> {
    const removed = (await this.x.run('DELETE FROM company_ip_ranges WHERE site_id = ?', [siteId])).changes;
    for (let i = 0; i < ranges.length; i += RANGE_BATCH) {
      const batch = ranges.slice(i, i + RANGE_BATCH);
      const params: unknown[] = [];
      for (const r of batch) params.push(siteId, r.cidr, r.domain, r.name, now);
      await this.x.run(
        `INSERT INTO company_ip_ranges (site_id, cidr, domain, name, loaded_at) VALUES ${batch.map(() => '(?, ?, ?, ?, ?)').join(', ')}`,
        params,
      );
    }
    return removed;
  }

  ranges(siteId: string): Promise<IpRangeRow[]> {
    return this.x.all<IpRangeRow>('SELECT cidr, domain, name, loaded_at FROM company_ip_ranges WHERE site_id = ? ORDER BY cidr', [siteId]);
  }

  /** Normalized email addresses of the site's profiles with the profile that owns each (look-up only; never shown). */
  emails(siteId: string): Promise<{ value: string; profile_id: string }[]> {
    return this.x.all("SELECT value, profile_id FROM identities WHERE site_id = ? AND kind = 'email'", [siteId]);
  }

  /** Sessions started in [since, until). */
  sessions(siteId: string, since: number, until: number): Promise<SessionRef[]> {
    return this.x.all<SessionRef>('SELECT id AS session_id, profile_id, ip FROM sessions WHERE site_id = ? AND first_seen >= ? AND first_seen < ?', [
      siteId,
      since,
      until,
    ]);
  }

  /** Page views (events of type pageview) in [since, until), with the url property of each. */
  pageviews(siteId: string, since: number, until: number): Promise<PageviewRow[]> {
    return this.x.all<PageviewRow>(
      `SELECT e.session_id, s.profile_id, s.ip, ${URL_OF[this.x.dialect]} AS url FROM events e
       JOIN sessions s ON s.site_id = e.site_id AND s.id = e.session_id
       WHERE e.site_id = ? AND e.type = 'pageview' AND e.ts >= ? AND e.ts < ?`,
      [siteId, since, until],
    );
  }

  /** Numeric scores received in [since, until). */
  scores(siteId: string, since: number, until: number): Promise<ScoreRow[]> {
    return this.x.all<ScoreRow>(
      `SELECT sc.session_id, s.profile_id, s.ip, sc.score, sc.received_at AS at FROM scores sc
       JOIN sessions s ON s.site_id = sc.site_id AND s.id = sc.session_id
       WHERE sc.site_id = ? AND sc.received_at >= ? AND sc.received_at < ? AND sc.score IS NOT NULL`,
      [siteId, since, until],
    );
  }

  /** Conversions recorded in [since, until). */
  conversions(siteId: string, since: number, until: number): Promise<ConversionRefRow[]> {
    return this.x.all<ConversionRefRow>(
      `SELECT c.session_id, coalesce(s.profile_id, c.profile_id) AS profile_id, s.ip, c.revenue, c.currency FROM conversions c
       LEFT JOIN sessions s ON s.site_id = c.site_id AND s.id = c.session_id
       WHERE c.site_id = ? AND c.created_at >= ? AND c.created_at < ?`,
      [siteId, since, until],
    );
  }

  /**
   * The same four row sets for the sessions of some profiles only (the known
   * contacts of one company), through the per-profile indexes: proportional to
   * their activity, not to the site's. `ids` at most PROFILE_CHUNK.
   */
  async ofProfiles(siteId: string, ids: readonly string[], since: number, until: number) {
    const marks = ids.map(() => '?').join(', ');
    const p = [...ids, siteId, since, until];
    // `+column` keeps SQLite on the per-profile index (it would pick the site's time index and scan the
    // whole window once per chunk); PostgreSQL plans these by its statistics.
    const u = this.x.dialect === 'sqlite' ? '+' : '';
    return {
      sessions: await this.x.all<SessionRef>(
        `SELECT id AS session_id, profile_id, ip FROM sessions WHERE profile_id IN (${marks}) AND ${u}site_id = ? AND ${u}first_seen >= ? AND ${u}first_seen < ?`,
        p,
      ),
      pageviews: await this.x.all<PageviewRow>(
        `SELECT e.session_id, e.profile_id, NULL AS ip, ${URL_OF[this.x.dialect]} AS url FROM events e
         WHERE e.profile_id IN (${marks}) AND ${u}e.site_id = ? AND e.ts >= ? AND e.ts < ? AND ${u}e.type = 'pageview'`,
        p,
      ),
      scores: await this.x.all<ScoreRow>(
        `SELECT session_id, profile_id, NULL AS ip, score, received_at AS at FROM scores
         WHERE profile_id IN (${marks}) AND ${u}site_id = ? AND received_at >= ? AND received_at < ? AND score IS NOT NULL`,
        p,
      ),
      conversions: await this.x.all<ConversionRefRow>(
        `SELECT session_id, profile_id, NULL AS ip, revenue, currency FROM conversions
         WHERE profile_id IN (${marks}) AND ${u}site_id = ? AND ${u}created_at >= ? AND ${u}created_at < ?`,
        p,
      ),
    };
  }
}

/** Most profile ids one ofProfiles call takes (bound parameters stay well under every limit). */
export const PROFILE_CHUNK = 500;

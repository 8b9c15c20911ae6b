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

/** A profile_companies row: the company facts of one live profile (see the migration that creates it). */
export interface ProfileCompanyRow {
  profile_id: string;
  email_domain: string | null;
  ip_domain: string | null;
}

/** A session's address, for deriving ip_domain (the most recent session in a range wins). */
export interface SessionAddress {
  id: string;
  profile_id: string;
  ip: string;
  first_seen: number;
}

const RANGE_BATCH = 200;
const COMPANY_BATCH = 200;

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

  // ---- profile_companies: the company of each profile, for the company rule node ----

  /** The company facts of a profile, or undefined when none is known. */
  companyOf(profileId: string): Promise<ProfileCompanyRow | undefined> {
    return this.x.get<ProfileCompanyRow>('SELECT profile_id, email_domain, ip_domain FROM profile_companies WHERE profile_id = ?', [profileId]);
  }

  /** Sets the company facts of a profile; both null deletes its row. Writes: call inside a write operation. */
  async setCompany(siteId: string, profileId: string, emailDomain: string | null, ipDomain: string | null, now: number): Promise<void> {
    if (emailDomain === null && ipDomain === null) {
      await this.x.run('DELETE FROM profile_companies WHERE profile_id = ?', [profileId]);
      return;
    }
    await this.x.run(
      `INSERT INTO profile_companies (profile_id, site_id, email_domain, ip_domain, updated_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (profile_id) DO UPDATE SET email_domain = excluded.email_domain, ip_domain = excluded.ip_domain, updated_at = excluded.updated_at`,
      [profileId, siteId, emailDomain, ipDomain, now],
    );
  }

  /** Sets the company facts of many profiles at once (rows with both null are deleted). Writes: call inside a write operation. */
  async setCompanies(siteId: string, rows: readonly ProfileCompanyRow[], now: number): Promise<void> {
    const gone = rows.filter((r) => r.email_domain === null && r.ip_domain === null).map((r) => r.profile_id);
    for (let i = 0; i < gone.length; i += COMPANY_BATCH) {
      const part = gone.slice(i, i + COMPANY_BATCH);
      await this.x.run(`DELETE FROM profile_companies WHERE profile_id IN (${part.map(() => '?').join(', ')})`, part);
    }
    const kept = rows.filter((r) => r.email_domain !== null || r.ip_domain !== null);
    for (let i = 0; i < kept.length; i += COMPANY_BATCH) {
      const part = kept.slice(i, i + COMPANY_BATCH);
      const params: unknown[] = [];
      for (const r of part) params.push(r.profile_id, siteId, r.email_domain, r.ip_domain, now);
      await this.x.run(
        `INSERT INTO profile_companies (profile_id, site_id, email_domain, ip_domain, updated_at) VALUES ${part.map(() => '(?, ?, ?, ?, ?)').join(', ')}
         ON CONFLICT (profile_id) DO UPDATE SET email_domain = excluded.email_domain, ip_domain = excluded.ip_domain, updated_at = excluded.updated_at`,
        params,
      );
    }
  }

  /** Every company row of a site (the rebuild compares against them). */
  companyRows(siteId: string): Promise<ProfileCompanyRow[]> {
    return this.x.all<ProfileCompanyRow>('SELECT profile_id, email_domain, ip_domain FROM profile_companies WHERE site_id = ?', [siteId]);
  }

  /**
   * Deletes the company rows of `profileId` itself (when `self`) and of the
   * profiles merged into it, returning what they held. Writes: call inside a
   * write operation.
   */
  async dropCompanies(siteId: string, profileId: string, self: boolean): Promise<ProfileCompanyRow[]> {
    const rows = await this.x.all<ProfileCompanyRow>(
      `SELECT pc.profile_id, pc.email_domain, pc.ip_domain FROM profile_companies pc JOIN profiles q ON q.id = pc.profile_id
       WHERE q.merged_into = ? AND pc.site_id = ?${self ? ' UNION SELECT profile_id, email_domain, ip_domain FROM profile_companies WHERE profile_id = ? AND site_id = ?' : ''}`,
      self ? [profileId, siteId, profileId, siteId] : [profileId, siteId],
    );
    for (const r of rows) await this.x.run('DELETE FROM profile_companies WHERE profile_id = ?', [r.profile_id]);
    return rows;
  }

  /** How many profiles of the site have `domain` as their email's company domain (known persons of the company). */
  async knownPersons(siteId: string, domain: string): Promise<number> {
    return Number((await this.x.get<{ n: number }>('SELECT count(*) AS n FROM profile_companies WHERE site_id = ? AND email_domain = ?', [siteId, domain]))!.n);
  }

  /** Profiles whose company is `domain` (by email, or by IP range when their email has none). */
  async profilesOfCompany(siteId: string, domain: string): Promise<string[]> {
    const rows = await this.x.all<{ profile_id: string }>(
      `SELECT profile_id FROM profile_companies WHERE site_id = ? AND email_domain = ?
       UNION SELECT profile_id FROM profile_companies WHERE site_id = ? AND ip_domain = ? AND email_domain IS NULL`,
      [siteId, domain, siteId, domain],
    );
    return rows.map((r) => r.profile_id).sort();
  }

  /** Normalized email addresses of one profile (look-up only; never shown). */
  async emailsOf(profileId: string): Promise<string[]> {
    return (await this.x.all<{ value: string }>("SELECT value FROM identities WHERE profile_id = ? AND kind = 'email'", [profileId])).map((r) => r.value);
  }

  /** The address of a profile's most recent session, or null (no session, or none recorded). */
  async latestSessionIp(siteId: string, profileId: string): Promise<string | null> {
    const row = await this.x.get<{ ip: string | null }>('SELECT ip FROM sessions WHERE profile_id = ? AND site_id = ? ORDER BY first_seen DESC, id DESC LIMIT 1', [
      profileId,
      siteId,
    ]);
    return row?.ip ?? null;
  }

  /** Addresses of a profile's sessions, most recent first (at most 10,000). */
  async sessionIpsOf(siteId: string, profileId: string): Promise<string[]> {
    const rows = await this.x.all<{ ip: string }>(
      'SELECT ip FROM sessions WHERE profile_id = ? AND site_id = ? AND ip IS NOT NULL ORDER BY first_seen DESC, id DESC LIMIT 10000',
      [profileId, siteId],
    );
    return rows.map((r) => r.ip);
  }

  /** One keyset page of the site's sessions that have an address, in id order. */
  sessionAddresses(siteId: string, afterId: string, limit: number): Promise<SessionAddress[]> {
    return this.x.all<SessionAddress>('SELECT id, profile_id, ip, first_seen FROM sessions WHERE site_id = ? AND id > ? AND ip IS NOT NULL ORDER BY id LIMIT ?', [
      siteId,
      afterId,
      limit,
    ]);
  }

  /** When the site's company rows were last derived from all its data, or null. */
  async indexBuiltAt(siteId: string): Promise<number | null> {
    const row = await this.x.get<{ built_at: number }>('SELECT built_at FROM company_index_state WHERE site_id = ?', [siteId]);
    return row ? Number(row.built_at) : null;
  }

  /** Records that the site's company rows were derived from all its data. Writes: call inside a write operation. */
  async markIndexBuilt(siteId: string, now: number): Promise<void> {
    await this.x.run('INSERT INTO company_index_state (site_id, built_at) VALUES (?, ?) ON CONFLICT (site_id) DO UPDATE SET built_at = excluded.built_at', [siteId, now]);
  }

  /** Marks the site's company rows as not derived from all its data (after rows were written in bulk, as by svc seed). */
  async forgetIndex(siteId: string): Promise<void> {
    await this.x.run('DELETE FROM company_index_state WHERE site_id = ?', [siteId]);
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

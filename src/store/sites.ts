import type { Sql } from './sql.js';
import { newId, newPublicId } from './ids.js';

export interface SiteRow {
  id: string;
  account_id: string;
  name: string;
  domain: string | null;
  currency: string;
  /** IANA time zone of the site (quiet hours, callback dates, ISO weeks). */
  timezone: string;
  /** Share of visitors (0..1) held out of personalization: they always see zone defaults. */
  holdout_share: number;
  /** 1: the browser tag sets no cookie and sends nothing until the page calls svc.consent(true). */
  consent_required: number;
  /** 1: the browser tag treats Do-Not-Track and Global Privacy Control as consent refused. */
  honour_privacy_signals: number;
  /** JSON array of extra browser origins (scheme://host[:port]) allowed besides the domain's. */
  allowed_origins: string;
  /** JSON array of URL query parameters the tag keeps in page URLs (a trailing * is a prefix). */
  url_params: string;
  created_at: number;
}

/** The settings of SiteRow that `update` changes. */
export interface SitePatch {
  domain?: string | null | undefined;
  currency?: string | undefined;
  timezone?: string | undefined;
  holdout_share?: number | undefined;
  consent_required?: number | undefined;
  honour_privacy_signals?: number | undefined;
  allowed_origins?: string | undefined;
  url_params?: string | undefined;
}

const PATCH_KEYS = ['domain', 'currency', 'timezone', 'holdout_share', 'consent_required', 'honour_privacy_signals', 'allowed_origins', 'url_params'] as const;

export interface AccountUser {
  id: string;
  account_id: string;
  email: string;
  role: 'owner' | 'admin' | 'member';
}

/** Sites cached by id, shared by every repository set of one store. */
export type SiteCache = Map<string, { row: SiteRow; at: number }>;

const LOCAL_OWNER_EMAIL = 'owner@localhost';

/** How long a cached site is trusted: settings (currency, domain) changed by another process show within this. */
const CACHE_TTL_MS = 5_000;

const SITE_BY_ID = 'SELECT * FROM sites WHERE id = ?';

/** Sites and the account that owns them. Site look-ups are cached briefly: sites are never deleted, settings rarely change. */
export class SitesRepo {
  constructor(
    private readonly x: Sql,
    private readonly cache: SiteCache,
  ) {}

  async get(id: string): Promise<SiteRow | undefined> {
    const now = Date.now();
    const hit = this.cache.get(id);
    if (hit && now - hit.at < CACHE_TTL_MS) return hit.row;
    const row = await this.x.get<SiteRow>(SITE_BY_ID, [id]);
    if (row) {
      if (this.cache.size > 10_000) this.cache.clear();
      this.cache.set(id, { row, at: now });
    }
    return row;
  }

  /** Changes a site's settings; returns the updated site, or undefined when there is none. */
  async update(id: string, patch: SitePatch): Promise<SiteRow | undefined> {
    const sets: string[] = [];
    const params: unknown[] = [];
    for (const key of PATCH_KEYS) {
      if (patch[key] === undefined) continue;
      sets.push(`${key} = ?`);
      params.push(patch[key]);
    }
    this.cache.delete(id);
    if (sets.length > 0) await this.x.run(`UPDATE sites SET ${sets.join(', ')} WHERE id = ?`, [...params, id]);
    return this.x.get<SiteRow>(SITE_BY_ID, [id]);
  }

  list(): Promise<SiteRow[]> {
    return this.x.all<SiteRow>('SELECT * FROM sites ORDER BY created_at, id');
  }

  /**
   * The local owner the CLI acts as: the first owner of the first account,
   * created on first use together with that account. Writes: call inside a write operation.
   */
  async localOwner(): Promise<AccountUser> {
    const existing = await this.x.get<AccountUser>(
      "SELECT id, account_id, email, role FROM users WHERE role = 'owner' ORDER BY created_at, id LIMIT 1",
    );
    if (existing) return existing;
    const now = Date.now();
    const accountId = newId('acct');
    const userId = newId('usr');
    await this.x.run('INSERT INTO accounts (id, name, created_at) VALUES (?, ?, ?)', [accountId, 'local', now]);
    await this.x.run("INSERT INTO users (id, account_id, email, name, role, created_at) VALUES (?, ?, ?, ?, 'owner', ?)", [
      userId,
      accountId,
      LOCAL_OWNER_EMAIL,
      'Local owner',
      now,
    ]);
    return { id: userId, account_id: accountId, email: LOCAL_OWNER_EMAIL, role: 'owner' };
  }

  /** Creates a site owned by the local owner's account. Writes: call inside a write operation. */
  async create(input: { name: string; domain?: string | undefined; currency?: string | undefined }): Promise<SiteRow> {
    const owner = await this.localOwner();
    const row: SiteRow = {
      id: newPublicId('site'),
      account_id: owner.account_id,
      name: input.name,
      domain: input.domain ?? null,
      currency: input.currency ?? 'USD',
      timezone: 'UTC',
      holdout_share: 0,
      consent_required: 0,
      honour_privacy_signals: 0,
      allowed_origins: '[]',
      url_params: '["utm_*"]',
      created_at: Date.now(),
    };
    await this.x.run('INSERT INTO sites (id, account_id, name, domain, currency, created_at) VALUES (?, ?, ?, ?, ?, ?)', [
      row.id,
      row.account_id,
      row.name,
      row.domain,
      row.currency,
      row.created_at,
    ]);
    return row;
  }
}

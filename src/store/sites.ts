import type { Sql } from './sql.js';
import { assertCurrency } from '../domain/currency.js';
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
  created_at: number;
}

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
  async update(
    id: string,
    patch: { domain?: string | null | undefined; currency?: string | undefined; timezone?: string | undefined; holdout_share?: number | undefined },
  ): Promise<SiteRow | undefined> {
    if (patch.currency !== undefined) assertCurrency(patch.currency);
    const sets: string[] = [];
    const params: unknown[] = [];
    for (const key of ['domain', 'currency', 'timezone', 'holdout_share'] as const) {
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
    if (input.currency !== undefined) assertCurrency(input.currency);
    const owner = await this.localOwner();
    const row: SiteRow = {
      id: newPublicId('site'),
      account_id: owner.account_id,
      name: input.name,
      domain: input.domain ?? null,
      currency: input.currency ?? 'USD',
      timezone: 'UTC',
      holdout_share: 0,
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

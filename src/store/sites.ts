import type { Db } from './db.js';
import { newId, newPublicId } from './ids.js';

export interface SiteRow {
  id: string;
  account_id: string;
  name: string;
  domain: string | null;
  currency: string;
  created_at: number;
}

export interface AccountUser {
  id: string;
  account_id: string;
  email: string;
  role: 'owner' | 'admin' | 'member';
}

const LOCAL_OWNER_EMAIL = 'owner@localhost';

/** How long a cached site is trusted: settings (currency, domain) changed by another process show within this. */
const CACHE_TTL_MS = 5_000;

/** Sites and the account that owns them. Site look-ups are cached briefly: sites are never deleted, settings rarely change. */
export class SitesRepo {
  private readonly cache = new Map<string, { row: SiteRow; at: number }>();
  private readonly byId;
  private readonly all;
  private readonly insertSite;

  constructor(private readonly db: Db) {
    this.byId = db.prepare<[string], SiteRow>('SELECT * FROM sites WHERE id = ?');
    this.all = db.prepare<[], SiteRow>('SELECT * FROM sites ORDER BY created_at, id');
    this.insertSite = db.prepare(
      'INSERT INTO sites (id, account_id, name, domain, currency, created_at) VALUES (?, ?, ?, ?, ?, ?)',
    );
  }

  get(id: string): SiteRow | undefined {
    const now = Date.now();
    const hit = this.cache.get(id);
    if (hit && now - hit.at < CACHE_TTL_MS) return hit.row;
    const row = this.byId.get(id);
    if (row) {
      if (this.cache.size > 10_000) this.cache.clear();
      this.cache.set(id, { row, at: now });
    }
    return row;
  }

  /** Changes a site's settings; returns the updated site, or undefined when there is none. */
  update(id: string, patch: { domain?: string | null; currency?: string }): SiteRow | undefined {
    const sets: string[] = [];
    const params: unknown[] = [];
    if (patch.domain !== undefined) {
      sets.push('domain = ?');
      params.push(patch.domain);
    }
    if (patch.currency !== undefined) {
      sets.push('currency = ?');
      params.push(patch.currency);
    }
    this.cache.delete(id);
    if (sets.length > 0) this.db.prepare(`UPDATE sites SET ${sets.join(', ')} WHERE id = ?`).run(...params, id);
    return this.byId.get(id);
  }

  list(): SiteRow[] {
    return this.all.all();
  }

  /**
   * The local owner the CLI acts as: the first owner of the first account,
   * created on first use together with that account.
   */
  localOwner(): AccountUser {
    const existing = this.db
      .prepare<[], AccountUser>(
        "SELECT id, account_id, email, role FROM users WHERE role = 'owner' ORDER BY created_at, id LIMIT 1",
      )
      .get();
    if (existing) return existing;
    const now = Date.now();
    const accountId = newId('acct');
    const userId = newId('usr');
    this.db.transaction(() => {
      this.db.prepare('INSERT INTO accounts (id, name, created_at) VALUES (?, ?, ?)').run(accountId, 'local', now);
      this.db
        .prepare("INSERT INTO users (id, account_id, email, name, role, created_at) VALUES (?, ?, ?, ?, 'owner', ?)")
        .run(userId, accountId, LOCAL_OWNER_EMAIL, 'Local owner', now);
    }).immediate();
    return { id: userId, account_id: accountId, email: LOCAL_OWNER_EMAIL, role: 'owner' };
  }

  create(input: { name: string; domain?: string | undefined; currency?: string | undefined }): SiteRow {
    const owner = this.localOwner();
    const row: SiteRow = {
      id: newPublicId('site'),
      account_id: owner.account_id,
      name: input.name,
      domain: input.domain ?? null,
      currency: input.currency ?? 'USD',
      created_at: Date.now(),
    };
    this.insertSite.run(row.id, row.account_id, row.name, row.domain, row.currency, row.created_at);
    return row;
  }
}

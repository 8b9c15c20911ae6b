import type { Sql } from './sql.js';
import { newId } from './ids.js';

export interface ApiKeyRow {
  id: string;
  site_id: string;
  name: string | null;
  hash: string;
  hint: string;
  scopes: string;
  created_by: string | null;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

const INSERT_KEY =
  'INSERT INTO api_keys (id, site_id, name, hash, hint, scopes, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)';
const KEY_BY_ID = 'SELECT * FROM api_keys WHERE id = ?';

/** Moves whenever this process revokes a key (caches of grants compare it; see PresentedKeys). */
export interface KeyChanges {
  version: number;
}

/** Profile REST API keys, stored as SHA-256 hashes only. */
export class KeysRepo {
  constructor(
    private readonly x: Sql,
    private readonly changes: KeyChanges,
  ) {}

  /** Writes: call inside a write operation. */
  async create(k: { siteId: string; name: string | null; hash: string; hint: string; scopes: string[]; createdBy: string | null }): Promise<ApiKeyRow> {
    const id = newId('key');
    await this.x.run(INSERT_KEY, [id, k.siteId, k.name, k.hash, k.hint, JSON.stringify(k.scopes), k.createdBy, Date.now()]);
    return (await this.byId(id))!;
  }

  byHash(hash: string): Promise<ApiKeyRow | undefined> {
    return this.x.get<ApiKeyRow>('SELECT * FROM api_keys WHERE hash = ?', [hash]);
  }

  byId(id: string): Promise<ApiKeyRow | undefined> {
    return this.x.get<ApiKeyRow>(KEY_BY_ID, [id]);
  }

  list(siteId?: string): Promise<ApiKeyRow[]> {
    return siteId === undefined
      ? this.x.all<ApiKeyRow>('SELECT * FROM api_keys ORDER BY created_at, id')
      : this.x.all<ApiKeyRow>('SELECT * FROM api_keys WHERE site_id = ? ORDER BY created_at, id', [siteId]);
  }

  /** Writes: call inside a write operation. */
  async revoke(id: string, now: number): Promise<boolean> {
    // Before the statement: a grant read from here on (on SQLite, through the connection that runs this very
    // transaction) sees the revocation; a rollback only costs the caches one more read.
    this.changes.version++;
    return (await this.x.run('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL', [now, id])).changes > 0;
  }

  /** Writes: call inside a write operation. */
  async touch(id: string, now: number): Promise<void> {
    await this.x.run('UPDATE api_keys SET last_used_at = ? WHERE id = ?', [now, id]);
  }
}

import type { Db } from './db.js';
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

/** Profile REST API keys, stored as SHA-256 hashes only. */
export class KeysRepo {
  private readonly q;

  constructor(db: Db) {
    this.q = {
      insert: db.prepare(
        'INSERT INTO api_keys (id, site_id, name, hash, hint, scopes, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      ),
      byHash: db.prepare<[string], ApiKeyRow>('SELECT * FROM api_keys WHERE hash = ?'),
      byId: db.prepare<[string], ApiKeyRow>('SELECT * FROM api_keys WHERE id = ?'),
      list: db.prepare<[string], ApiKeyRow>('SELECT * FROM api_keys WHERE site_id = ? ORDER BY created_at, id'),
      listAll: db.prepare<[], ApiKeyRow>('SELECT * FROM api_keys ORDER BY created_at, id'),
      revoke: db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL'),
      touch: db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ?'),
    };
  }

  create(k: { siteId: string; name: string | null; hash: string; hint: string; scopes: string[]; createdBy: string | null }): ApiKeyRow {
    const id = newId('key');
    this.q.insert.run(id, k.siteId, k.name, k.hash, k.hint, JSON.stringify(k.scopes), k.createdBy, Date.now());
    return this.q.byId.get(id)!;
  }

  byHash(hash: string): ApiKeyRow | undefined {
    return this.q.byHash.get(hash);
  }

  byId(id: string): ApiKeyRow | undefined {
    return this.q.byId.get(id);
  }

  list(siteId?: string): ApiKeyRow[] {
    return siteId === undefined ? this.q.listAll.all() : this.q.list.all(siteId);
  }

  revoke(id: string, now: number): boolean {
    return this.q.revoke.run(now, id).changes > 0;
  }

  touch(id: string, now: number): void {
    this.q.touch.run(now, id);
  }
}

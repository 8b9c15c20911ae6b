import type { Db } from './db.js';
import { newId } from './ids.js';

export interface McpTokenRow {
  id: string;
  site_id: string;
  name: string | null;
  hash: string;
  hint: string;
  scope: 'read' | 'write' | 'admin';
  /** JSON of the mint-time restrictions (see src/mcp/grant.ts). */
  restrictions: string;
  created_by: string;
  created_at: number;
  expires_at: number | null;
  last_used_at: number | null;
  revoked_at: number | null;
}

/** MCP tokens, stored as SHA-256 hashes only. */
export class TokensRepo {
  private readonly q;

  constructor(db: Db) {
    this.q = {
      insert: db.prepare(
        `INSERT INTO mcp_tokens (id, site_id, name, hash, hint, scope, restrictions, created_by, created_at, expires_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      byHash: db.prepare<[string], McpTokenRow>('SELECT * FROM mcp_tokens WHERE hash = ?'),
      byId: db.prepare<[string], McpTokenRow>('SELECT * FROM mcp_tokens WHERE id = ?'),
      list: db.prepare<[string], McpTokenRow>('SELECT * FROM mcp_tokens WHERE site_id = ? ORDER BY created_at, id'),
      listAll: db.prepare<[], McpTokenRow>('SELECT * FROM mcp_tokens ORDER BY created_at, id'),
      revoke: db.prepare('UPDATE mcp_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL'),
      touch: db.prepare('UPDATE mcp_tokens SET last_used_at = ? WHERE id = ?'),
    };
  }

  create(t: {
    siteId: string;
    name: string | null;
    hash: string;
    hint: string;
    scope: McpTokenRow['scope'];
    restrictions: unknown;
    createdBy: string;
    expiresAt: number | null;
  }): McpTokenRow {
    const id = newId('mcpk');
    this.q.insert.run(id, t.siteId, t.name, t.hash, t.hint, t.scope, JSON.stringify(t.restrictions), t.createdBy, Date.now(), t.expiresAt);
    return this.q.byId.get(id)!;
  }

  byHash(hash: string): McpTokenRow | undefined {
    return this.q.byHash.get(hash);
  }

  byId(id: string): McpTokenRow | undefined {
    return this.q.byId.get(id);
  }

  list(siteId?: string): McpTokenRow[] {
    return siteId === undefined ? this.q.listAll.all() : this.q.list.all(siteId);
  }

  revoke(id: string, now: number): boolean {
    return this.q.revoke.run(now, id).changes > 0;
  }

  touch(id: string, now: number): void {
    this.q.touch.run(now, id);
  }
}

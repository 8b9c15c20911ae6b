import type { Sql } from './sql.js';
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

const INSERT_TOKEN = `INSERT INTO mcp_tokens (id, site_id, name, hash, hint, scope, restrictions, created_by, created_at, expires_at)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
const TOKEN_BY_ID = 'SELECT * FROM mcp_tokens WHERE id = ?';

/** MCP tokens, stored as SHA-256 hashes only. */
export class TokensRepo {
  constructor(private readonly x: Sql) {}

  /** Writes: call inside a write operation. */
  async create(t: {
    siteId: string;
    name: string | null;
    hash: string;
    hint: string;
    scope: McpTokenRow['scope'];
    restrictions: unknown;
    createdBy: string;
    expiresAt: number | null;
  }): Promise<McpTokenRow> {
    const id = newId('mcpk');
    await this.x.run(INSERT_TOKEN, [
      id,
      t.siteId,
      t.name,
      t.hash,
      t.hint,
      t.scope,
      JSON.stringify(t.restrictions),
      t.createdBy,
      Date.now(),
      t.expiresAt,
    ]);
    return (await this.byId(id))!;
  }

  byHash(hash: string): Promise<McpTokenRow | undefined> {
    return this.x.get<McpTokenRow>('SELECT * FROM mcp_tokens WHERE hash = ?', [hash]);
  }

  byId(id: string): Promise<McpTokenRow | undefined> {
    return this.x.get<McpTokenRow>(TOKEN_BY_ID, [id]);
  }

  list(siteId?: string): Promise<McpTokenRow[]> {
    return siteId === undefined
      ? this.x.all<McpTokenRow>('SELECT * FROM mcp_tokens ORDER BY created_at, id')
      : this.x.all<McpTokenRow>('SELECT * FROM mcp_tokens WHERE site_id = ? ORDER BY created_at, id', [siteId]);
  }

  /** Writes: call inside a write operation. */
  async revoke(id: string, now: number): Promise<boolean> {
    return (await this.x.run('UPDATE mcp_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL', [now, id])).changes > 0;
  }

  /** Writes: call inside a write operation. */
  async touch(id: string, now: number): Promise<void> {
    await this.x.run('UPDATE mcp_tokens SET last_used_at = ? WHERE id = ?', [now, id]);
  }
}

import type { Sql } from './sql.js';
import { whereOf } from './where.js';

export type AuditOutcome = 'ok' | 'error' | 'refused' | 'invalid';

export interface AuditRow {
  id: number;
  site_id: string;
  token_id: string;
  tool: string;
  outcome: AuditOutcome;
  error_code: string | null;
  duration_ms: number;
  created_at: number;
  /** The X-Request-Id of the HTTP request that made the call (null over stdio, and for rows before it was recorded). */
  request_id: string | null;
}

const INSERT_AUDIT =
  'INSERT INTO mcp_audit (site_id, token_id, tool, outcome, error_code, duration_ms, created_at, request_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)';

/** The audit log of MCP tools/call: who called which tool, how it ended and how long it took. Never argument values. */
export class AuditRepo {
  constructor(private readonly x: Sql) {}

  /** The newest rows of a site, optionally of one token or tool, newest first. */
  recent(f: { siteId: string; tokenId?: string | undefined; tool?: string | undefined; limit: number }): Promise<AuditRow[]> {
    const w = whereOf([
      ['site_id = ?', f.siteId],
      ['token_id = ?', f.tokenId],
      ['tool = ?', f.tool],
    ]);
    return this.x.all<AuditRow>(`SELECT * FROM mcp_audit ${w.sql} ORDER BY id DESC LIMIT ?`, [...w.params, f.limit]);
  }

  /** Writes: call inside a write operation. */
  async record(r: {
    siteId: string;
    tokenId: string;
    tool: string;
    outcome: AuditOutcome;
    errorCode: string | null;
    durationMs: number;
    at: number;
    requestId?: string | null;
  }): Promise<void> {
    await this.x.run(INSERT_AUDIT, [r.siteId, r.tokenId, r.tool, r.outcome, r.errorCode, Math.round(r.durationMs), r.at, r.requestId ?? null]);
  }
}

import type { Db } from './db.js';
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
}

/** The audit log of MCP tools/call: who called which tool, how it ended and how long it took. Never argument values. */
export class AuditRepo {
  private readonly q;

  constructor(private readonly db: Db) {
    this.q = {
      insert: db.prepare(
        'INSERT INTO mcp_audit (site_id, token_id, tool, outcome, error_code, duration_ms, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      ),
    };
  }

  /** The newest rows of a site, optionally of one token or tool, newest first. */
  recent(f: { siteId: string; tokenId?: string | undefined; tool?: string | undefined; limit: number }): AuditRow[] {
    const w = whereOf([
      ['site_id = ?', f.siteId],
      ['token_id = ?', f.tokenId],
      ['tool = ?', f.tool],
    ]);
    return this.db.prepare(`SELECT * FROM mcp_audit ${w.sql} ORDER BY id DESC LIMIT ?`).all(...w.params, f.limit) as AuditRow[];
  }

  record(r: { siteId: string; tokenId: string; tool: string; outcome: AuditOutcome; errorCode: string | null; durationMs: number; at: number }): void {
    this.q.insert.run(r.siteId, r.tokenId, r.tool, r.outcome, r.errorCode, Math.round(r.durationMs), r.at);
  }
}

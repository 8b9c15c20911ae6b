import type { Request, Response } from 'express';
import { AppError } from '../errors/app-error.js';
import { isErrorCode } from '../errors/codes.js';
import type { RateLimiter } from '../http/rate-limit.js';
import { openReportLink } from '../domain/access/report-link.js';
import { callTool, toolErrorOf } from './call.js';
import { parseRestrictions, reportGrant, type Grant } from '../domain/access/grant.js';
import { toolContext, type McpDeps } from './server.js';
import { TOOLS } from './tools/index.js';

const LINK_REFUSALS = {
  missing: 'missing link: open the URL access_report_link_mint returned (…/api/mcp/report?link=rpl1.…)',
  malformed: 'this is not a report link',
  bad_signature: 'this report link was not signed by this server (or was altered)',
  expired: 'this report link has expired; ask for a new one',
  minter: 'the token that minted this report link was revoked or has expired',
} as const;

function refused(reason: keyof typeof LINK_REFUSALS): AppError {
  return new AppError('unauthorized', LINK_REFUSALS[reason], { reason });
}

/** The link of a request (`?link=`), or null. */
function linkOf(req: Request): string | null {
  const q = req.originalUrl.indexOf('?');
  return q === -1 ? null : new URLSearchParams(req.originalUrl.slice(q + 1)).get('link');
}

/**
 * GET /api/mcp/report?link=…: a signed report link opened. The link is checked
 * (signature, expiry, then the minting token still live and of the same site),
 * then its tool runs exactly as a tools/call of the link's grant (policy,
 * validation, handler, output schema, one audit row under the minting token).
 * Refusals are 401 unauthorized with a reason; a failing report answers with
 * the tool's error code and its status.
 */
export function reportHandler(deps: McpDeps & { limiter: RateLimiter | null }) {
  return async (req: Request, res: Response): Promise<void> => {
    res.set({ 'Cache-Control': 'no-store', 'Referrer-Policy': 'no-referrer' });
    const token = linkOf(req);
    if (token === null || token === '') throw refused('missing');
    const now = Date.now();
    const opened = await openReportLink(deps.store, token, now);
    if (!opened.ok) throw refused(opened.reason);
    const { link, minter: row } = opened;
    const tool = TOOLS.find((t) => t.name === link.tool);
    if (!tool) throw new AppError('not_found', `this server has no tool ${link.tool} any more`, { field: 'tool' });
    if (deps.limiter) {
      const d = await deps.limiter.take(row.id);
      res.set(deps.limiter.headers(d));
      if (!d.ok) throw new AppError('rate_limited', 'rate limit exceeded for the token behind this link', { retry_after_seconds: d.retryAfterSeconds });
    }
    const minter: Grant = { tokenId: row.id, siteId: row.site_id, scope: row.scope, restrictions: parseRestrictions(row.restrictions), createdBy: row.created_by };
    const result = await callTool(tool, toolContext(reportGrant(minter), deps), link.args, deps.logger);
    if (result.isError) {
      const e = toolErrorOf(result) ?? { code: 'internal_error', message: 'internal error', details: {} };
      const code = isErrorCode(e.code) ? e.code : 'bad_request';
      throw new AppError(code, e.message, { ...e.details, tool: tool.name });
    }
    res.json({
      report: { id: link.id, tool: tool.name, arguments: link.args, site_id: link.siteId, generated_at: new Date(now).toISOString(), expires_at: new Date(link.expiresAt).toISOString() },
      result: result.structuredContent,
    });
  };
}

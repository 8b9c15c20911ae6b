import type { IncomingMessage } from 'node:http';
import { AppError } from '../errors/app-error.js';
import type { Store } from '../store/store.js';
import { credentialHash, sameHash } from '../domain/access/secrets.js';
import { MCP_TOKEN_PREFIX, parseRestrictions, type Grant } from '../domain/access/grant.js';

export const MCP_CHALLENGE = 'Bearer realm="svc-mcp"';

function unauthorized(message: string, invalid: boolean): AppError {
  return new AppError('unauthorized', message, {}, { 'WWW-Authenticate': invalid ? `${MCP_CHALLENGE}, error="invalid_token"` : MCP_CHALLENGE });
}

/** The token of a request: `Authorization: Bearer mcpt_...`, else the `api_key` query parameter (connector URLs). */
function presented(req: IncomingMessage, originalUrl: string): string | null {
  const header = req.headers.authorization;
  if (header !== undefined) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    return m ? m[1]! : '';
  }
  const q = originalUrl.indexOf('?');
  if (q === -1) return null;
  return new URLSearchParams(originalUrl.slice(q + 1)).get('api_key');
}

/**
 * Authenticates an MCP request. Missing, malformed, unknown, revoked and
 * expired tokens are 401 unauthorized. Looked up by hash on every request, so
 * revocation takes effect at once.
 */
export async function authenticateToken(store: Store, req: IncomingMessage, originalUrl: string, now = Date.now()): Promise<Grant> {
  const token = presented(req, originalUrl);
  if (token === null) throw unauthorized(`missing token: send Authorization: Bearer ${MCP_TOKEN_PREFIX}... or ?api_key=`, false);
  return grantForToken(store, token, now);
}

/**
 * The grant of a plaintext token, checked as every MCP request checks it
 * (also by `svc plugin run`, which has the token from its flag or environment).
 */
export async function grantForToken(store: Store, token: string, now = Date.now()): Promise<Grant> {
  if (!token.startsWith(MCP_TOKEN_PREFIX)) throw unauthorized(`a token starts with ${MCP_TOKEN_PREFIX}`, true);
  const hash = credentialHash(token);
  const row = await store.tokens.byHash(hash);
  if (!row || !sameHash(row.hash, hash)) throw unauthorized('unknown token', true);
  if (row.revoked_at !== null) throw unauthorized('this token was revoked', true);
  if (row.expires_at !== null && row.expires_at <= now) throw unauthorized('this token has expired', true);
  if (row.last_used_at === null || now - row.last_used_at > 60_000) await store.write((tx) => tx.tokens.touch(row.id, now));
  return { tokenId: row.id, siteId: row.site_id, scope: row.scope, restrictions: parseRestrictions(row.restrictions), createdBy: row.created_by };
}

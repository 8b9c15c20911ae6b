import type { IncomingHttpHeaders } from 'node:http';
import { AppError } from '../errors/app-error.js';
import { API_KEY_PREFIX, type KeyScope } from '../domain/access/key-scopes.js';
import type { ApiKeyGrant, PresentedKeys } from '../domain/access/api-keys.js';

export type CallerKey = ApiKeyGrant;

const CHALLENGE = 'Bearer realm="svc-pulse"';

function unauthorized(message: string): AppError {
  return new AppError('unauthorized', message, {}, { 'WWW-Authenticate': `${CHALLENGE}, error="invalid_token"` });
}

/**
 * The API key of a request: `Authorization: Bearer pls_live_...`. Missing,
 * malformed, unknown or revoked keys are 401. A revoked key stops working at
 * once (see PresentedKeys).
 */
export async function authenticateKey(keys: PresentedKeys, req: { headers: IncomingHttpHeaders }): Promise<CallerKey> {
  const header = req.headers.authorization;
  if (!header) {
    throw new AppError('unauthorized', 'missing Authorization: Bearer <API key>', {}, { 'WWW-Authenticate': CHALLENGE });
  }
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!m || !m[1]!.startsWith(API_KEY_PREFIX)) throw unauthorized(`Authorization must be "Bearer ${API_KEY_PREFIX}..."`);
  const key = await keys.check(m[1]!);
  if (key === 'unknown') throw unauthorized('unknown API key');
  if (key === 'revoked') throw unauthorized('this API key was revoked');
  return key;
}

/** 403 insufficient_scope unless the key has `scope`. */
export function requireScope(key: CallerKey, scope: KeyScope, what: string): void {
  if (!key.scopes.has(scope)) {
    throw new AppError('insufficient_scope', `${what} requires the ${scope} scope`, { required: scope, granted: [...key.scopes] });
  }
}

import type { IncomingHttpHeaders } from 'node:http';
import { AppError } from '../errors/app-error.js';
import { API_KEY_PREFIX, type KeyScope } from '../domain/access/key-scopes.js';
import type { ApiKeyGrant, PresentedKeys } from '../domain/access/api-keys.js';

export type CallerKey = ApiKeyGrant;

const CHALLENGE = 'Bearer realm="svc-pulse"';

function unauthorized(message: string): AppError {
  return new AppError('unauthorized', message, {}, { 'WWW-Authenticate': `${CHALLENGE}, error="invalid_token"` });
}

/** `Authorization: Bearer <credential>`: the scheme in any case, whitespace around the credential. */
const BEARER = /^Bearer\s+(\S+)\s*$/i;

/**
 * The credential of the usual header, `Bearer ` and printable ASCII without a space, without the regular
 * expression (what BEARER captures of such a header: the rest after the one space); else undefined, and
 * BEARER reads the header.
 */
export function plainBearer(header: string): string | undefined {
  if (header.length <= 7 || !header.startsWith('Bearer ')) return undefined;
  for (let i = 7; i < header.length; i++) {
    const c = header.charCodeAt(i);
    if (c <= 0x20 || c >= 0x7f) return undefined;
  }
  return header.slice(7);
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
  const credential = plainBearer(header) ?? BEARER.exec(header)?.[1];
  if (credential === undefined || !credential.startsWith(API_KEY_PREFIX)) throw unauthorized(`Authorization must be "Bearer ${API_KEY_PREFIX}..."`);
  const key = await keys.check(credential);
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

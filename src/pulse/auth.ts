import type { Request } from 'express';
import { AppError } from '../errors/app-error.js';
import type { Store } from '../store/store.js';
import { credentialHash, sameHash } from '../domain/access/secrets.js';
import { API_KEY_PREFIX, type KeyScope } from '../domain/access/key-scopes.js';

export interface CallerKey {
  id: string;
  siteId: string;
  scopes: ReadonlySet<KeyScope>;
}

const CHALLENGE = 'Bearer realm="svc-pulse"';

function unauthorized(message: string): AppError {
  return new AppError('unauthorized', message, {}, { 'WWW-Authenticate': `${CHALLENGE}, error="invalid_token"` });
}

/**
 * The API key of a request: `Authorization: Bearer pls_live_...`. Missing,
 * malformed, unknown or revoked keys are 401. Looked up by hash on every
 * request, so a revoked key stops working at once.
 */
export async function authenticateKey(store: Store, req: Request): Promise<CallerKey> {
  const header = req.headers.authorization;
  if (!header) {
    throw new AppError('unauthorized', 'missing Authorization: Bearer <API key>', {}, { 'WWW-Authenticate': CHALLENGE });
  }
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!m || !m[1]!.startsWith(API_KEY_PREFIX)) throw unauthorized(`Authorization must be "Bearer ${API_KEY_PREFIX}..."`);
  const hash = credentialHash(m[1]!);
  const row = await store.keys.byHash(hash);
  if (!row || !sameHash(row.hash, hash)) throw unauthorized('unknown API key');
  if (row.revoked_at !== null) throw unauthorized('this API key was revoked');
  const now = Date.now();
  if (row.last_used_at === null || now - row.last_used_at > 60_000) await store.write((tx) => tx.keys.touch(row.id, now));
  return { id: row.id, siteId: row.site_id, scopes: new Set(JSON.parse(row.scopes) as KeyScope[]) };
}

/** 403 insufficient_scope unless the key has `scope`. */
export function requireScope(key: CallerKey, scope: KeyScope, what: string): void {
  if (!key.scopes.has(scope)) {
    throw new AppError('insufficient_scope', `${what} requires the ${scope} scope`, { required: scope, granted: [...key.scopes] });
  }
}

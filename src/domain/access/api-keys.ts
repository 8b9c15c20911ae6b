import type { Store } from '../../store/store.js';
import { credentialHash, sameHash } from './secrets.js';
import type { KeyScope } from './key-scopes.js';

/** The REST API key a request presented, as the handlers act for it. */
export interface ApiKeyGrant {
  id: string;
  siteId: string;
  scopes: ReadonlySet<KeyScope>;
}

/**
 * The key a presented API key credential names, looked up by hash on every
 * request (so a revoked key stops working at once): `unknown`, `revoked`, or
 * the grant. Its last use is recorded at most once a minute.
 */
export async function presentedKey(store: Store, credential: string, now = Date.now()): Promise<'unknown' | 'revoked' | ApiKeyGrant> {
  const hash = credentialHash(credential);
  const row = await store.keys.byHash(hash);
  if (!row || !sameHash(row.hash, hash)) return 'unknown';
  if (row.revoked_at !== null) return 'revoked';
  if (row.last_used_at === null || now - row.last_used_at > 60_000) await store.write((tx) => tx.keys.touch(row.id, now));
  return { id: row.id, siteId: row.site_id, scopes: new Set(JSON.parse(row.scopes) as KeyScope[]) };
}

import { AppError } from '../../errors/app-error.js';
import type { Store } from '../../store/store.js';
import { credentialHash, credentialHint, newCredential, sameHash } from './secrets.js';
import { API_KEY_PREFIX, type KeyScope } from './key-scopes.js';
import { apiKeyOut, type ApiKeyView, type MintedApiKeyView } from './views.js';

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

/** The REST API key use cases (svc key): mint, list and revoke. */
export class ApiKeyService {
  constructor(private readonly store: Store) {}

  /** Mints a key of a site that must exist, created by the local owner. */
  async mint(input: { siteId: string; name: string | null; scopes: KeyScope[] }): Promise<MintedApiKeyView> {
    const plaintext = newCredential(API_KEY_PREFIX);
    const row = await this.store.write(async (tx) => {
      if (!(await tx.sites.get(input.siteId))) throw new AppError('not_found', `no site ${input.siteId}`);
      const owner = await tx.sites.localOwner();
      return tx.keys.create({
        siteId: input.siteId,
        name: input.name,
        hash: credentialHash(plaintext),
        hint: credentialHint(plaintext, API_KEY_PREFIX),
        scopes: input.scopes,
        createdBy: owner.id,
      });
    });
    return { key: plaintext, id: row.id, scopes: input.scopes };
  }

  /** Every key, or those of one site, oldest first. */
  async list(siteId?: string): Promise<ApiKeyView[]> {
    return (await this.store.keys.list(siteId)).map(apiKeyOut);
  }

  /** Revokes a key: not_found if there is none, conflict if it is already revoked. */
  async revoke(id: string): Promise<{ revoked: string }> {
    await this.store.write(async (tx) => {
      if (!(await tx.keys.byId(id))) throw new AppError('not_found', `no key ${id}`);
      if (!(await tx.keys.revoke(id, Date.now()))) throw new AppError('conflict', `key ${id} is already revoked`);
    });
    return { revoked: id };
  }
}

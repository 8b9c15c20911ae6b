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
  const found = await lookUp(store, credentialHash(credential));
  if (typeof found === 'string') return found;
  if (found.lastUsedAt === null || now - found.lastUsedAt > TOUCH_EVERY_MS) await store.write((tx) => tx.keys.touch(found.grant.id, now));
  return found.grant;
}

/** A key's last use is recorded at most this often. */
const TOUCH_EVERY_MS = 60_000;

/** Grants kept at most by PresentedKeys; beyond it the cache starts over. */
const MAX_CACHED_GRANTS = 10_000;

interface KnownKey {
  grant: ApiKeyGrant;
  /** last_used_at as stored, or as this process last wrote it. */
  lastUsedAt: number | null;
}

async function lookUp(store: Store, hash: string): Promise<'unknown' | 'revoked' | KnownKey> {
  const row = await store.keys.byHash(hash);
  if (!row || !sameHash(row.hash, hash)) return 'unknown';
  if (row.revoked_at !== null) return 'revoked';
  return { grant: { id: row.id, siteId: row.site_id, scopes: new Set(JSON.parse(row.scopes) as KeyScope[]) }, lastUsedAt: row.last_used_at };
}

/**
 * presentedKey for a long-running server: on SQLite, the grants of valid keys
 * are kept by credential hash, so a request reads no key row. A revocation is
 * still refused on the very next request: one by this process moves
 * `shared.keyChanges` (KeysRepo.revoke), and one committed by another process
 * (`svc key revoke` beside the server) moves `PRAGMA data_version`, read on
 * every call; either drops every grant. Unknown and revoked keys are never
 * kept. Last use is recorded as presentedKey records it (at most once a
 * minute, from the time last written). On PostgreSQL another instance may
 * revoke a key at any moment and nothing tells this one at once, so every
 * call reads the key's row (presentedKey).
 */
export class PresentedKeys {
  private readonly known = new Map<string, KnownKey>();
  private seenDataVersion: unknown = undefined;
  private seenChanges = -1;
  private dataVersion: { get: () => unknown } | null = null;

  constructor(private readonly store: Store) {}

  async check(credential: string, now = Date.now()): Promise<'unknown' | 'revoked' | ApiKeyGrant> {
    const db = this.store.db;
    if (db === null) return presentedKey(this.store, credential, now);
    this.dataVersion ??= db.prepare('PRAGMA data_version').pluck();
    const version = this.dataVersion.get();
    const changes = this.store.shared.keyChanges.version;
    if (version !== this.seenDataVersion || changes !== this.seenChanges) {
      this.known.clear();
      this.seenDataVersion = version;
      this.seenChanges = changes;
    }
    const hash = credentialHash(credential);
    let key = this.known.get(hash);
    if (key === undefined) {
      // SQLite answers synchronously: nothing can revoke the key between this read and the caching below.
      const found = await lookUp(this.store, hash);
      if (typeof found === 'string') return found;
      if (this.store.shared.keyChanges.version === changes) {
        if (this.known.size >= MAX_CACHED_GRANTS) this.known.clear();
        this.known.set(hash, found);
      }
      key = found;
    }
    if (key.lastUsedAt === null || now - key.lastUsedAt > TOUCH_EVERY_MS) {
      // Set first, so that the requests arriving while it commits do not write it again.
      const known = key;
      const before = known.lastUsedAt;
      known.lastUsedAt = now;
      await this.store.write((tx) => tx.keys.touch(known.grant.id, now)).catch((err: unknown) => {
        known.lastUsedAt = before;
        throw err;
      });
    }
    return key.grant;
  }
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

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, createSite, tempDir } from '../helpers/svc.js';
import { openTestStore } from '../helpers/store.js';
import { ApiKeyService, PresentedKeys } from '../../src/domain/access/api-keys.js';
import type { Store } from '../../src/store/store.js';

/**
 * PresentedKeys keeps the grants of valid keys between requests (SQLite): a
 * revocation, by this process or by another connection to the same data
 * directory (`svc key revoke` beside the server), is still refused on the very
 * next check, and the key's last use is still recorded at most once a minute.
 * On PostgreSQL every check reads the key, with the same answers.
 */
describe('PresentedKeys', () => {
  let dataDir: string;
  let site: string;
  let store: Store;
  const others: Store[] = [];

  beforeAll(async () => {
    dataDir = tempDir();
    site = createSite(dataDir);
    store = await openTestStore(dataDir);
  });

  afterEach(async () => {
    for (const s of others.splice(0)) await s.close();
  });

  afterAll(async () => {
    await store.close();
    cleanup(dataDir);
  });

  const mint = (s: Store) => new ApiKeyService(s).mint({ siteId: site, name: null, scopes: ['profile:read'] });
  const lastUsed = async (id: string) => (await store.keys.byId(id))!.last_used_at;

  it('grants a valid key, refuses unknown ones, and refuses a key this process revokes at the next check', async () => {
    const keys = new PresentedKeys(store);
    const minted = await mint(store);
    const grant = await keys.check(minted.key);
    expect(grant).toEqual({ id: minted.id, siteId: site, scopes: new Set(['profile:read']) });
    // Kept on SQLite: the same grant object answers the next check (PostgreSQL reads the key again).
    if (store.db !== null) expect(await keys.check(minted.key)).toBe(grant);
    else expect(await keys.check(minted.key)).toEqual(grant);
    expect(await keys.check(`${minted.key.slice(0, -1)}x`)).toBe('unknown');
    await new ApiKeyService(store).revoke(minted.id);
    expect(await keys.check(minted.key)).toBe('revoked');
    expect(await keys.check(minted.key)).toBe('revoked');
  });

  it('refuses a key revoked through another connection to the same data at the next check', async () => {
    const keys = new PresentedKeys(store);
    const minted = await mint(store);
    expect(typeof (await keys.check(minted.key))).toBe('object');
    const other = await openTestStore(dataDir);
    others.push(other);
    await new ApiKeyService(other).revoke(minted.id);
    expect(await keys.check(minted.key)).toBe('revoked');
    // And a key minted there is known here at once.
    const second = await mint(other);
    expect(await keys.check(second.key)).toMatchObject({ id: second.id, siteId: site });
  });

  it('records the last use at most once a minute, from the time last written', async () => {
    const keys = new PresentedKeys(store);
    const minted = await mint(store);
    const t0 = 1_900_000_000_000;
    await keys.check(minted.key, t0);
    expect(await lastUsed(minted.id)).toBe(t0);
    await keys.check(minted.key, t0 + 30_000);
    await keys.check(minted.key, t0 + 60_000);
    expect(await lastUsed(minted.id)).toBe(t0);
    await keys.check(minted.key, t0 + 60_001);
    expect(await lastUsed(minted.id)).toBe(t0 + 60_001);
    // A second cache (another server process would have its own) reads the stored time and does not write it again.
    const fresh = new PresentedKeys(store);
    await fresh.check(minted.key, t0 + 90_000);
    expect(await lastUsed(minted.id)).toBe(t0 + 60_001);
  });
});

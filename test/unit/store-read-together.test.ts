import { afterEach, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import path from 'node:path';
import type { Store } from '../../src/store/store.js';
import { Database } from '../../src/store/sqlite-driver.js';
import { PG_BASE_URL } from '../helpers/backend.js';
import { tempDir } from '../helpers/svc.js';
import { openTestStore } from '../helpers/store.js';

/**
 * Store.readTogether (both stores; the pg vitest project runs this file on
 * PostgreSQL, where it simply runs the function): the reads of one operation
 * share one read transaction on SQLite, a write begun meanwhile is neither
 * refused nor delayed (the group ends the read transaction), and the
 * connection is never left inside a transaction.
 */
const dirs: string[] = [];
const stores: Store[] = [];
const sqlite = PG_BASE_URL === undefined;

async function open(): Promise<{ store: Store; dir: string }> {
  const dir = tempDir('svc-read-together-');
  dirs.push(dir);
  const store = await openTestStore(dir, { poolSize: 4 });
  stores.push(store);
  return { store, dir };
}

afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const siteCount = async (store: Store) => Number((await store.sql.get<{ n: number }>('SELECT count(*) AS n FROM sites'))!.n);

describe(`Store.readTogether (${sqlite ? 'SQLite' : 'PostgreSQL'})`, () => {
  it('answers what fn answers, and leaves no transaction open, also when fn throws', async () => {
    const { store } = await open();
    await store.write((tx) => tx.sites.create({ name: 'a' }));
    expect(await store.readTogether(() => siteCount(store))).toBe(1);
    expect(store.db?.inTransaction ?? false).toBe(false);
    await expect(
      store.readTogether(async () => {
        await siteCount(store);
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(store.db?.inTransaction ?? false).toBe(false);
    // The connection still takes writes.
    await store.write((tx) => tx.sites.create({ name: 'b' }));
    expect(await siteCount(store)).toBe(2);
  });

  it.runIf(sqlite)('reads one snapshot on SQLite: a commit by another connection in between is seen only after', async () => {
    const { store, dir } = await open();
    await store.write((tx) => tx.sites.create({ name: 'a' }));
    const other = new Database(path.join(dir, 'svc.db'));
    try {
      const seen = await store.readTogether(async () => {
        const first = await siteCount(store);
        expect(store.db!.inTransaction).toBe(true);
        other.prepare("INSERT INTO sites (id, account_id, name, created_at) SELECT 'site_other', account_id, 'o', created_at FROM sites LIMIT 1").run();
        return [first, await siteCount(store)];
      });
      expect(seen).toEqual([1, 1]);
      expect(store.db!.inTransaction).toBe(false);
      expect(await siteCount(store)).toBe(2);
    } finally {
      other.close();
    }
  });

  it('lets a write awaited inside fn commit, and reads it back after its acknowledgement', async () => {
    const { store } = await open();
    await store.write((tx) => tx.sites.create({ name: 'a' }));
    const counts = await store.readTogether(async () => {
      const before = await siteCount(store);
      await store.write((tx) => tx.sites.create({ name: 'b' }));
      return [before, await siteCount(store)];
    });
    expect(counts).toEqual([1, 2]);
    expect(store.db?.inTransaction ?? false).toBe(false);
  });

  it('does not hold up writes queued while spans run, nor lose any', async () => {
    const { store } = await open();
    await store.write((tx) => tx.sites.create({ name: 'a' }));
    const writes: Promise<unknown>[] = [];
    const reads: Promise<number>[] = [];
    for (let i = 0; i < 50; i++) {
      writes.push(store.write((tx) => tx.sites.create({ name: `w${i}` })));
      reads.push(store.readTogether(() => siteCount(store)));
      await new Promise((r) => setImmediate(r));
    }
    await Promise.all(writes);
    for (const n of await Promise.all(reads)) expect(n).toBeGreaterThanOrEqual(1);
    expect(await siteCount(store)).toBe(51);
    expect(store.db?.inTransaction ?? false).toBe(false);
  });
});

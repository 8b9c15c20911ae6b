import { rmSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { seedSite, type SeedOptions } from '../../src/demo/synthetic.js';
import { openStore, type Store } from '../../src/store/store.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const TABLES = [
  'SELECT id, known, traits, created_at, updated_at FROM profiles ORDER BY id',
  'SELECT kind, value, profile_id, created_at FROM identities ORDER BY kind, value',
  'SELECT kind, hash, profile_id, created_at FROM identity_hashes ORDER BY kind, hash',
  'SELECT id, profile_id, visitor_id, first_seen, last_seen, ip, user_agent, landing_url FROM sessions ORDER BY id',
  'SELECT id, session_id, profile_id, visitor_id, type, ts, body, received_at FROM events ORDER BY id',
  'SELECT id, session_id, profile_id, revenue, currency, line_items, created_at FROM conversions ORDER BY id',
  'SELECT id, session_id, profile_id, visitor_id, score, body, received_at FROM scores ORDER BY id',
  'SELECT orders FROM copurchase_orders',
  'SELECT id, sku, orders FROM copurchase_items ORDER BY id',
  'SELECT item, other, orders FROM copurchase_pairs ORDER BY item, other',
];

/**
 * Seeds 300 profiles into a fresh SQLite store and returns every seeded row (the site id
 * replaced) with the result. `wrap` may change how the store runs write operations.
 */
async function seeded(batch: number, wrap?: (s: Store) => Store) {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-seed-unit-'));
  dirs.push(dir);
  const store = openStore({ dataDir: dir, synchronous: 'normal' });
  try {
    const site = await store.write((tx) => tx.sites.create({ name: 'Seed' }));
    const o: SeedOptions = { siteId: site.id, currency: 'EUR', profiles: 300, eventsPerProfile: 2, seed: 5, until: Date.parse('2026-01-01'), batch };
    const result = await seedSite(wrap ? wrap(store) : store, o);
    const rows: string[] = [];
    for (const sql of TABLES) rows.push(JSON.stringify(await store.sql.all(sql)));
    return { result: { ...result, site_id: 'SITE', seconds: 0 }, rows: rows.join('\n').split(site.id).join('SITE') };
  } finally {
    await store.close();
  }
}

describe('seedSite', () => {
  it('writes the same rows whatever the batch size (partial chunks, one-profile batches)', async () => {
    const one = await seeded(300);
    expect(one.result.profiles).toBe(300);
    expect(one.result.events).toBe(600);
    expect(one.result.conversions).toBeGreaterThan(0);
    for (const batch of [1, 7, 64, 299]) {
      const other = await seeded(batch);
      expect(other.result, `batch ${batch}`).toEqual(one.result);
      expect(other.rows, `batch ${batch}`).toBe(one.rows);
    }
  });

  it('writes the same rows when a batch operation runs a second time (the writer re-runs it after a failure)', async () => {
    const plain = await seeded(50);
    let runs = 0;
    const rerun = await seeded(50, (store) => {
      const write = store.write.bind(store);
      // The first run of every operation fails after writing its rows: the group-commit writer
      // rolls back and runs the operation again (isolated in a savepoint), which then succeeds.
      return Object.assign(Object.create(store) as Store, {
        write: <T>(fn: Parameters<Store['write']>[0]) =>
          write(async (tx) => {
            const value = (await fn(tx)) as T;
            if (runs++ % 2 === 0) throw new Error('simulated failure');
            return value;
          }),
      });
    });
    expect(runs).toBe(12);
    expect(rerun.result).toEqual(plain.result);
    expect(rerun.rows).toBe(plain.rows);
  });
});

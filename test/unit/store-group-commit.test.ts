import { afterEach, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import type { Store } from '../../src/store/store.js';
import type { Repos } from '../../src/store/repos.js';
import { AppError } from '../../src/errors/app-error.js';
import { PG_BASE_URL } from '../helpers/backend.js';
import { tempDir } from '../helpers/svc.js';
import { openTestStore } from '../helpers/store.js';

/**
 * Group commit on both stores (the pg vitest project runs this file on
 * PostgreSQL): write operations submitted together share transactions, every
 * promise settles after the commit that holds its writes, and one failing
 * operation loses only its own writes.
 */
const dirs: string[] = [];
const stores: Store[] = [];

async function open(): Promise<Store> {
  const dir = tempDir('svc-group-');
  dirs.push(dir);
  const store = await openTestStore(dir, { poolSize: 10 });
  stores.push(store);
  return store;
}

afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function eventCount(store: Store, siteId: string): Promise<number> {
  return Number((await store.sql.get<{ n: number }>('SELECT count(*) AS n FROM events WHERE site_id = ?', [siteId]))!.n);
}

/** A write operation storing event `i` (ts = i, so tests can tell which ones were stored). */
function insertEvent(siteId: string, i: number) {
  return (tx: Repos) =>
    tx.activity.insertEvent({ siteId, sessionId: `s${i}`, profileId: `prf_${i}`, visitorId: null, type: 'pageview', ts: i, body: `{"i":${i}}`, now: i });
}

describe(`group commit (${PG_BASE_URL !== undefined ? 'PostgreSQL' : 'SQLite'})`, () => {
  it('commits concurrent operations in shared transactions, every one of them stored once', async () => {
    const store = await open();
    const site = await store.write((tx) => tx.sites.create({ name: 'g' }));
    const before = { ...store.writeCounters };
    const ids = await Promise.all(Array.from({ length: 300 }, (_, i) => store.write(insertEvent(site.id, i))));
    expect(new Set(ids).size).toBe(300);
    expect(await eventCount(store, site.id)).toBe(300);
    const batches = store.writeCounters.batches - before.batches;
    const ops = store.writeCounters.ops - before.ops;
    expect(ops).toBe(300);
    // Grouped: far fewer transactions than operations (SQLite takes the whole turn's queue; PostgreSQL
    // runs at most a few groups at once and each takes everything queued when it starts).
    expect(batches).toBeLessThanOrEqual(60);
  });

  it('a failing operation loses only its own writes; the others of its group commit', async () => {
    const store = await open();
    const site = await store.write((tx) => tx.sites.create({ name: 'g' }));
    const outcomes = await Promise.allSettled(
      Array.from({ length: 40 }, (_, i) =>
        store.write(async (tx) => {
          const id = await insertEvent(site.id, i)(tx);
          if (i % 10 === 7) throw new AppError('validation_failed', `op ${i} refused after writing`);
          return id;
        }),
      ),
    );
    const failed = outcomes.flatMap((o, i) => (o.status === 'rejected' ? [i] : []));
    expect(failed).toEqual([7, 17, 27, 37]);
    for (const i of failed) expect((outcomes[i] as PromiseRejectedResult).reason).toBeInstanceOf(AppError);
    expect(await eventCount(store, site.id)).toBe(36);
    const stored = await store.sql.all<{ ts: number }>('SELECT ts FROM events WHERE site_id = ? ORDER BY ts', [site.id]);
    expect(stored.map((r) => r.ts)).toEqual(Array.from({ length: 40 }, (_, i) => i).filter((i) => i % 10 !== 7));
  });

  it('two operations of one group racing for one unique key: the first commits, the second fails alone', async () => {
    const store = await open();
    const site = await store.write((tx) => tx.sites.create({ name: 'g' }));
    const insertSession = (profile: string) => (tx: Repos) =>
      tx.sql.run('INSERT INTO sessions (site_id, id, profile_id, visitor_id, first_seen, last_seen) VALUES (?, ?, ?, NULL, 1, 1)', [
        site.id,
        'same',
        profile,
      ]);
    const fillers = Array.from({ length: 20 }, (_, i) => store.write(insertEvent(site.id, i)));
    const [a, b] = await Promise.allSettled([store.write(insertSession('prf_a')), store.write(insertSession('prf_b'))]);
    await Promise.all(fillers);
    expect(a.status).toBe('fulfilled');
    expect(b.status).toBe('rejected');
    const rows = await store.sql.all<{ profile_id: string }>('SELECT profile_id FROM sessions WHERE site_id = ?', [site.id]);
    expect(rows).toEqual([{ profile_id: 'prf_a' }]);
    expect(await eventCount(store, site.id)).toBe(20);
  });

  it('an operation that catches a failed statement is never acknowledged with writes that were not stored', async () => {
    const store = await open();
    const site = await store.write((tx) => tx.sites.create({ name: 'g' }));
    const outcomes = await Promise.allSettled(
      Array.from({ length: 30 }, (_, i) =>
        store.write(async (tx) => {
          const id = await insertEvent(site.id, i)(tx);
          if (i === 13) {
            const dup = 'INSERT INTO sessions (site_id, id, profile_id, visitor_id, first_seen, last_seen) VALUES (?, ?, ?, NULL, 1, 1)';
            await tx.sql.run(dup, [site.id, 'dup', 'prf_x']);
            // The second insert violates the primary key; the operation swallows the error. On PostgreSQL
            // that aborts the transaction, and its COMMIT silently rolls back.
            await tx.sql.run(dup, [site.id, 'dup', 'prf_x']).catch(() => undefined);
          }
          return id;
        }),
      ),
    );
    const stored = new Set((await store.sql.all<{ ts: number }>('SELECT ts FROM events WHERE site_id = ?', [site.id])).map((r) => Number(r.ts)));
    const fulfilled = outcomes.flatMap((o, i) => (o.status === 'fulfilled' ? [i] : []));
    // Every acknowledged operation is stored, and nothing else is.
    expect([...stored].sort((x, y) => x - y)).toEqual(fulfilled);
    // SQLite keeps a transaction usable after a failed statement; PostgreSQL cannot commit operation 13.
    expect(fulfilled).toEqual(Array.from({ length: 30 }, (_, i) => i).filter((i) => PG_BASE_URL === undefined || i !== 13));
  });
});

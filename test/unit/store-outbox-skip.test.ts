import { afterEach, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import type { Store } from '../../src/store/store.js';
import { PG_BASE_URL } from '../helpers/backend.js';
import { tempDir } from '../helpers/svc.js';
import { openTestStore } from '../helpers/store.js';

/**
 * The fan-out with no enabled destination (WebhooksRepo.skipOutbox): the rows
 * not yet fanned out are marked without being read, nothing is deleted, and
 * rows written after it are claimed as usual. The pg project runs it too.
 */
const onPg = PG_BASE_URL !== undefined;
const dirs: string[] = [];
const stores: Store[] = [];

afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe(`outbox rows no destination can want (${onPg ? 'PostgreSQL' : 'SQLite'})`, () => {
  it('are marked fanned out without being read; later rows are claimed as before', async () => {
    const dir = tempDir('svc-outbox-skip-');
    dirs.push(dir);
    const store = await openTestStore(dir);
    stores.push(store);
    const site = await store.write((tx) => tx.sites.create({ name: 'skip' }));
    await store.write((tx) => tx.webhooks.skipOutbox(1000, Date.now())); // whatever creating the site wrote
    const enqueue = (i: number) => store.write((tx) => tx.activity.enqueue(site.id, 'pageview', { i }, Date.now()));
    const ids = [await enqueue(1), await enqueue(2), await enqueue(3)];
    expect(ids[1]).toBeGreaterThan(ids[0]!);
    expect(await store.write((tx) => tx.webhooks.skipOutbox(1000, Date.now()))).toBe(3);
    expect(await store.write((tx) => tx.webhooks.claimOutbox(1000))).toEqual([]);
    expect(await store.write((tx) => tx.webhooks.skipOutbox(1000, Date.now()))).toBe(0);
    const fourth = await enqueue(4);
    const claimed = await store.write((tx) => tx.webhooks.claimOutbox(1000));
    expect(claimed.map((r) => [r.id, JSON.parse(r.payload)])).toEqual([[fourth, { i: 4 }]]);
    const kept = await store.sql.get<{ n: number }>('SELECT count(*) AS n FROM outbox WHERE site_id = ?', [site.id]);
    expect(Number(kept!.n)).toBe(4);
  });
});

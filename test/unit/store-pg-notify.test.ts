import { rmSync } from 'node:fs';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { WORK_CHANNEL } from '../../src/store/pg/store.js';
import { PG_BASE_URL } from '../helpers/backend.js';
import { tempDir } from '../helpers/svc.js';
import { openTestStore } from '../helpers/store.js';

/**
 * Work notifications on PostgreSQL: a process that commits work wakes the
 * other instances' workers with one NOTIFY after the commit, even when it
 * closes its store right away (a CLI command).
 */
describe.skipIf(PG_BASE_URL === undefined)('PostgreSQL work notifications', () => {
  it('a store closed right after writing outbox rows still sends its NOTIFY', async () => {
    const dir = tempDir('svc-notify-');
    const listener = new pg.Client({ connectionString: PG_BASE_URL });
    await listener.connect();
    try {
      // One connection: every statement of the store, its NOTIFY included, comes from this backend.
      const store = await openTestStore(dir, { poolSize: 1 });
      const pid = Number((await store.sql.get<{ pid: number }>('SELECT pg_backend_pid() AS pid'))!.pid);
      // Other test files notify on the same channel: only this store's backend counts.
      const heard = new Promise<void>((resolve) => listener.on('notification', (n) => n.processId === pid && n.channel === WORK_CHANNEL && resolve()));
      await listener.query(`LISTEN ${WORK_CHANNEL}`);
      const site = await store.write((tx) => tx.sites.create({ name: 'n' }));
      await store.write((tx) => tx.activity.enqueue(site.id, 'pageview', { n: 1 }, Date.now()));
      await store.close();
      await heard;
      expect(store.writeCounters.ops).toBe(2);
    } finally {
      await listener.end();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

import { rmSync } from 'node:fs';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { openConfiguredStore } from '../../src/store/open.js';
import { workChannel } from '../../src/store/pg/store.js';
import type { Store } from '../../src/store/store.js';
import { PG_BASE_URL, databaseUrlFor, schemaFor } from '../helpers/backend.js';
import { tempDir } from '../helpers/svc.js';
import { openTestStore } from '../helpers/store.js';

/**
 * Work notifications on PostgreSQL: a process that commits work wakes the
 * other instances' workers with one NOTIFY after the commit, even when it
 * closes its store right away (a CLI command).
 */
/** A site, then five commits that each enqueue an outbox row (one NOTIFY each, 40 ms apart), and time for them to arrive. */
async function fiveCommitsOfWork(store: Store): Promise<void> {
  const site = await store.write((tx) => tx.sites.create({ name: 'n' }));
  for (let i = 0; i < 5; i++) {
    await store.write((tx) => tx.activity.enqueue(site.id, 'pageview', { n: i }, Date.now()));
    await new Promise((r) => setTimeout(r, 40));
  }
  await new Promise((r) => setTimeout(r, 300));
}

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
      const channel = workChannel(schemaFor(dir));
      const heard = new Promise<void>((resolve) => listener.on('notification', (n) => n.processId === pid && n.channel === channel && resolve()));
      await listener.query(`LISTEN ${channel}`);
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

  it("an instance's workers wake on another instance's work notifications, not on its own (its commit listeners woke them)", async () => {
    const dir = tempDir('svc-notify-self-');
    const open = () =>
      openConfiguredStore(
        { dataDir: dir, synchronous: 'normal', databaseUrl: databaseUrlFor(dir), databasePoolSize: 3, databaseStatementTimeoutMs: 30_000 },
        { server: true },
      );
    const stores: Store[] = [];
    try {
      const a = await open();
      stores.push(a);
      const b = await open();
      stores.push(b);
      const heard = { a: 0, b: 0 };
      a.onRemoteWork(() => heard.a++);
      b.onRemoteWork(() => heard.b++);
      let localCommits = 0;
      a.onCommit(() => localCommits++);
      // Both listeners are up once a NOTIFY sent from outside reaches both.
      const outside = new pg.Client({ connectionString: PG_BASE_URL });
      await outside.connect();
      try {
        const deadline = Date.now() + 10_000;
        while ((heard.a === 0 || heard.b === 0) && Date.now() < deadline) {
          await outside.query(`NOTIFY ${workChannel(schemaFor(dir))}`);
          await new Promise((r) => setTimeout(r, 50));
        }
      } finally {
        await outside.end();
      }
      expect(heard.a).toBeGreaterThan(0);
      expect(heard.b).toBeGreaterThan(0);
      // a's own commits (one NOTIFY each, 40 ms apart) wake b, never a.
      heard.a = 0;
      heard.b = 0;
      await fiveCommitsOfWork(a);
      expect(localCommits).toBe(6);
      expect(heard.a).toBe(0);
      expect(heard.b).toBeGreaterThanOrEqual(4);
    } finally {
      for (const s of stores) await s.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("stores in other schemas of the database (side-by-side installs, a test run's schemas) do not wake each other", async () => {
    const dirs = [tempDir('svc-notify-one-'), tempDir('svc-notify-two-')];
    const stores: Store[] = [];
    try {
      for (const dir of dirs) {
        stores.push(
          await openConfiguredStore(
            { dataDir: dir, synchronous: 'normal', databaseUrl: databaseUrlFor(dir), databasePoolSize: 3, databaseStatementTimeoutMs: 30_000 },
            { server: true },
          ),
        );
      }
      const [one, two] = stores as [Store, Store];
      expect(workChannel(schemaFor(dirs[0]!))).not.toBe(workChannel(schemaFor(dirs[1]!)));
      expect(workChannel(schemaFor(dirs[0]!))).toMatch(/^svc_work_[0-9a-f]{12}$/);
      expect(workChannel(null)).toBe('svc_work');
      const heard = { one: 0, two: 0 };
      one.onRemoteWork(() => heard.one++);
      two.onRemoteWork(() => heard.two++);
      // two's listener is up once a NOTIFY on its own channel reaches it.
      const outside = new pg.Client({ connectionString: PG_BASE_URL });
      await outside.connect();
      try {
        const deadline = Date.now() + 10_000;
        while (heard.two === 0 && Date.now() < deadline) {
          await outside.query(`NOTIFY ${workChannel(schemaFor(dirs[1]!))}`);
          await new Promise((r) => setTimeout(r, 50));
        }
      } finally {
        await outside.end();
      }
      expect(heard.two).toBeGreaterThan(0);
      heard.two = 0;
      await fiveCommitsOfWork(one);
      expect(heard.two).toBe(0);
    } finally {
      for (const s of stores) await s.close();
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    }
  });
});

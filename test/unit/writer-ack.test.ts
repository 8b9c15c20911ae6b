import type * as NodeFs from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openStore, type Store } from '../../src/store/store.js';
import { cleanup, tempDir } from '../helpers/svc.js';

/**
 * The SQLite writer with the WAL fsynced off the event loop (`svc serve`): an operation written with
 * ack 'commit' (the exposures of /api/decide) settles once committed, while the fsync still runs;
 * every other operation settles only after an fsync that started after its commit.
 */

const fsyncs = vi.hoisted(() => ({ held: [] as (() => void)[] }));
vi.mock('node:fs', async (importOriginal) => {
  const fs = await importOriginal<typeof NodeFs>();
  const fsync = (fd: number, cb: (err: NodeJS.ErrnoException | null) => void) => fsyncs.held.push(() => fs.fsync(fd, cb));
  return { ...fs, default: { ...fs, fsync }, fsync };
});

function releaseFsyncs(): void {
  for (const f of fsyncs.held.splice(0)) f();
}

async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 2000 && !cond(); i++) await new Promise((r) => setTimeout(r, 1));
  expect(cond()).toBe(true);
}

function tracked<T>(p: Promise<T>): { p: Promise<T>; done: boolean } {
  const t = { p, done: false };
  void p.then(() => (t.done = true));
  return t;
}

const row = (siteId: string, visitorId: string) => ({
  siteId,
  visitorId,
  profileId: null,
  zoneId: 'zn_x',
  variantId: null,
  experimentId: 'exp_x',
  armId: 'arm_x',
  holdout: false,
  url: '/x',
  at: 1,
});

let dir = '';
let store: Store | null = null;
afterEach(async () => {
  const s = store;
  store = null;
  if (s) {
    const closing = s.close();
    while (fsyncs.held.length > 0 || !(await Promise.race([closing.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 5))]))) releaseFsyncs();
  }
  if (dir) cleanup(dir);
});

describe("WriteOptions.ack 'commit' on SQLite with the fsync off the event loop", () => {
  it('settles at commit while the fsync runs; durable writes settle only after an fsync that follows their commit', async () => {
    dir = tempDir();
    store = openStore({ dataDir: dir, offThreadFsync: true });
    const s = store;
    const siteId = (await (async () => {
      const created = s.write((tx) => tx.sites.create({ name: 'ack' }));
      await until(() => fsyncs.held.length === 1);
      releaseFsyncs();
      return created;
    })()).id;

    // A durable write: committed, its fsync held.
    const first = tracked(s.write((tx) => tx.exposures.insert([row(siteId, 'v-durable')])));
    await until(() => fsyncs.held.length === 1);
    const batches = s.writeCounters.batches;
    // While that fsync runs: a durable write waits (not even committed), an ack-at-commit write commits and settles.
    const second = tracked(s.write((tx) => tx.exposures.insert([row(siteId, 'v-queued')])));
    await s.write((tx) => tx.exposures.insert([row(siteId, 'v-early')]), { ack: 'commit' });
    expect(s.writeCounters.batches).toBe(batches + 1);
    expect(first.done).toBe(false);
    const visible = await s.sql.all<{ visitor_id: string }>('SELECT visitor_id FROM exposures ORDER BY id');
    // The durable write queued behind the fsync rode in the ack-at-commit write's transaction, unacknowledged.
    expect(visible.map((r) => r.visitor_id)).toEqual(['v-durable', 'v-queued', 'v-early']);
    await new Promise((r) => setTimeout(r, 20));
    expect(first.done).toBe(false);
    expect(second.done).toBe(false);

    // The first fsync returns: the first write settles; the second needs the fsync requested after its commit.
    releaseFsyncs();
    await first.p;
    await until(() => fsyncs.held.length === 1);
    await new Promise((r) => setTimeout(r, 20));
    expect(second.done).toBe(false);
    releaseFsyncs();
    await second.p;
  });

  it('is the default (durable) without the off-thread fsync: nothing is held, everything settles at commit', async () => {
    dir = tempDir();
    store = openStore({ dataDir: dir });
    const siteId = (await store.write((tx) => tx.sites.create({ name: 'ack' }))).id;
    await store.write((tx) => tx.exposures.insert([row(siteId, 'v1')]), { ack: 'commit' });
    await store.write((tx) => tx.exposures.insert([row(siteId, 'v2')]));
    expect(fsyncs.held).toHaveLength(0);
    expect((await store.sql.all<{ visitor_id: string }>('SELECT visitor_id FROM exposures ORDER BY id')).map((r) => r.visitor_id)).toEqual(['v1', 'v2']);
  });
});

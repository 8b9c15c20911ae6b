import { afterEach, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import type { Store } from '../../src/store/store.js';
import type { Repos } from '../../src/store/repos.js';
import { AppError } from '../../src/errors/app-error.js';
import { PG_BASE_URL } from '../helpers/backend.js';
import { tempDir } from '../helpers/svc.js';
import { openTestStore } from '../helpers/store.js';

/**
 * PostgreSQL group commit: when operations queue while a group runs, the group's COMMIT is handed to the
 * next group on the same connection and goes out in the same write as that group's BEGIN and first
 * statement (PgWriteRunner.finish). Neither group's outcome may depend on the other's: the first is
 * committed whatever the second does, and a failure in the second fails only its own operation.
 */
const onPg = PG_BASE_URL !== undefined;
const dirs: string[] = [];
const stores: Store[] = [];

afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function open(): Promise<{ store: Store; siteId: string }> {
  const dir = tempDir('svc-chain-');
  dirs.push(dir);
  // Pool of 10: two write lanes.
  const store = await openTestStore(dir, { poolSize: 10 });
  stores.push(store);
  const site = await store.write((tx) => tx.sites.create({ name: 'chain' }));
  return { store, siteId: site.id };
}

function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((r) => (open = r));
  return { wait, open };
}

/** Waits (bounded) until `cond` holds. */
async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(cond()).toBe(true);
}

const chained = (store: Store) => (store.writeCounters as { chained?: number }).chained ?? 0;

function insert(tx: Repos, siteId: string, tag: string, i: number, type: string | null = 'pageview'): Promise<number> {
  return tx.activity.insertEvent({ siteId, sessionId: `${tag}${i}`, profileId: `prf_${tag}${i}`, visitorId: null, type: type as string, ts: i, body: '{}', now: i });
}

/**
 * Fills both write lanes with a group each (A, then B), held open after their inserts; then `next` submits
 * operations, which queue; A is let go, and hands its COMMIT to the group of those operations.
 */
async function withBothLanesBusy<T>(store: Store, siteId: string, next: () => Promise<T>): Promise<{ a: PromiseSettledResult<number>[]; b: PromiseSettledResult<number>[]; next: T; aVisible: number }> {
  const held = (tag: string, g: { wait: Promise<void> }, arrived: { n: number }) =>
    Promise.allSettled(
      Array.from({ length: 10 }, (_, i) =>
        store.write(
          async (tx) => {
            const id = await insert(tx, siteId, tag, i);
            arrived.n++;
            await g.wait;
            return id;
          },
          { key: `${tag}${i}` },
        ),
      ),
    );
  const gateA = gate();
  const gateB = gate();
  const arrivedA = { n: 0 };
  const arrivedB = { n: 0 };
  const a = held('a', gateA, arrivedA);
  await until(() => arrivedA.n === 10);
  const b = held('b', gateB, arrivedB);
  await until(() => arrivedB.n === 10);
  const before = chained(store);
  const n = next();
  gateA.open();
  const aDone = await a;
  // A is committed once its callers hear so: its rows are seen from another connection, with B still open.
  const aVisible = Number((await store.sql.get<{ n: number }>("SELECT COUNT(*) AS n FROM events WHERE site_id = ? AND session_id LIKE 'a%'", [siteId]))!.n);
  expect(chained(store)).toBe(before + 1);
  gateB.open();
  return { a: aDone, b: await b, next: await n, aVisible };
}

async function sessionsStored(store: Store, siteId: string): Promise<string[]> {
  const rows = await store.sql.all<{ session_id: string }>('SELECT session_id FROM events WHERE site_id = ? ORDER BY session_id', [siteId]);
  return rows.map((r) => r.session_id);
}

const tags = (tag: string, n: number, except: number[] = []) => Array.from({ length: n }, (_, i) => i).filter((i) => !except.includes(i)).map((i) => `${tag}${i}`);

describe.skipIf(!onPg)('a group COMMIT sent with the next group (PostgreSQL)', () => {
  it('the queued group runs on the same connection, its COMMIT goes first: every operation of the three groups stored once', async () => {
    const { store, siteId } = await open();
    const r = await withBothLanesBusy(store, siteId, () =>
      Promise.allSettled(Array.from({ length: 10 }, (_, i) => store.write((tx) => insert(tx, siteId, 'c', i), { key: `c${i}` }))),
    );
    expect(r.aVisible).toBe(10);
    for (const o of [...r.a, ...r.b, ...r.next]) expect(o.status).toBe('fulfilled');
    expect(await sessionsStored(store, siteId)).toEqual([...tags('a', 10), ...tags('b', 10), ...tags('c', 10)].sort());
  });

  it("an insert that fails in the next group's last wave fails alone: the handed COMMIT stands, the next group's others are stored", async () => {
    const { store, siteId } = await open();
    const modes: (string | undefined)[] = [];
    const off = store.onGroupCommit((g) => modes.push(g.mode));
    const r = await withBothLanesBusy(store, siteId, () =>
      Promise.allSettled(
        Array.from({ length: 10 }, (_, i) =>
          store.write(
            async (tx) => {
              // The insert and a read, one wave, the operation's last: a NULL type breaks NOT NULL for op 3.
              const [id] = await Promise.all([insert(tx, siteId, 'c', i, i === 3 ? null : 'pageview'), tx.triggers.listeningForEvent(siteId, 'pageview')]);
              return id;
            },
            { key: `c${i}` },
          ),
        ),
      ),
    );
    off();
    expect(r.aVisible).toBe(10);
    expect(r.next.flatMap((o, i) => (o.status === 'rejected' ? [i] : []))).toEqual([3]);
    for (const o of [...r.a, ...r.b]) expect(o.status).toBe('fulfilled');
    expect(modes).toContain('rerun');
    expect(await sessionsStored(store, siteId)).toEqual([...tags('a', 10), ...tags('b', 10), ...tags('c', 10, [3])].sort());
  });

  it('a next group whose operation fails before sending anything still sends the handed COMMIT first (its ROLLBACK after it)', async () => {
    const { store, siteId } = await open();
    const r = await withBothLanesBusy(store, siteId, () =>
      store
        .write(
          () => {
            throw new AppError('validation_failed', 'refused before any statement');
          },
          { key: 'c0' },
        )
        .then(
          () => 'stored',
          (err: unknown) => (err as Error).message,
        ),
    );
    expect(r.next).toBe('refused before any statement');
    expect(r.aVisible).toBe(10);
    for (const o of [...r.a, ...r.b]) expect(o.status).toBe('fulfilled');
    expect(await sessionsStored(store, siteId)).toEqual([...tags('a', 10), ...tags('b', 10)].sort());
    // The connection went back to the pool outside any transaction: a write after it commits on its own.
    await store.write((tx) => insert(tx, siteId, 'd', 0), { key: 'd0' });
    expect(await sessionsStored(store, siteId)).toContain('d0');
  });

  it("an unkeyed group (operations in turn) takes the handed COMMIT too, and a failing operation in it is run alone", async () => {
    const { store, siteId } = await open();
    const r = await withBothLanesBusy(store, siteId, () =>
      Promise.allSettled(
        Array.from({ length: 5 }, (_, i) =>
          store.write(async (tx) => {
            const id = await insert(tx, siteId, 'u', i);
            if (i === 2) throw new AppError('validation_failed', 'refused after writing');
            return id;
          }),
        ),
      ),
    );
    expect(r.aVisible).toBe(10);
    expect(r.next.flatMap((o, i) => (o.status === 'rejected' ? [i] : []))).toEqual([2]);
    expect(await sessionsStored(store, siteId)).toEqual([...tags('a', 10), ...tags('b', 10), ...tags('u', 5, [2])].sort());
  });
});

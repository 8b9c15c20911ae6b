import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import type { Store } from '../../src/store/store.js';
import type { GroupCommitInfo } from '../../src/store/observe.js';
import type { ExposureInsert } from '../../src/store/exposures.js';
import { PG_BASE_URL } from '../helpers/backend.js';
import { tempDir } from '../helpers/svc.js';
import { openTestStore } from '../helpers/store.js';

/**
 * WriteOptions.oneStatement (the exposures of /api/decide): on PostgreSQL the
 * operations queued in one turn of the event loop share one autocommitted
 * statement, without BEGIN and COMMIT; an operation whose rows fail stores
 * nothing and fails alone; a second statement is refused. SQLite runs them as
 * any write. The pg vitest project runs this file on PostgreSQL.
 */
const onPg = PG_BASE_URL !== undefined;
let dir: string;
let store: Store;
let siteId: string;

beforeAll(async () => {
  dir = tempDir('svc-one-statement-');
  store = await openTestStore(dir, { poolSize: 6 });
  siteId = (await store.write((tx) => tx.sites.create({ name: 'one-statement' }))).id;
});

afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const rowsOf = (visitorId: string, n: number, zoneId: string | null = 'zone_a'): ExposureInsert[] =>
  Array.from({ length: n }, (_, i) => ({
    siteId,
    visitorId,
    profileId: null,
    zoneId: zoneId as string,
    variantId: `var_${i}`,
    experimentId: i === 0 ? 'exp_1' : null,
    armId: i === 0 ? 'arm_1' : null,
    holdout: false,
    url: '/p',
    at: 1_700_000_000_000 + i,
  }));

async function stored(visitorId: string): Promise<number> {
  return Number((await store.sql.get<{ n: number }>('SELECT count(*) AS n FROM exposures WHERE site_id = ? AND visitor_id = ?', [siteId, visitorId]))!.n);
}

async function groupsOf<T>(work: () => Promise<T>): Promise<{ value: T; groups: GroupCommitInfo[] }> {
  const groups: GroupCommitInfo[] = [];
  const off = store.onGroupCommit((g) => groups.push(g));
  try {
    return { value: await work(), groups };
  } finally {
    off();
  }
}

describe('oneStatement write operations', () => {
  it('of one event-loop turn share one statement on PostgreSQL, committed without a transaction; every row is stored', async () => {
    const visitors = Array.from({ length: 20 }, (_, i) => `os-v${i}`);
    const { groups } = await groupsOf(() =>
      Promise.all(visitors.map((v) => store.write((tx) => tx.exposures.insert(rowsOf(v, 5)), { key: v, ack: 'commit', oneStatement: true }))),
    );
    for (const v of visitors) expect(await stored(v), v).toBe(5);
    if (onPg) {
      expect(groups).toEqual([expect.objectContaining({ backend: 'pg', operations: 20, roundTrips: 1, mode: 'autocommit' })]);
    } else {
      expect(groups.reduce((a, g) => a + g.operations, 0)).toBe(20);
      expect(groups.every((g) => g.mode === undefined)).toBe(true);
    }
    // Every column lands where it belongs (on PostgreSQL the rows travel as one array per column).
    const back = await store.sql.all<Record<string, unknown>>(
      'SELECT site_id, visitor_id, profile_id, zone_id, variant_id, experiment_id, arm_id, holdout, url, created_at FROM exposures WHERE site_id = ? AND visitor_id = ? ORDER BY created_at',
      [siteId, 'os-v7'],
    );
    expect(back.map((r) => ({ ...r, holdout: Number(r.holdout), created_at: Number(r.created_at) }))).toEqual(
      rowsOf('os-v7', 5).map((r) => ({
        site_id: siteId,
        visitor_id: 'os-v7',
        profile_id: null,
        zone_id: r.zoneId,
        variant_id: r.variantId,
        experiment_id: r.experimentId,
        arm_id: r.armId,
        holdout: 0,
        url: '/p',
        created_at: r.at,
      })),
    );
    // The arms read back as a decision reads them.
    expect((await store.exposures.decisionFacts(siteId, 'os-v3')).earlierArms).toEqual(new Map([['exp_1', 'arm_1']]));
  });

  it('an operation whose rows fail stores nothing and fails alone; the others of its statement are stored', async () => {
    const good = ['os-g1', 'os-g2', 'os-g3'];
    const results = await Promise.allSettled([
      ...good.map((v) => store.write((tx) => tx.exposures.insert(rowsOf(v, 3)), { key: v, oneStatement: true })),
      // zone_id is NOT NULL: this operation's rows are refused by the database.
      store.write((tx) => tx.exposures.insert(rowsOf('os-bad', 3, null)), { key: 'os-bad', oneStatement: true }),
    ]);
    expect(results.slice(0, 3).map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
    expect(results[3]!.status).toBe('rejected');
    expect(String((results[3] as PromiseRejectedResult).reason)).toMatch(/zone_id/);
    for (const v of good) expect(await stored(v), v).toBe(3);
    expect(await stored('os-bad')).toBe(0);
  });

  it("one decision's rows (one site, visitor, profile, URL and time; SQLite binds those once) are stored as given, in order; a bad row stores none of them", async () => {
    const decision = (visitorId: string, zoneOf: (i: number) => string | null): ExposureInsert[] =>
      Array.from({ length: 5 }, (_, i) => ({
        siteId,
        visitorId,
        profileId: 'prof_1',
        zoneId: zoneOf(i) as string,
        variantId: i === 2 ? null : `var_${i}`,
        experimentId: i === 1 ? 'exp_9' : null,
        armId: i === 1 ? 'arm_9b' : null,
        holdout: i === 3,
        url: 'https://shop.example/p?q="é"',
        at: 1_700_000_123_456,
      }));
    const results = await Promise.allSettled([
      store.write((tx) => tx.exposures.insert(decision('os-d1', (i) => `zone_${4 - i}`)), { key: 'os-d1', ack: 'commit', oneStatement: true }),
      store.write((tx) => tx.exposures.insert(decision('os-dbad', (i) => (i === 4 ? null : `zone_${i}`))), { key: 'os-dbad', ack: 'commit', oneStatement: true }),
      store.write((tx) => tx.exposures.insert(decision('os-d2', (i) => `zone_${i}`)), { key: 'os-d2', ack: 'commit', oneStatement: true }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(String((results[1] as PromiseRejectedResult).reason)).toMatch(/zone_id/);
    expect(await stored('os-dbad')).toBe(0);
    for (const v of ['os-d1', 'os-d2']) {
      const back = await store.sql.all<Record<string, unknown>>(
        'SELECT site_id, visitor_id, profile_id, zone_id, variant_id, experiment_id, arm_id, holdout, url, created_at FROM exposures WHERE site_id = ? AND visitor_id = ? ORDER BY id',
        [siteId, v],
      );
      expect(back.map((r) => ({ ...r, holdout: Number(r.holdout), created_at: Number(r.created_at) }))).toEqual(
        decision(v, (i) => (v === 'os-d1' ? `zone_${4 - i}` : `zone_${i}`)).map((r) => ({
          site_id: siteId,
          visitor_id: v,
          profile_id: 'prof_1',
          zone_id: r.zoneId,
          variant_id: r.variantId,
          experiment_id: r.experimentId,
          arm_id: r.armId,
          holdout: r.holdout ? 1 : 0,
          url: r.url,
          created_at: r.at,
        })),
      );
      if (!onPg) expect((await store.sql.get<{ t: string }>('SELECT typeof(created_at) || typeof(holdout) AS t FROM exposures WHERE site_id = ? AND visitor_id = ? LIMIT 1', [siteId, v]))!.t).toBe('integerinteger');
      expect((await store.exposures.decisionFacts(siteId, v)).earlierArms).toEqual(new Map([['exp_9', 'arm_9b']]));
    }
  });

  it('refuses a second statement on PostgreSQL (it would commit apart from the first)', async () => {
    const write = store.write(
      async (tx) => {
        await tx.exposures.insert(rowsOf('os-two', 1));
        await tx.exposures.insert(rowsOf('os-two', 1));
      },
      { oneStatement: true },
    );
    if (onPg) {
      await expect(write).rejects.toThrow(/second statement/);
      expect(await stored('os-two')).toBe(1);
    } else {
      await write;
      expect(await stored('os-two')).toBe(2);
    }
    // The runner goes on serving writes of both kinds.
    await store.write((tx) => tx.exposures.insert(rowsOf('os-after', 2)), { oneStatement: true });
    await store.write((tx) => tx.exposures.insert(rowsOf('os-after', 1)));
    expect(await stored('os-after')).toBe(3);
  });
});

describe('decisions merged in a group transaction (WriteOptions.merge, SQLite)', () => {
  /** One decision's rows: `n` zones, the first in test `exp` with arm `arm`, shared values unless `urlPerRow`. */
  /** A merge function (WriteOptions.merge.by) that records how many items each call got, then stores them. */
  const countingMerge =
    (calls: number[]) =>
    (tx: Parameters<Parameters<Store['write']>[0]>[0], items: readonly ExposureInsert[][]) => {
      calls.push(items.length);
      return tx.exposures.insertDecisions(items);
    };
  const decision = (visitorId: string, n: number, opts: { exp?: string; arm?: string; urlPerRow?: boolean; zone?: (i: number) => string | null } = {}): ExposureInsert[] =>
    Array.from({ length: n }, (_, i) => ({
      siteId,
      visitorId,
      profileId: visitorId.endsWith('2') ? 'prof_m' : null,
      zoneId: (opts.zone ? opts.zone(i) : `zone_${i}`) as string,
      variantId: i === 1 ? null : `var_${visitorId}_${i}`,
      experimentId: i === 0 && opts.exp !== undefined ? opts.exp : null,
      armId: i === 0 && opts.arm !== undefined ? opts.arm : null,
      holdout: i === 2,
      url: opts.urlPerRow === true ? `/u${i}` : `/page/${visitorId}`,
      at: 1_700_000_500_000,
    }));
  const backInOrder = async (prefix: string) =>
    (
      await store.sql.all<Record<string, unknown>>(
        'SELECT visitor_id, profile_id, zone_id, variant_id, experiment_id, arm_id, holdout, url, created_at FROM exposures WHERE site_id = ? AND visitor_id LIKE ? ORDER BY id',
        [siteId, `${prefix}%`],
      )
    ).map((r) => ({ ...r, holdout: Number(r.holdout), created_at: Number(r.created_at) }));
  const asStored = (rows: ExposureInsert[]) =>
    rows.map((r) => ({
      visitor_id: r.visitorId,
      profile_id: r.profileId,
      zone_id: r.zoneId,
      variant_id: r.variantId,
      experiment_id: r.experimentId,
      arm_id: r.armId,
      holdout: r.holdout ? 1 : 0,
      url: r.url,
      created_at: r.at,
    }));

  it('consecutive operations run as one call with their items in order; rows stored in submission order, the first arm of the first decision kept', async () => {
    const calls: number[] = [];
    const by = countingMerge(calls);
    // Same visitor twice in one group with different arms (a force_arm override between them): the first stays.
    const decisions = [
      decision('mg-a1', 5, { exp: 'exp_m', arm: 'arm_m1' }),
      decision('mg-a2', 5),
      decision('mg-a1', 5, { exp: 'exp_m', arm: 'arm_m2' }),
      decision('mg-a3', 3, { exp: 'exp_n', arm: 'arm_n1' }),
      decision('mg-a4', 1),
      decision('mg-a5', 4, { urlPerRow: true }),
      decision('mg-a6', 70),
      decision('mg-a7', 5),
    ];
    const results = await Promise.all(
      decisions.map((rows) => store.write((tx) => tx.exposures.insert(rows), { key: rows[0]!.visitorId, ack: 'commit', oneStatement: true, merge: { by, item: rows } })),
    );
    expect(results).toEqual(decisions.map(() => undefined));
    // PostgreSQL ignores merge (oneStatement groups there); SQLite's writer merges the group's eight operations.
    expect(calls).toEqual(onPg ? [] : [8]);
    const back = await backInOrder('mg-a');
    if (onPg) expect(back.length).toBe(decisions.reduce((a, d) => a + d.length, 0));
    else expect(back).toEqual(asStored(decisions.flat()));
    expect((await store.exposures.decisionFacts(siteId, 'mg-a1')).earlierArms).toEqual(new Map([['exp_m', 'arm_m1']]));
    expect((await store.exposures.decisionFacts(siteId, 'mg-a3')).earlierArms).toEqual(new Map([['exp_n', 'arm_n1']]));
  });

  it('insertDecisions: more decisions than one statement takes are stored in order all the same', async () => {
    // 40 decisions of 5 rows: 32 in a statement at most (SQLite), then 8; and 60 of 5 with one of 6 in the middle.
    const many = Array.from({ length: 40 }, (_, i) => decision(`mh-b${String(i).padStart(2, '0')}`, 5, i % 3 === 0 ? { exp: `exp_h${i % 4}`, arm: `arm_h${i}` } : {}));
    await store.write((tx) => tx.exposures.insertDecisions(many));
    expect(await backInOrder('mh-b')).toEqual(asStored(many.flat()));
    const mixed = Array.from({ length: 60 }, (_, i) => decision(`mh-c${String(i).padStart(2, '0')}`, i === 30 ? 6 : 5));
    await store.write((tx) => tx.exposures.insertDecisions(mixed));
    expect(await backInOrder('mh-c')).toEqual(asStored(mixed.flat()));
    for (let i = 0; i < 40; i += 3) expect((await store.exposures.decisionFacts(siteId, `mh-b${String(i).padStart(2, '0')}`)).earlierArms).toEqual(new Map([[`exp_h${i % 4}`, `arm_h${i}`]]));
  });

  it('insertDecisions outside a transaction (autocommit) stores none of a statement that fails', async () => {
    const bad = decision('ma-bad', 5, { zone: (i) => (i === 3 ? null : `zone_${i}`) });
    await expect(store.exposures.insertDecisions([decision('ma-1', 5, { exp: 'exp_a', arm: 'arm_a' }), bad])).rejects.toThrow(/zone_id/);
    expect(await stored('ma-bad')).toBe(0);
    // SQLite: one statement for both, so the good decision before the bad one is not stored either; PostgreSQL: one each.
    expect(await stored('ma-1')).toBe(onPg ? 5 : 0);
    expect((await store.exposures.decisionFacts(siteId, 'ma-1')).earlierArms).toEqual(onPg ? new Map([['exp_a', 'arm_a']]) : new Map());
  });

  it('a faulty decision fails alone: the merged call fails, the group runs again with each operation alone, the others are stored', async () => {
    const calls: number[] = [];
    const alone: string[] = [];
    const by = countingMerge(calls);
    const decisions = [
      decision('mf-1', 5, { exp: 'exp_f', arm: 'arm_f1' }),
      decision('mf-2', 5),
      // zone_id is NOT NULL: this decision's last row is refused.
      decision('mf-bad', 5, { exp: 'exp_f', arm: 'arm_fx', zone: (i) => (i === 4 ? null : `zone_${i}`) }),
      decision('mf-3', 5, { exp: 'exp_f', arm: 'arm_f3' }),
    ];
    const results = await Promise.allSettled(
      decisions.map((rows) =>
        store.write(
          (tx) => {
            alone.push(rows[0]!.visitorId);
            return tx.exposures.insert(rows);
          },
          { key: rows[0]!.visitorId, ack: 'commit', oneStatement: true, merge: { by, item: rows } },
        ),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect(String((results[2] as PromiseRejectedResult).reason)).toMatch(/zone_id/);
    if (!onPg) {
      expect([...calls]).toEqual([4]);
      expect(alone).toEqual(['mf-1', 'mf-2', 'mf-bad', 'mf-3']);
      expect(await backInOrder('mf-')).toEqual(asStored([...decisions[0]!, ...decisions[1]!, ...decisions[3]!]));
    }
    expect(await stored('mf-bad')).toBe(0);
    // A lone operation is a call of `by` with its one item (SQLite: the OR FAIL form for one decision too).
    await store.write((tx) => tx.exposures.insert(decisions[1]!.map((r) => ({ ...r, visitorId: 'mf-4' }))), {
      merge: { by, item: decisions[1]!.map((r) => ({ ...r, visitorId: 'mf-4' })) },
    });
    expect(calls).toEqual(onPg ? [] : [4, 1]);
    expect(await stored('mf-4')).toBe(5);
    for (const v of ['mf-1', 'mf-2', 'mf-3']) expect(await stored(v), v).toBe(5);
    expect((await store.exposures.decisionFacts(siteId, 'mf-bad')).earlierArms).toEqual(new Map());
    expect((await store.exposures.decisionFacts(siteId, 'mf-3')).earlierArms).toEqual(new Map([['exp_f', 'arm_f3']]));
  });
});

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

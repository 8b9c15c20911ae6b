/**
 * Experiment results read first_arms (SQLite migration 29, PostgreSQL 21) instead of ranking the exposures: the same
 * numbers as the query over the exposures they replace, kept here word for word as the oracle, on the same data, on
 * the store of this run (SQLite, and PostgreSQL in the pg-unit project). The data: visitors with repeated exposures,
 * anonymous ones with and without a profile on their exposures, one identified later, one whose profile is merged,
 * holdout visitors (only holdout exposures; a holdout exposure first and then one outside), exposures after `until`,
 * rows inserted out of time order and two arms at the same time, rows without a test, another test and another site.
 * The exposures go in through every writer: svc's insert (SQLite: one decision's statement; PostgreSQL: the CTE),
 * SQLite's OR FAIL statement of a group's decisions and a plain INSERT (the release before: the trigger keeps first
 * arms), and PostgreSQL's checked statement (insertIfFacts, whose first-arm rows go only for a new test or another
 * profile id).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/store.js';
import type { ExposureInsert } from '../../src/store/exposures.js';
import { cleanup, tempDir } from '../helpers/svc.js';
import { openTestStore } from '../helpers/store.js';

/** The results query before first_arms (src/store/experiments.ts until migration 29), the oracle. */
const OLD_AGGREGATES = `
WITH ranked AS (
  SELECT visitor_id, arm_id, created_at,
    MAX(profile_id) OVER (PARTITION BY visitor_id) AS exposure_profile,
    ROW_NUMBER() OVER (PARTITION BY visitor_id ORDER BY created_at, arm_id) AS rn
   FROM exposures
  WHERE site_id = ? AND experiment_id = ? AND arm_id IS NOT NULL AND holdout = 0 AND created_at < ?
), mapped AS (
  SELECT r.visitor_id, r.arm_id, r.created_at AS first_at, COALESCE(i.profile_id, r.exposure_profile) AS profile_id
    FROM ranked r LEFT JOIN identities i ON i.site_id = ? AND i.kind = 'visitor' AND i.value = r.visitor_id
   WHERE r.rn = 1
), conv AS (
  SELECT m.visitor_id, m.arm_id, COUNT(c.id) AS n_conv, COALESCE(SUM(c.revenue), 0) AS rev
    FROM mapped m LEFT JOIN conversions c ON c.profile_id = m.profile_id AND c.created_at >= m.first_at AND c.created_at < ?
   GROUP BY m.visitor_id, m.arm_id
), evt AS (
  SELECT m.visitor_id, COUNT(ev.id) AS n_evt
    FROM mapped m JOIN events ev ON ev.profile_id = m.profile_id AND ev.type = ? AND ev.ts >= m.first_at AND ev.ts < ?
   GROUP BY m.visitor_id
)
SELECT conv.arm_id, COUNT(*) AS visitors,
  SUM(CASE WHEN conv.n_conv > 0 THEN 1 ELSE 0 END) AS converters,
  SUM(conv.n_conv) AS conversions,
  SUM(conv.rev) AS revenue,
  SUM(conv.rev * conv.rev) AS revenue_sq,
  SUM(CASE WHEN evt.n_evt > 0 THEN 1 ELSE 0 END) AS event_visitors
FROM conv LEFT JOIN evt ON evt.visitor_id = conv.visitor_id
GROUP BY conv.arm_id`;

/** The visitor arm's read before first_arms (ExperimentsRepo.firstExposure), the oracle. */
const OLD_FIRST_EXPOSURE = `SELECT arm_id, created_at FROM exposures WHERE site_id = ? AND visitor_id = ? AND experiment_id = ? AND arm_id IS NOT NULL AND holdout = 0
        ORDER BY created_at, arm_id LIMIT 1`;

let dataDir: string;
let store: Store;
const T = 1_700_000_000_000;
const pg = () => store.dialect !== 'sqlite';

async function run(sql: string, ...params: unknown[]): Promise<void> {
  await store.write((tx) => tx.sql.run(sql, params).then(() => undefined));
}

type Row = [visitor: string, experiment: string | null, arm: string | null, at: number, o?: { profile?: string; holdout?: boolean; site?: string; zone?: string }];

function exposure([visitor, experiment, arm, at, o = {}]: Row): ExposureInsert {
  return {
    siteId: o.site ?? 's1',
    visitorId: visitor,
    profileId: o.profile ?? null,
    zoneId: o.zone ?? 'z1',
    variantId: null,
    experimentId: experiment,
    armId: arm,
    holdout: o.holdout ?? false,
    url: '/pricing',
    at: T + at,
  };
}

let turn = 0;
/**
 * One decision's rows (one visitor, profile and time), through a writer that changes from call to call: svc's insert;
 * on SQLite the OR FAIL statement of a group's decisions and a plain INSERT a row; on PostgreSQL the checked statement.
 */
async function decision(...rows: Row[]): Promise<void> {
  const ins = rows.map(exposure);
  const how = turn++ % 3;
  if (how === 0) return store.write((tx) => tx.exposures.insert(ins));
  if (!pg()) {
    if (how === 1) return store.write((tx) => tx.exposures.insertDecisions([ins]));
    for (const e of ins) {
      await run(
        'INSERT INTO exposures (site_id, visitor_id, profile_id, zone_id, variant_id, experiment_id, arm_id, holdout, url, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
        e.siteId,
        e.visitorId,
        e.profileId,
        e.zoneId,
        e.variantId,
        e.experimentId,
        e.armId,
        e.holdout ? 1 : 0,
        e.url,
        e.at,
      );
    }
    return;
  }
  const expected = (await store.exposures.decisionFactsRead(ins[0]!.siteId, ins[0]!.visitorId)).rows;
  const got = await store.write((tx) => tx.exposures.insertIfFacts(expected, ins), { oneStatement: true });
  expect(got).toBeNull();
}

const conversion = (id: string, profile: string, revenue: number | null, at: number) =>
  run("INSERT INTO conversions (id, site_id, session_id, profile_id, revenue, currency, line_items, created_at) VALUES (?, 's1', 'x', ?, ?, 'USD', '[]', ?)", id, profile, revenue, T + at);
const signup = (profile: string, at: number) =>
  run("INSERT INTO events (site_id, session_id, profile_id, visitor_id, type, ts, body, received_at) VALUES ('s1', 'x', ?, NULL, 'signup', ?, '{}', ?)", profile, T + at, T + at);
const identity = (visitor: string, profile: string) =>
  run("INSERT INTO identities (site_id, kind, value, profile_id, created_at) VALUES ('s1', 'visitor', ?, ?, ?)", visitor, profile, T);

const VISITORS = ['v1', 'v2', 'v3', 'v4', 'v5', 'v6', 'v7', 'v8', 'v9', 'v10', 'v11', 'v12', 'nobody'];

beforeAll(async () => {
  dataDir = tempDir();
  store = await openTestStore(dataDir, { poolSize: 2, statementTimeoutMs: 0 });
  // v1: anonymous, no profile, three exposures to A; converts nothing.
  await decision(['v1', 'exp_r', 'arm_a', 100], ['v1', null, null, 100, { zone: 'z2' }]);
  await decision(['v1', 'exp_r', 'arm_a', 200]);
  await decision(['v1', 'exp_r', 'arm_a', 300]);
  // v2: anonymous profile p2a on its first exposures (B), then identified: its identity names p2b, exposures carry p2b.
  await decision(['v2', 'exp_r', 'arm_b', 110, { profile: 'p2a' }]);
  await identity('v2', 'p2b');
  await decision(['v2', 'exp_r', 'arm_b', 400, { profile: 'p2b' }], ['v2', 'exp_other', 'arm_o1', 400, { profile: 'p2b', zone: 'z2' }]);
  await conversion('c2a', 'p2a', 7, 150);
  await conversion('c2b', 'p2b', 20, 450);
  await conversion('c2c', 'p2b', 5, 50);
  await signup('p2b', 500);
  // v3: profile p3a, merged into p3z later (identity, conversions and events move); exposures after with p3z.
  await identity('v3', 'p3a');
  await decision(['v3', 'exp_r', 'arm_a', 120, { profile: 'p3a' }]);
  await conversion('c3a', 'p3a', 11, 130);
  await signup('p3a', 140);
  await store.write((tx) => tx.profiles.mergeInto('p3a', 'p3z', T + 600));
  await decision(['v3', 'exp_r', 'arm_a', 700, { profile: 'p3z' }]);
  await conversion('c3z', 'p3z', 3, 800);
  // v4: in the holdout, forced into B: holdout exposures only (results never counted them).
  await decision(['v4', 'exp_r', 'arm_b', 100, { profile: 'p4', holdout: true }]);
  await decision(['v4', 'exp_r', 'arm_b', 200, { profile: 'p4', holdout: true }]);
  await conversion('c4', 'p4', 99, 300);
  // v5: a holdout exposure (forced, C) first, then outside the holdout (A): counted in A from its first exposure outside.
  await decision(['v5', 'exp_r', 'arm_c', 100, { profile: 'p5', holdout: true }]);
  await decision(['v5', 'exp_r', 'arm_a', 300, { profile: 'p5' }]);
  await conversion('c5a', 'p5', 1, 200);
  await conversion('c5b', 'p5', 2, 350);
  // v6: exposed only after the earlier `until`s.
  await decision(['v6', 'exp_r', 'arm_b', 5000, { profile: 'p6' }]);
  await conversion('c6', 'p6', 4, 6000);
  // v7: rows inserted out of time order (B at 700 first, then A at 600): A, from 600.
  await decision(['v7', 'exp_r', 'arm_b', 700, { profile: 'p7' }]);
  await decision(['v7', 'exp_r', 'arm_a', 600, { profile: 'p7' }]);
  await conversion('c7', 'p7', 8, 650);
  await signup('p7', 690);
  // v8: two arms at the same time (C inserted first): the lower arm id, A.
  await decision(['v8', 'exp_r', 'arm_c', 800, { profile: 'p8' }]);
  await decision(['v8', 'exp_r', 'arm_a', 800, { profile: 'p8' }]);
  await conversion('c8', 'p8', 6, 850);
  // v9: A, later forced into C (outside the holdout): stays in A.
  await decision(['v9', 'exp_r', 'arm_a', 100, { profile: 'p9' }]);
  await decision(['v9', 'exp_r', 'arm_c', 900, { profile: 'p9' }]);
  await conversion('c9', 'p9', 9, 950);
  // v10: no identity, a profile on its exposures (as an exposure written before its identity was erased).
  await decision(['v10', 'exp_r', 'arm_c', 100, { profile: 'p10' }]);
  await conversion('c10', 'p10', 10, 120);
  // v11: no identity, two profile ids on its exposures: the larger one counts.
  await decision(['v11', 'exp_r', 'arm_b', 100, { profile: 'p11a' }]);
  await decision(['v11', 'exp_r', 'arm_b', 200, { profile: 'p11b' }]);
  await conversion('c11a', 'p11a', 100, 300);
  await conversion('c11b', 'p11b', 13, 300);
  // v12: repeated exposures in one decision (two zones of the test), A and later.
  await decision(['v12', 'exp_r', 'arm_a', 100, { profile: 'p12' }], ['v12', 'exp_r', 'arm_a', 100, { profile: 'p12', zone: 'z2' }]);
  await decision(['v12', 'exp_r', 'arm_a', 150, { profile: 'p12' }], ['v12', 'exp_r', 'arm_a', 150, { profile: 'p12', zone: 'z2' }]);
  await conversion('c12', 'p12', null, 160);
  // Another site's visitor of the same id and test.
  await decision(['v1', 'exp_r', 'arm_c', 50, { site: 's2', profile: 'p2b' }]);
});

afterAll(async () => {
  await store?.close();
  cleanup(dataDir);
});

/** A map of aggregates as plain, sorted entries (numbers as numbers). */
async function oracle(siteId: string, experimentId: string, metricEvent: string | null, until: number) {
  const rows = await store.sql.all<Record<string, unknown>>(OLD_AGGREGATES, [siteId, experimentId, until, siteId, until, metricEvent ?? '', until]);
  return rows
    .map((r) => ({
      arm: String(r.arm_id),
      visitors: Number(r.visitors),
      converters: Number(r.converters ?? 0),
      conversions: Number(r.conversions ?? 0),
      revenue: Number(r.revenue ?? 0),
      revenueSq: Number(r.revenue_sq ?? 0),
      eventVisitors: Number(r.event_visitors ?? 0),
    }))
    .sort((a, b) => (a.arm < b.arm ? -1 : 1));
}

async function results(siteId: string, experimentId: string, metricEvent: string | null, until: number) {
  const m = await store.experiments.aggregates(siteId, experimentId, metricEvent, until);
  return [...m].map(([arm, a]) => ({ arm, ...a })).sort((a, b) => (a.arm < b.arm ? -1 : 1));
}

describe(`experiment results from first arms (${process.env.SVC_TEST_BACKEND === 'pg' ? 'PostgreSQL' : 'SQLite'})`, () => {
  it('equal what the ranking of the exposures gave, at every `until`, with and without a metric event', async () => {
    let compared = 0;
    for (const until of [T + 101, T + 115, T + 250, T + 650, T + 750, T + 1000, T + 10_000]) {
      for (const metric of ['signup', null]) {
        for (const [site, experiment] of [
          ['s1', 'exp_r'],
          ['s1', 'exp_other'],
          ['s2', 'exp_r'],
          ['s1', 'exp_none'],
        ] as const) {
          const want = await oracle(site, experiment, metric, until);
          expect(await results(site, experiment, metric, until), `${site} ${experiment} ${metric} ${until - T}`).toEqual(want);
          compared += want.length;
        }
      }
    }
    expect(compared).toBeGreaterThan(30);
    // The data reach every case: at the end, A holds v1, v3, v5, v7, v8, v9, v12; B v2, v6, v11; C v10.
    const end = await results('s1', 'exp_r', 'signup', T + 10_000);
    expect(end.map((a) => [a.arm, a.visitors])).toEqual([
      ['arm_a', 7],
      ['arm_b', 3],
      ['arm_c', 1],
    ]);
    // B: v2 through its identity (p2b: 20 at 450, not 5 at 50 before its first exposure), v6 (4), v11 through the larger
    // profile id p11b (13); p2b's signup at 500.
    expect(end.find((a) => a.arm === 'arm_b')).toEqual({ arm: 'arm_b', visitors: 3, converters: 3, conversions: 3, revenue: 37, revenueSq: 400 + 16 + 169, eventVisitors: 1 });
  });

  it('give the visitor arm (first exposure outside the holdout) the ranking gave', async () => {
    for (const v of VISITORS) {
      for (const [site, experiment] of [
        ['s1', 'exp_r'],
        ['s1', 'exp_other'],
        ['s2', 'exp_r'],
      ] as const) {
        const want = await store.sql.get<{ arm_id: string; created_at: number | string }>(OLD_FIRST_EXPOSURE, [site, v, experiment]);
        const got = await store.experiments.firstExposure(site, experiment, v);
        expect(got && { arm_id: got.arm_id, created_at: Number(got.created_at) }, `${site} ${experiment} ${v}`).toEqual(want && { arm_id: want.arm_id, created_at: Number(want.created_at) });
      }
    }
    expect(await store.experiments.firstExposure('s1', 'exp_r', 'v4')).toBeUndefined();
    expect(await store.experiments.firstExposure('s1', 'exp_r', 'v7')).toEqual({ arm_id: 'arm_a', created_at: T + 600 });
  });

  it('differ only where a visitor without an identity has a larger profile id on an exposure after `until` (documented)', async () => {
    // v13: no identity; p13a on its exposure before `until`, p13b (larger) after it. The exposures read took p13a
    // (their profile ids before `until`), first_arms keeps p13b (the largest of all): svc writes a profile id on an
    // exposure only from the visitor's identity, so this needs an identity erased (its conversions erased with it).
    await decision(['v13', 'exp_d', 'arm_a', 100, { profile: 'p13a' }]);
    await decision(['v13', 'exp_d', 'arm_a', 2000, { profile: 'p13b' }]);
    await conversion('c13a', 'p13a', 1, 200);
    await conversion('c13b', 'p13b', 2, 300);
    expect((await oracle('s1', 'exp_d', null, T + 1000))[0]).toMatchObject({ visitors: 1, conversions: 1, revenue: 1 });
    expect((await results('s1', 'exp_d', null, T + 1000))[0]).toMatchObject({ visitors: 1, conversions: 1, revenue: 2 });
    // Past the later exposure both take p13b.
    expect(await results('s1', 'exp_d', null, T + 3000)).toEqual(await oracle('s1', 'exp_d', null, T + 3000));
  });
});

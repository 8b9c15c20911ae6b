/**
 * The layout-test repository on the store of the project (SQLite, and PostgreSQL in the pg
 * project): per-arm aggregates (first exposure, visitor → profile mapping, time bounds, custom
 * events), p75 of the vitals, and which tests a web_vitals event counts for.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/store.js';
import { recordWebVitals } from '../../src/domain/experiments/vitals.js';
import { cleanup, tempDir } from '../helpers/svc.js';
import { openTestStore } from '../helpers/store.js';

let dataDir: string;
let store: Store;
const T = 1_700_000_000_000;

async function run(sql: string, ...params: unknown[]): Promise<void> {
  await store.write(async (tx) => {
    await tx.sql.run(sql, params);
  });
}

/** An exposure as svc stores it (first_arms kept in the same statement on either store). */
async function exposure(visitor: string, experiment: string, arm: string, at: number, o: { profile?: string; holdout?: number; url?: string } = {}) {
  await store.write((tx) =>
    tx.exposures.insert([
      {
        siteId: 's1',
        visitorId: visitor,
        profileId: o.profile ?? null,
        zoneId: 'z1',
        variantId: null,
        experimentId: experiment,
        armId: arm,
        holdout: o.holdout === 1,
        url: o.url ?? 'https://shop.example/pricing',
        at,
      },
    ]),
  );
}

async function conversion(id: string, profile: string, revenue: number | null, at: number) {
  await run("INSERT INTO conversions (id, site_id, session_id, profile_id, revenue, currency, line_items, created_at) VALUES (?, 's1', 'x', ?, ?, 'USD', '[]', ?)", id, profile, revenue, at);
}

beforeAll(async () => {
  dataDir = tempDir();
  store = await openTestStore(dataDir, { poolSize: 2, statementTimeoutMs: 0 });
  await store.write(async (tx) => {
    // The tests run on the /pricing page: web vitals count for a test on its page's URLs.
    const pageId = await tx.pages.insert({ siteId: 's1', name: 'pricing', matchType: 'exact', pattern: '/pricing', now: T });
    for (const [id, status] of [
      ['exp_a', 'running'],
      ['exp_other', 'running'],
      ['exp_draft', 'draft'],
    ] as const) {
      await tx.experiments.insert(
        {
          id,
          siteId: 's1',
          name: id,
          pageId,
          zoneId: null,
          seed: id,
          primaryMetric: 'custom_event',
          metricEvent: 'signup',
          guardrailMetrics: '["lcp"]',
          stopEarly: false,
          scheduledEndAt: null,
          createdBy: 'token:t',
          now: T,
        },
        [
          { id: `${id}_ctl`, label: 'Control', isControl: true, variantId: null, weight: 1 },
          { id: `${id}_var`, label: 'B', isControl: false, variantId: null, weight: 1 },
        ],
      );
      if (status === 'running') await tx.experiments.start(id, T);
    }
  });
  // v1: control, profile on the exposure; converts twice after exposure, once before.
  await exposure('v1', 'exp_a', 'exp_a_ctl', T + 100, { profile: 'p1' });
  await exposure('v1', 'exp_a', 'exp_a_ctl', T + 200, { profile: 'p1' });
  await conversion('c1', 'p1', 10, T + 150);
  await conversion('c2', 'p1', 5, T + 300);
  await conversion('c0', 'p1', 999, T + 50);
  // v2: first exposed to the variant, later (forced) to the control: counted in the variant only.
  await exposure('v2', 'exp_a', 'exp_a_var', T + 100);
  await exposure('v2', 'exp_a', 'exp_a_ctl', T + 500);
  await run("INSERT INTO identities (site_id, kind, value, profile_id, created_at) VALUES ('s1', 'visitor', 'v2', 'p2', ?)", T);
  await conversion('c3', 'p2', null, T + 600);
  await run("INSERT INTO events (site_id, session_id, profile_id, visitor_id, type, ts, body, received_at) VALUES ('s1', 'x', 'p2', 'v2', 'signup', ?, '{}', ?)", T + 700, T + 700);
  await run("INSERT INTO events (site_id, session_id, profile_id, visitor_id, type, ts, body, received_at) VALUES ('s1', 'x', 'p2', 'v2', 'signup', ?, '{}', ?)", T + 50, T + 50);
  // v3: variant, converts after `until`; v4: holdout only; v5: another test.
  await exposure('v3', 'exp_a', 'exp_a_var', T + 100, { profile: 'p3' });
  await conversion('c4', 'p3', 40, T + 5000);
  await exposure('v4', 'exp_a', 'exp_a_var', T + 100, { profile: 'p4', holdout: 1 });
  await exposure('v5', 'exp_other', 'exp_other_var', T + 100, { profile: 'p5' });
  // v6: exposed to a draft test (not running) on /pricing.
  await exposure('v6', 'exp_draft', 'exp_draft_var', T + 100);
});

afterAll(async () => {
  await store?.close();
  cleanup(dataDir);
});

describe('experiments repository', () => {
  it('aggregates each visitor in the arm of its first exposure, with what its profile did after it and before the end', async () => {
    const agg = await store.experiments.aggregates('s1', 'exp_a', 'signup', T + 1000);
    expect(agg.get('exp_a_ctl')).toEqual({ visitors: 1, converters: 1, conversions: 2, revenue: 15, revenueSq: 225, eventVisitors: 0 });
    // v2 (through its visitor identity: 1 conversion without revenue, 1 signup after exposure) and v3 (converts after the end).
    expect(agg.get('exp_a_var')).toEqual({ visitors: 2, converters: 1, conversions: 1, revenue: 0, revenueSq: 0, eventVisitors: 1 });
    const later = await store.experiments.aggregates('s1', 'exp_a', null, T + 10_000);
    expect(later.get('exp_a_var')).toMatchObject({ visitors: 2, converters: 2, conversions: 2, revenue: 40, revenueSq: 1600, eventVisitors: 0 });
    expect((await store.experiments.aggregates('s1', 'exp_a', null, T + 101)).get('exp_a_var')!.visitors).toBe(2);
    expect((await store.experiments.aggregates('s2', 'exp_a', null, T + 10_000)).size).toBe(0);
  });

  it("finds the first exposure and counts web vitals for running tests on the test's page only", async () => {
    expect(await store.experiments.firstExposure('s1', 'exp_a', 'v2')).toEqual({ arm_id: 'exp_a_var', created_at: T + 100 });
    expect(await store.experiments.firstExposure('s1', 'exp_a', 'nobody')).toBeUndefined();
    const counted = (visitor: string, url: unknown) => store.write((tx) => recordWebVitals(tx, 's1', visitor, url, { lcp: 1000 }, T + 800));
    expect(await counted('v2', 'https://shop.example/pricing?utm=x')).toBe(1);
    expect(await counted('v2', 'https://shop.example/blog')).toBe(0);
    expect(await counted('v2', undefined)).toBe(1);
    expect(await counted('v6', 'https://shop.example/pricing')).toBe(0);
    expect(await counted('v4', 'https://shop.example/pricing')).toBe(0);
    const armOfV2 = await store.experiments.vitalStat('exp_a', 'exp_a_var', 'lcp', 0);
    expect(armOfV2).toEqual({ n: 2, p75: 1000 });
    expect((await store.experiments.vitalStat('exp_a', 'exp_a_ctl', 'lcp', 0)).n).toBe(0);
  });

  it('computes the nearest-rank p75 of a metric, skipping page views without it and before the window', async () => {
    await store.write(async (tx) => {
      for (let i = 1; i <= 8; i++) {
        await tx.experiments.insertVitals({ siteId: 's1', experimentId: 'exp_other', armId: 'exp_other_ctl', lcp: i * 100, inp: null, cls: i % 2 === 0 ? 0.1 : null, now: T + i });
      }
    });
    expect(await store.experiments.vitalStat('exp_other', 'exp_other_ctl', 'lcp', 0)).toEqual({ n: 8, p75: 600 });
    expect(await store.experiments.vitalStat('exp_other', 'exp_other_ctl', 'inp', 0)).toEqual({ n: 0, p75: null });
    expect(await store.experiments.vitalStat('exp_other', 'exp_other_ctl', 'cls', 0)).toEqual({ n: 4, p75: 0.1 });
    // From T + 5: 500, 600, 700, 800 → rank 3 → 700.
    expect(await store.experiments.vitalStat('exp_other', 'exp_other_ctl', 'lcp', T + 5)).toEqual({ n: 4, p75: 700 });
  });
});

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openStore, type Store } from '../../src/store/store.js';
import { openPgStore } from '../../src/store/pg/store.js';
import { cleanup, tempDir } from '../helpers/svc.js';
import { databaseUrlFor, PG_BASE_URL } from '../helpers/backend.js';
import pg from 'pg';
import { decisionService } from '../../src/domain/web/decisions.js';
import { ExposuresRepo, type DecisionFacts } from '../../src/store/exposures.js';
import { pgClientConfig } from '../../src/store/pg/store.js';
import type { Sql } from '../../src/store/sql.js';
import { recordVariantRender, WATCHDOG } from '../../src/domain/web/watchdog.js';
import { validatePayload } from '../../src/webhooks/catalogue.js';

/** The web repository, the version triggers, the decision cache and the watchdog window on the store of the project (SQLite or PostgreSQL). */

let dir: string;
let store: Store;
let siteId: string;
let zoneId: string;
let contentId: string;
const WINDOW = WATCHDOG.windowMinutes * 60_000;

async function newVariant(publishedAt: number): Promise<string> {
  return store.write(async (tx) => {
    const id = await tx.variants.insert({ siteId, zoneId, contentId, segmentId: null, name: 'v', createdBy: 'test', now: publishedAt });
    await tx.variants.transition(siteId, id, 'draft', 'approved', 'test', publishedAt);
    await tx.variants.transition(siteId, id, 'approved', 'published', 'test', publishedAt);
    return id;
  });
}

const render = (variantId: string, ok: boolean, at: number) =>
  store.write((tx) => recordVariantRender(tx, siteId, { variantId, ok, error: ok ? null : 'boom' }, at));

beforeAll(async () => {
  dir = tempDir();
  store = PG_BASE_URL !== undefined ? await openPgStore({ url: databaseUrlFor(dir), dataDir: dir }) : openStore({ dataDir: dir, synchronous: 'normal' });
  siteId = (await store.write((tx) => tx.sites.create({ name: 'web' }))).id;
  const now = Date.now();
  await store.write(async (tx) => {
    const pageId = await tx.pages.insert({ siteId, name: 'p', matchType: 'exact', pattern: '/p', now });
    contentId = await tx.content.insert({ siteId, name: 'c', kind: 'html', body: '<p>c</p>', now });
    zoneId = await tx.zones.insert({ siteId, pageId, name: 'z', selector: '#z', defaultContentId: contentId, now });
  });
});

afterAll(async () => {
  await store.close();
  cleanup(dir);
});

describe('configuration version', () => {
  it('moves with every change of the web tables and of the holdout share, and not with exposures or renders', async () => {
    const v0 = await store.webConfig.version(siteId);
    expect(v0).toBeGreaterThan(0);
    await store.write((tx) => tx.pages.insert({ siteId, name: 'q', matchType: 'prefix', pattern: '/q', now: Date.now() }));
    const v1 = await store.webConfig.version(siteId);
    expect(v1).toBeGreaterThan(v0);
    await store.write((tx) => tx.sites.update(siteId, { holdout_share: 0.1 }));
    const v2 = await store.webConfig.version(siteId);
    expect(v2).toBeGreaterThan(v1);
    await store.write((tx) =>
      tx.exposures.insert([{ siteId, visitorId: 'v', profileId: null, zoneId, variantId: null, experimentId: null, armId: null, holdout: false, url: '/p', at: Date.now() }]),
    );
    expect(await store.webConfig.version(siteId)).toBe(v2);
    await store.write((tx) => tx.sites.update(siteId, { holdout_share: 0 }));
  });

  it('the decision cache serves a snapshot until the configuration changes, by any path', async () => {
    const svc = decisionService(store);
    const before = await svc.preview(siteId, 'vis', '/p');
    expect(before!.decision.zones).toHaveLength(1);
    // A change made behind the services' back (raw SQL, as another process would).
    await store.write(async (tx) => {
      await tx.sql.run('UPDATE zones SET selector = ? WHERE id = ?', ['#changed', zoneId]);
    });
    // SQLite sees the version move at once; PostgreSQL instances hear svc_web (simulated here: no listener in this store).
    if (store.dialect === 'pg') store.remoteChange('web');
    expect((await svc.preview(siteId, 'vis', '/p'))!.decision.zones[0]!.selector).toBe('#changed');
  });

  it('records exposures in one multi-row write and reads a visitor\u2019s earlier arms', async () => {
    const rows = Array.from({ length: 130 }, (_, i) => ({
      siteId,
      visitorId: 'arms',
      profileId: null,
      zoneId,
      variantId: null,
      experimentId: i % 2 === 0 ? 'exp_a' : null,
      armId: i % 2 === 0 ? (i === 0 ? 'arm_first' : 'arm_later') : null,
      holdout: i === 1,
      url: '/p',
      at: 1000 + i,
    }));
    await store.write((tx) => tx.exposures.insert(rows));
    const n = await store.sql.get<{ n: number }>("SELECT count(*) AS n FROM exposures WHERE visitor_id = 'arms'");
    expect(Number(n!.n)).toBe(130);
    expect(await store.exposures.earlierArms(siteId, 'arms')).toEqual(new Map([['exp_a', 'arm_first']]));
  });
});

describe('the facts of one decision, in one statement', () => {
  it('agree with the separate reads: profile, merged profile, missing profile, segments, earlier arms, version', async () => {
    const now = Date.now();
    await store.write(async (tx) => {
      for (const [id, merged] of [
        ['prof_live', null],
        ['prof_old', 'prof_live'],
      ] as const) {
        await tx.sql.run('INSERT INTO profiles (id, site_id, merged_into, created_at, updated_at) VALUES (?, ?, ?, ?, ?)', [id, siteId, merged, now, now]);
      }
      for (const [visitor, profile] of [
        ['f-live', 'prof_live'],
        ['f-merged', 'prof_old'],
        ['f-gone', 'prof_missing'],
      ] as const) {
        await tx.sql.run("INSERT INTO identities (site_id, kind, value, profile_id, created_at) VALUES (?, 'visitor', ?, ?, ?)", [siteId, visitor, profile, now]);
      }
      for (const seg of ['seg_fa', 'seg_fb']) await tx.sql.run('INSERT INTO segment_members (segment_id, profile_id, site_id, since) VALUES (?, ?, ?, ?)', [seg, 'prof_live', siteId, now]);
      const row = { siteId, profileId: null, zoneId, variantId: null, holdout: false, url: '/p' };
      await tx.exposures.insert([
        { ...row, visitorId: 'f-live', experimentId: 'exp_f1', armId: 'arm_f1a', at: now },
        { ...row, visitorId: 'f-live', experimentId: null, armId: null, at: now },
        { ...row, visitorId: 'f-live', experimentId: 'exp_f2', armId: 'arm_f2b', at: now },
      ]);
      await tx.exposures.insert([{ ...row, visitorId: 'f-live', experimentId: 'exp_f1', armId: 'arm_f1b', at: now + 1 }]);
      await tx.exposures.insert([{ ...row, visitorId: 'f-merged', experimentId: 'exp_f1', armId: 'arm_f1b', at: now }]);
    });
    const version = store.dialect === 'sqlite' ? await store.webConfig.version(siteId) : null;
    expect(await store.exposures.decisionFacts(siteId, 'f-live')).toEqual({
      version,
      profileId: 'prof_live',
      segmentIds: expect.arrayContaining(['seg_fa', 'seg_fb']),
      earlierArms: new Map([
        ['exp_f1', 'arm_f1a'],
        ['exp_f2', 'arm_f2b'],
      ]),
    });
    expect((await store.exposures.decisionFacts(siteId, 'f-live')).segmentIds).toHaveLength(2);
    // Merged: left to profileOf (which follows it); its arms are read all the same.
    expect(await store.exposures.decisionFacts(siteId, 'f-merged')).toEqual({ version, profileId: undefined, segmentIds: [], earlierArms: new Map([['exp_f1', 'arm_f1b']]) });
    expect(await store.exposures.decisionFacts(siteId, 'f-gone')).toEqual({ version, profileId: null, segmentIds: [], earlierArms: new Map() });
    expect(await store.exposures.decisionFacts(siteId, 'f-nobody')).toEqual({ version, profileId: null, segmentIds: [], earlierArms: new Map() });
    for (const v of ['f-live', 'f-merged', 'f-gone', 'f-nobody']) {
      expect((await store.exposures.decisionFacts(siteId, v)).earlierArms).toEqual(await store.exposures.earlierArms(siteId, v));
    }
    // Asked together (concurrent decisions), each visitor gets the same facts as asked alone; on
    // PostgreSQL the asks of one event-loop turn are one statement, the same visitor twice included.
    const visitors = ['f-live', 'f-merged', 'f-gone', 'f-nobody', 'f-live'];
    const alone: DecisionFacts[] = [];
    for (const v of visitors) alone.push(await store.exposures.decisionFacts(siteId, v));
    const counted = countStatements(store.sql);
    const repo = new ExposuresRepo(counted.sql);
    const together = await Promise.all([...visitors.map((v) => repo.decisionFacts(siteId, v)), repo.decisionFacts('site_other', 'f-live')]);
    expect(together.slice(0, visitors.length)).toEqual(alone);
    expect(together[visitors.length]).toEqual({ version: store.dialect === 'sqlite' ? 0 : null, profileId: null, segmentIds: [], earlierArms: new Map() });
    expect(counted.statements()).toBe(store.dialect === 'sqlite' ? visitors.length + 1 : 1);
    if (store.dialect === 'pg') {
      // A value PostgreSQL refuses (NUL in text) fails its own ask only: the shared statement fails, each ask runs alone.
      const mixed = await Promise.allSettled([repo.decisionFacts(siteId, 'f-live'), repo.decisionFacts(siteId, 'bad\u0000visitor'), repo.decisionFacts(siteId, 'f-merged')]);
      expect(mixed.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect((mixed[0] as PromiseFulfilledResult<DecisionFacts>).value).toEqual(alone[0]);
      expect((mixed[2] as PromiseFulfilledResult<DecisionFacts>).value).toEqual(alone[1]);
      // Planned once per connection: after the plan cache's five custom plans, the generic plan every time.
      const client = new pg.Client(pgClientConfig({ url: databaseUrlFor(dir) }));
      await client.connect();
      try {
        // Statement names are per process and bounded (pg/names.ts: 1,000 of the code's texts, 250 built at run time).
        // The unit tests share their processes (isolate: false), and earlier files' texts could take every name, leaving
        // this text unnamed and so unplanned; modules loaded afresh start with no names taken, as a server does.
        vi.resetModules();
        const fresh = {
          ...(await import('../../src/store/exposures.js')),
          ...(await import('../../src/store/pg/sql.js')),
        };
        const own = new fresh.ExposuresRepo(new fresh.PgSql(client as unknown as pg.PoolClient));
        for (let i = 0; i < 8; i++) {
          expect(await Promise.all([own.decisionFacts(siteId, 'f-live'), own.decisionFacts(siteId, `f-other-${i}`)])).toEqual([alone[0], { version: null, profileId: null, segmentIds: [], earlierArms: new Map() }]);
        }
        const plans = await client.query<{ generic_plans: string; custom_plans: string }>(
          "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE '%json_to_recordset%'",
        );
        expect(plans.rows.map((r) => [Number(r.generic_plans), Number(r.custom_plans)])).toEqual([[3, 5]]);
      } finally {
        await client.end();
      }
    }
    // What a decision uses: the merge followed, the segments of the profile it ends at.
    const svc = decisionService(store);
    for (const v of ['f-live', 'f-merged', 'f-gone', 'f-nobody']) {
      const profileId = await store.visitors.profileOf(siteId, v);
      const got = (await svc.preview(siteId, v, '/p'))!.visitor;
      expect(got.profileId, v).toBe(profileId);
      expect([...got.segmentIds].sort(), v).toEqual(profileId === null ? [] : (await store.visitors.segmentsOfProfile(profileId)).sort());
    }
    expect((await svc.preview(siteId, 'f-merged', '/p'))!.visitor.segmentIds.sort()).toEqual(['seg_fa', 'seg_fb']);
    // The version moves with the configuration.
    await store.write((tx) => tx.sql.run('UPDATE zones SET selector = ? WHERE id = ?', ['#facts', zoneId]));
    if (store.dialect === 'sqlite') expect((await store.exposures.decisionFacts(siteId, 'f-live')).version).toBe(await store.webConfig.version(siteId));
    if (store.dialect === 'sqlite') expect((await store.exposures.decisionFacts(siteId, 'f-live')).version).toBeGreaterThan(version!);
  });
});

describe('the facts of one decision on SQLite (one JSON value, the identity looked up once)', () => {
  /** The statement before (the site and the visitor bound by position, the identity looked up again for the segments): the reference. */
  const BEFORE = `SELECT 1 AS k, i.profile_id AS a, p.merged_into AS b, p.id AS c FROM identities i
  LEFT JOIN profiles p ON p.id = i.profile_id AND p.site_id = i.site_id
 WHERE i.site_id = ? AND i.kind = 'visitor' AND i.value = ?
UNION ALL
SELECT 2, experiment_id, arm_id, NULL FROM first_arms WHERE site_id = ? AND visitor_id = ?
UNION ALL
SELECT 3, m.segment_id, NULL, NULL FROM identities i JOIN profiles p ON p.id = i.profile_id AND p.site_id = i.site_id AND p.merged_into IS NULL
  JOIN segment_members m ON m.profile_id = p.id
 WHERE i.site_id = ? AND i.kind = 'visitor' AND i.value = ?`;

  it('gives the rows of the statement before, in its order, for every kind of identity', async () => {
    if (store.dialect !== 'sqlite') return; // PostgreSQL reads them with IDENTITY_FACTS_PG (store-decide-checked)
    const now = Date.now();
    await store.write(async (tx) => {
      for (const [id, site, merged] of [
        ['prof_r_segs', siteId, null],
        ['prof_r_none', siteId, null],
        ['prof_r_merged', siteId, 'prof_r_segs'],
        ['prof_r_elsewhere', 'site_r_other', null],
      ] as const) {
        await tx.sql.run('INSERT INTO profiles (id, site_id, merged_into, created_at, updated_at) VALUES (?, ?, ?, ?, ?)', [id, site, merged, now, now]);
      }
      for (const [visitor, profile] of [
        ['r-segs', 'prof_r_segs'],
        ['r-none', 'prof_r_none'],
        ['r-merged', 'prof_r_merged'],
        ['r-elsewhere', 'prof_r_elsewhere'],
        ['r-gone', 'prof_r_missing'],
      ] as const) {
        await tx.sql.run("INSERT INTO identities (site_id, kind, value, profile_id, created_at) VALUES (?, 'visitor', ?, ?, ?)", [siteId, visitor, profile, now]);
      }
      // Segments of a merged profile and of another site's profile are not the visitor's.
      // Ids JSON escapes (quotes, a backslash, a tab, non-ASCII and past U+FFFF) read back as stored.
      for (const [seg, profile] of [
        ['seg_r3 "q"\\', 'prof_r_segs'],
        ['seg_r1', 'prof_r_segs'],
        ['seg_r2\té😀', 'prof_r_segs'],
        ['seg_r1', 'prof_r_merged'],
        ['seg_r1', 'prof_r_elsewhere'],
      ] as const) {
        await tx.sql.run('INSERT INTO segment_members (segment_id, profile_id, site_id, since) VALUES (?, ?, ?, ?)', [seg, profile, siteId, now]);
      }
      const row = { siteId, profileId: null, zoneId, variantId: null, holdout: false, url: '/p' };
      for (const visitor of ['r-segs', 'r-merged', 'r-nobody', 'r-gone']) {
        await tx.exposures.insert([
          { ...row, visitorId: visitor, experimentId: 'exp_r2 "x"', armId: 'arm_r2a\\ü', at: now },
          { ...row, visitorId: visitor, experimentId: 'exp_r1', armId: 'arm_r1b', at: now },
        ]);
      }
    });
    const seen: string[] = [];
    for (const visitor of ['r-segs', 'r-none', 'r-merged', 'r-elsewhere', 'r-gone', 'r-nobody']) {
      const want = (await store.sql.all<{ k: number; a: string | null; b: string | null; c: string | null }>(BEFORE, [siteId, visitor, siteId, visitor, siteId, visitor])).map((r) => ({
        k: Number(r.k),
        a: r.a,
        b: r.b,
        c: r.c,
      }));
      const got = await store.exposures.decisionFactsRead(siteId, visitor);
      expect(got.rows, visitor).toEqual(want);
      expect(got.facts.version, visitor).toBe(await store.webConfig.version(siteId));
      seen.push(`${visitor}: ${want.map((r) => r.k).join('')}`);
    }
    // Every kind of row, a profile with three segments included, was compared.
    expect(seen).toEqual(['r-segs: 122333', 'r-none: 1', 'r-merged: 122', 'r-elsewhere: 1', 'r-gone: 122', 'r-nobody: 22']);
    expect((await store.exposures.decisionFacts(siteId, 'r-segs')).segmentIds).toEqual(['seg_r1', 'seg_r2\té😀', 'seg_r3 "q"\\']);
    expect((await store.exposures.decisionFacts(siteId, 'r-gone')).earlierArms).toEqual(new Map([['exp_r1', 'arm_r1b'], ['exp_r2 "x"', 'arm_r2a\\ü']]));
    // Another site's visitor of the same id: nothing of this site's.
    expect(await store.exposures.decisionFacts('site_r_other', 'r-segs')).toEqual({ version: 0, profileId: null, segmentIds: [], earlierArms: new Map() });
  });
});

/** `inner` with a count of the statements sent through it. */
function countStatements(inner: Sql): { sql: Sql; statements: () => number } {
  let n = 0;
  const sql = new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        n++;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { sql, statements: () => n };
}

describe('exposure indexes (the experiment and visitor indexes dropped: their readers read first_arms)', () => {
  it('leave the exposures with the primary key and the site index; results, the visitor arm and web vitals read first_arms by index', async () => {
    if (store.dialect !== 'sqlite') return; // the plans are SQLite's; PostgreSQL drops the same indexes (migration 22)
    const plan = async (sql: string, params: unknown[]) => (await store.sql.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`, params)).map((r) => r.detail).join(' | ');
    const indexes = await store.sql.all<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'exposures' AND sql IS NOT NULL ORDER BY name");
    expect(indexes.map((i) => i.name)).toEqual(['exposures_site']);
    // The reads of experiments.ts: results' first arms of a test, the visitor arm, web vitals' running first arms.
    expect(await plan('SELECT f.visitor_id FROM first_arms f WHERE f.experiment_id = ? AND f.site_id = ? AND f.created_at < ?', ['e', siteId, 1])).toMatch(/USING INDEX first_arms_experiment/);
    expect(await plan('SELECT arm_id, created_at FROM first_arms WHERE site_id = ? AND visitor_id = ? AND experiment_id = ?', [siteId, 'v', 'e'])).toMatch(/USING PRIMARY KEY/);
    expect(await plan('SELECT experiment_id, arm_id FROM first_arms WHERE site_id = ? AND visitor_id = ?', [siteId, 'v'])).toMatch(/USING PRIMARY KEY/);
  });
});

describe('watchdog window', () => {
  it('counts renders inside the last 15 minutes only, the edge included', async () => {
    const t0 = Date.now() - 2 * WINDOW;
    const v = await newVariant(t0 - 1);
    for (let i = 0; i < WATCHDOG.minRenders - 1; i++) await render(v, false, t0);
    // One more failure exactly one millisecond after the window left t0 behind: only 1 render counts.
    expect(await render(v, false, t0 + WINDOW + 1)).toEqual({ disabled: false });
    expect(await store.renders.counts(siteId, v, t0 + 1)).toEqual({ renders: 1, failures: 1 });
    expect((await store.variants.get(siteId, v))!.status).toBe('published');
    const w = await newVariant(t0 - 1);
    for (let i = 0; i < WATCHDOG.minRenders - 1; i++) await render(w, false, t0);
    // At exactly t0 + window the renders of t0 are still in: 50 renders, all failed.
    expect(await render(w, false, t0 + WINDOW)).toEqual({ disabled: true });
    const row = (await store.variants.get(siteId, w))!;
    expect(row).toMatchObject({ status: 'disabled', disabled_reason: `watchdog: 50 of 50 renders failed in the last ${WATCHDOG.windowMinutes} minutes` });
  });

  it('ignores renders from before the variant was last published', async () => {
    const now = Date.now();
    const v = await newVariant(now - 60_000);
    for (let i = 0; i < 60; i++) await render(v, false, now - 120_000 + i);
    // Published after those failures: they are history.
    await store.write((tx) => tx.sql.run('UPDATE variants SET published_at = ? WHERE id = ?', [now - 1000, v]));
    expect(await render(v, false, now)).toEqual({ disabled: false });
    expect((await store.variants.get(siteId, v))!.status).toBe('published');
  });

  it('trips at 20% with the minimum met, not at 18%, and enqueues a catalogue-valid event once', async () => {
    const now = Date.now();
    const ok = await newVariant(now - 10_000);
    for (let i = 0; i < 41; i++) await render(ok, true, now - 5000 + i);
    for (let i = 0; i < 9; i++) await render(ok, false, now - 4000 + i); // 9 of 50 = 18%
    expect((await store.variants.get(siteId, ok))!.status).toBe('published');
    const bad = await newVariant(now - 10_000);
    await store.write((tx) => tx.placements.insert({ siteId, zoneId, variantId: bad, segmentId: null, priority: 1, enabled: true, now }));
    const svc = decisionService(store);
    expect((await svc.preview(siteId, 'w', '/p'))!.decision.zones[0]).toMatchObject({ reason: 'placement', variant_id: bad });
    for (let i = 0; i < 40; i++) await render(bad, true, now - 5000 + i);
    for (let i = 0; i < 9; i++) await render(bad, false, now - 4000 + i);
    expect(await render(bad, false, now)).toEqual({ disabled: true }); // 10 of 50 = 20%
    expect(await render(bad, false, now + 1)).toEqual({ disabled: false });
    const events = await store.sql.all<{ payload: string }>("SELECT payload FROM outbox WHERE event_type = 'variant.watchdog_disabled' AND site_id = ?", [siteId]);
    const mine = events.map((e) => JSON.parse(e.payload) as { variant_id: string }).filter((p) => p.variant_id === bad);
    expect(mine).toHaveLength(1);
    expect(validatePayload('variant.watchdog_disabled', mine[0]).success).toBe(true);
    expect(mine[0]).toMatchObject({ render_attempts: 50, render_failures: 10, window_minutes: 15, zone_id: zoneId, experiment_id: null });
    // Served no more at once: the watchdog dropped the cached snapshot in its transaction.
    expect((await svc.preview(siteId, 'w', '/p'))!.decision.zones[0]).toMatchObject({ reason: 'default', variant_id: null });
  });
});

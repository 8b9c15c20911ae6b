import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { rmSync } from 'node:fs';
import pg from 'pg';
import type { Store } from '../../src/store/store.js';
import type { GroupCommitInfo } from '../../src/store/observe.js';
import { decisionService } from '../../src/domain/web/decisions.js';
import { INSERT_EXPOSURES_IF_FACTS_PG, renderFacts, type ExposureInsert, type FactsRow } from '../../src/store/exposures.js';
import { binaryTextArray, shapeOf } from '../../src/store/pg/batch.js';
import { pgClientConfig } from '../../src/store/pg/store.js';
import { databaseUrlFor, PG_BASE_URL } from '../helpers/backend.js';
import { tempDir } from '../helpers/svc.js';
import { openTestStore, publishedVariant, runningTest } from '../helpers/store.js';

/**
 * GET /api/decide on PostgreSQL decides from the visitor's facts as the instance last knew them and stores the
 * exposures with a statement that checks those facts first (ExposuresRepo.insertIfFacts): one round trip when they
 * hold; when they do not, nothing is stored and the decision is made again from the facts the statement read. Here
 * the facts change behind the decision service (as another instance's writes would), and every decision must
 * still follow the stored facts and store its rows once. The same decisions run on SQLite (facts read every time).
 */
const onPg = PG_BASE_URL !== undefined;
let dir: string;
let store: Store;
let siteId: string;

/** Every statement sent by any pg client of this process while counting. */
let statements = 0;
const origQuery = pg.Client.prototype.query;

beforeAll(async () => {
  dir = tempDir('svc-decide-checked-');
  store = await openTestStore(dir, { poolSize: 6 });
  siteId = (await store.write((tx) => tx.sites.create({ name: 'checked' }))).id;
  const now = Date.now();
  // Page /p: zone z1 holds a running test (two arms of weight 1), zone z2 a placement for segment seg_c only.
  await store.write(async (tx) => {
    const pageId = await tx.pages.insert({ siteId, name: 'p', matchType: 'exact', pattern: '/p', now });
    const contentId = await tx.content.insert({ siteId, name: 'c', kind: 'html', body: '<p>c</p>', now });
    const z1 = await tx.zones.insert({ siteId, pageId, name: 'z1', selector: '#z1', defaultContentId: contentId, now });
    const z2 = await tx.zones.insert({ siteId, pageId, name: 'z2', selector: '#z2', defaultContentId: contentId, now });
    const v1 = await publishedVariant(tx, { siteId, zoneId: z1, contentId, now });
    const v2 = await publishedVariant(tx, { siteId, zoneId: z2, contentId, now });
    await tx.placements.insert({ siteId, zoneId: z2, variantId: v2, segmentId: 'seg_c', priority: 5, enabled: true, now });
    await runningTest(tx, { siteId, id: 'exp_c', pageId, zoneId: z1, variantId: v1, arms: ['arm_cc', 'arm_cb'], now });
  });
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    statements++;
    return (origQuery as (...x: unknown[]) => unknown).apply(this, args);
  } as typeof pg.Client.prototype.query;
});

afterAll(async () => {
  pg.Client.prototype.query = origQuery;
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Changes the database behind the decision service (no cache of this process hears of it). */
const behind = (sql: string, params: unknown[] = []) => store.write((tx) => tx.sql.run(sql, params));

async function exposuresOf(visitorId: string): Promise<{ zone_id: string; arm_id: string | null; variant_id: string | null; profile_id: string | null }[]> {
  return store.sql.all('SELECT zone_id, arm_id, variant_id, profile_id FROM exposures WHERE site_id = ? AND visitor_id = ? ORDER BY id', [siteId, visitorId]);
}

async function counted<T>(work: () => Promise<T>): Promise<{ value: T; statements: number }> {
  const before = statements;
  const value = await work();
  return { value, statements: statements - before };
}

/** Rows as (zone, variant, arm), in zone order: what a decision stored against what it answered. */
const storedAs = (rows: { zone_id: string; variant_id: string | null; arm_id: string | null }[]) =>
  rows.map((r) => [r.zone_id, r.variant_id, r.arm_id]).sort((a, b) => (a[0]! < b[0]! ? -1 : 1));

const otherArm = (arm: string) => (arm === 'arm_cc' ? 'arm_cb' : 'arm_cc');

describe('decisions from the facts as stored', () => {
  it('follow first arms, profiles, segments and merges changed behind the instance, and store each decision once', async () => {
    // No snapshot reload in between (the counts below are of the decision's own statements).
    const svc = decisionService(store, { fallbackMs: 600_000 });
    const v = 'chk-1';
    const first = await svc.decideAndRecord(siteId, v, '/p');
    const arm = first!.decision.zones.find((z) => z.name === 'z1')!.arm_id!;
    expect(first!.decision.zones.find((z) => z.name === 'z2')!.reason).toBe('default');
    expect(await exposuresOf(v)).toHaveLength(2);

    // Known facts that still hold: on PostgreSQL one statement (the checked insert), no read.
    const again = await counted(() => svc.decideAndRecord(siteId, v, '/p'));
    expect(again.value!.decision.zones.find((z) => z.name === 'z1')!.arm_id).toBe(arm);
    if (onPg) expect(again.statements).toBe(1);
    expect(await exposuresOf(v)).toHaveLength(4);

    // The stored first arm is another (as if another instance had stored it first): the decision keeps that one.
    await behind('UPDATE first_arms SET arm_id = ? WHERE site_id = ? AND visitor_id = ?', [otherArm(arm), siteId, v]);
    const moved = await counted(() => svc.decideAndRecord(siteId, v, '/p'));
    expect(moved.value!.decision.zones.find((z) => z.name === 'z1')!.arm_id).toBe(otherArm(arm));
    expect(moved.value!.visitor.earlierArms).toEqual(new Map([['exp_c', otherArm(arm)]]));
    // The check failed and stored nothing; the second, from the facts it read, stored the decision.
    if (onPg) expect(moved.statements).toBe(2);
    let rows = await exposuresOf(v);
    expect(rows).toHaveLength(6);
    expect(rows.slice(4).map((r) => r.arm_id)).toEqual([otherArm(arm), null]);

    // An identity, a profile and a segment appear: the placement for the segment applies, the rows name the profile.
    const now = Date.now();
    await behind('INSERT INTO profiles (id, site_id, created_at, updated_at) VALUES (?, ?, ?, ?)', ['prof_chk', siteId, now, now]);
    await behind("INSERT INTO identities (site_id, kind, value, profile_id, created_at) VALUES (?, 'visitor', ?, ?, ?)", [siteId, v, 'prof_chk', now]);
    await behind('INSERT INTO segment_members (segment_id, profile_id, site_id, since) VALUES (?, ?, ?, ?)', ['seg_c', 'prof_chk', siteId, now]);
    const segmented = await svc.decideAndRecord(siteId, v, '/p');
    expect(segmented!.decision.zones.find((z) => z.name === 'z2')!.reason).toBe('placement');
    expect(segmented!.visitor).toEqual({ visitorId: v, profileId: 'prof_chk', segmentIds: ['seg_c'], earlierArms: new Map([['exp_c', otherArm(arm)]]) });
    rows = await exposuresOf(v);
    expect(rows).toHaveLength(8);
    expect(rows.slice(6).map((r) => r.profile_id)).toEqual(['prof_chk', 'prof_chk']);
    expect(storedAs(rows.slice(6))).toEqual(storedAs(segmented!.decision.zones));

    // The segment goes: the zone default again.
    await behind('DELETE FROM segment_members WHERE profile_id = ?', ['prof_chk']);
    expect((await svc.decideAndRecord(siteId, v, '/p'))!.decision.zones.find((z) => z.name === 'z2')!.reason).toBe('default');
    expect(await exposuresOf(v)).toHaveLength(10);

    // The profile is merged into one in the segment: the decision follows the merge, every time.
    await behind('INSERT INTO profiles (id, site_id, created_at, updated_at) VALUES (?, ?, ?, ?)', ['prof_chk2', siteId, now, now]);
    await behind('INSERT INTO segment_members (segment_id, profile_id, site_id, since) VALUES (?, ?, ?, ?)', ['seg_c', 'prof_chk2', siteId, now]);
    await behind('UPDATE profiles SET merged_into = ? WHERE id = ?', ['prof_chk2', 'prof_chk']);
    for (let i = 0; i < 2; i++) {
      const merged = await svc.decideAndRecord(siteId, v, '/p');
      expect(merged!.visitor.profileId).toBe('prof_chk2');
      expect(merged!.decision.zones.find((z) => z.name === 'z2')!.reason).toBe('placement');
    }
    await behind('DELETE FROM segment_members WHERE profile_id = ?', ['prof_chk2']);
    expect((await svc.decideAndRecord(siteId, v, '/p'))!.decision.zones.find((z) => z.name === 'z2')!.reason).toBe('default');
    rows = await exposuresOf(v);
    expect(rows).toHaveLength(16);
    expect(rows.slice(10).map((r) => r.profile_id)).toEqual(Array(6).fill('prof_chk2'));

    // A visitor this instance never saw, whose first arm is stored: that arm, stored once.
    await behind('INSERT INTO first_arms (site_id, visitor_id, experiment_id, arm_id, created_at) VALUES (?, ?, ?, ?, ?)', [siteId, 'chk-2', 'exp_c', 'arm_cb', now]);
    await behind('INSERT INTO first_arms (site_id, visitor_id, experiment_id, arm_id, created_at) VALUES (?, ?, ?, ?, ?)', [siteId, 'chk-3', 'exp_c', 'arm_cc', now]);
    const [two, three] = await Promise.all([svc.decideAndRecord(siteId, 'chk-2', '/p'), svc.decideAndRecord(siteId, 'chk-3', '/p')]);
    expect(two!.decision.zones.find((z) => z.name === 'z1')!.arm_id).toBe('arm_cb');
    expect(three!.decision.zones.find((z) => z.name === 'z1')!.arm_id).toBe('arm_cc');
    expect((await exposuresOf('chk-2')).map((r) => r.arm_id)).toEqual(['arm_cb', null]);
    expect((await exposuresOf('chk-3')).map((r) => r.arm_id)).toEqual(['arm_cc', null]);

    // Whatever the path, the result names the facts a preview reads now.
    for (const x of [v, 'chk-2', 'chk-3']) {
      const r = await svc.decideAndRecord(siteId, x, '/p');
      expect(r!.visitor).toEqual((await svc.preview(siteId, x, '/p'))!.visitor);
    }
    // A page with no zone stores nothing and reads the facts it names.
    const none = await svc.decideAndRecord(siteId, 'chk-2', '/elsewhere');
    expect(none!.decision.zones).toEqual([]);
    expect(none!.visitor.earlierArms).toEqual(new Map([['exp_c', 'arm_cb']]));
    expect(await exposuresOf('chk-2')).toHaveLength(4);
  });
});

describe.runIf(onPg)('the checked exposure statement (PostgreSQL)', () => {
  const rowsOf = (visitorId: string, url = '/p'): ExposureInsert[] =>
    ['za', 'zb'].map((zoneId, i) => ({
      siteId,
      visitorId,
      profileId: null,
      zoneId,
      variantId: null,
      experimentId: i === 0 ? 'exp_s' : null,
      armId: i === 0 ? 'arm_s1' : null,
      holdout: false,
      url,
      at: 1_700_000_000_000,
    }));

  it('stores the decisions whose facts hold and returns the others\u2019 facts, one statement for all of one turn', async () => {
    await behind('INSERT INTO first_arms (site_id, visitor_id, experiment_id, arm_id, created_at) VALUES (?, ?, ?, ?, ?)', [siteId, 'st-has', 'exp_s', 'arm_s2', 1]);
    const groups: GroupCommitInfo[] = [];
    const off = store.onGroupCommit((g) => groups.push(g));
    const arm: FactsRow = { k: 2, a: 'exp_s', b: 'arm_s2', c: null };
    const asks: [FactsRow[], string][] = [
      [[], 'st-new'], // holds
      [[arm], 'st-has'], // holds
      [[], 'st-has'], // a first arm it did not know
      [[arm], 'st-none'], // a first arm that is not there
      [[], 'st-new2'], // holds
    ];
    const results = await Promise.all(asks.map(([expected, v]) => store.write((tx) => tx.exposures.insertIfFacts(expected, rowsOf(v)), { key: `x${v}`, oneStatement: true })));
    off();
    expect(results).toEqual([null, null, [arm], [], null]);
    expect(groups.map((g) => [g.mode, g.operations, g.roundTrips])).toEqual([['autocommit', 5, 1]]);
    for (const [v, n] of [['st-new', 2], ['st-has', 2], ['st-none', 0], ['st-new2', 2]] as const) expect(await exposuresOf(v), v).toHaveLength(n);
    // First arms: written with the stored rows only; the one there kept.
    const arms = await store.sql.all<{ visitor_id: string; arm_id: string }>("SELECT visitor_id, arm_id FROM first_arms WHERE experiment_id = 'exp_s' ORDER BY visitor_id");
    expect(arms).toEqual([
      { visitor_id: 'st-has', arm_id: 'arm_s2' },
      { visitor_id: 'st-new', arm_id: 'arm_s1' },
      { visitor_id: 'st-new2', arm_id: 'arm_s1' },
    ]);
  });

  it('writes the first arm of a test the expected facts do not hold, next to one they hold (rows to a known test skip first_arms)', async () => {
    await behind('INSERT INTO first_arms (site_id, visitor_id, experiment_id, arm_id, created_at) VALUES (?, ?, ?, ?, ?)', [siteId, 'st-two', 'exp_s', 'arm_s2', 1]);
    const at = 1_700_000_000_000;
    const row = (zoneId: string, experimentId: string | null, armId: string | null): ExposureInsert => ({ siteId, visitorId: 'st-two', profileId: null, zoneId, variantId: null, experimentId, armId, holdout: false, url: '/p', at });
    // exp_s known (its stored arm arm_s2; the row says arm_s1, as a decision from stale weights might), exp_t new twice.
    const rows = [row('za', 'exp_s', 'arm_s1'), row('zb', 'exp_t', 'arm_t1'), row('zc', null, null), row('zd', 'exp_t', 'arm_t2')];
    expect(await store.write((tx) => tx.exposures.insertIfFacts([{ k: 2, a: 'exp_s', b: 'arm_s2', c: null }], rows), { key: 'xst-two', oneStatement: true })).toBeNull();
    expect(await exposuresOf('st-two')).toHaveLength(4);
    const arms = await store.sql.all<{ experiment_id: string; arm_id: string; created_at: number }>("SELECT experiment_id, arm_id, created_at FROM first_arms WHERE visitor_id = 'st-two' ORDER BY experiment_id");
    expect(arms).toEqual([
      { experiment_id: 'exp_s', arm_id: 'arm_s2', created_at: 1 },
      { experiment_id: 'exp_t', arm_id: 'arm_t1', created_at: at },
    ]);
  });

  it('sends a turn\u2019s text arrays in binary form, and stores every text as given', async () => {
    // Texts the array literal form would quote or escape: quotes, backslashes, braces, commas, NULL, empty, spaces, non-ASCII.
    const urls = ['/p"q', '/p\\x\\', '/p{a,b}', 'NULL', '', ' /p ', '/p\u00e9\u4e2d\u{1f600}', '/p\t\n'];
    const sent: unknown[][] = [];
    const seen = pg.Client.prototype.query;
    // Records the parameters of every checked statement sent, then passes it on.
    const record = () => {
      pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
        const c = args[0] as { text?: string; values?: unknown[] };
        if (typeof c === 'object' && c.text?.includes('unnest((SELECT $1::text[]))') === true) sent.push(c.values ?? []);
        return (seen as (...x: unknown[]) => unknown).apply(this, args);
      } as typeof pg.Client.prototype.query;
    };
    record();
    try {
      const results = await Promise.all(
        urls.map((u, i) => store.write((tx) => tx.exposures.insertIfFacts([], rowsOf(`st-bin-${i}`, u)), { key: `xst-bin-${i}`, oneStatement: true })),
      );
      expect(results).toEqual(urls.map(() => null));
    } finally {
      pg.Client.prototype.query = seen;
    }
    expect(sent).toHaveLength(1);
    expect(sent[0]!.map((v) => Buffer.isBuffer(v))).toEqual(Array(7).fill(true));
    // A decision alone in its pass as well.
    sent.length = 0;
    record();
    try {
      expect(await store.write((tx) => tx.exposures.insertIfFacts([], rowsOf('st-alone-bin', '/p"alone')), { key: 'xst-alone-bin', oneStatement: true })).toBeNull();
    } finally {
      pg.Client.prototype.query = seen;
    }
    expect(sent.map((values) => values.map((v) => Buffer.isBuffer(v)))).toEqual([Array(7).fill(true)]);
    expect(await store.sql.all("SELECT url FROM exposures WHERE visitor_id = 'st-alone-bin'")).toEqual([{ url: '/p"alone' }, { url: '/p"alone' }]);
    const stored = await store.sql.all<{ visitor_id: string; url: string; profile_id: string | null; created_at: number }>(
      "SELECT visitor_id, url, profile_id, created_at FROM exposures WHERE visitor_id LIKE 'st-bin-%' AND zone_id = 'za'",
    );
    expect(stored.sort((a, b) => Number(a.visitor_id.slice(7)) - Number(b.visitor_id.slice(7)))).toEqual(
      urls.map((url, i) => ({ visitor_id: `st-bin-${i}`, url, profile_id: null, created_at: 1_700_000_000_000 })),
    );
  });

  it('fails only the decision with a value PostgreSQL refuses', async () => {
    const results = await Promise.allSettled(
      ['st-ok1', 'st-bad', 'st-ok2'].map((v) => store.write((tx) => tx.exposures.insertIfFacts([], rowsOf(v, v === 'st-bad' ? '/p\u0000' : '/p')), { key: `x${v}`, oneStatement: true })),
    );
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((await exposuresOf('st-ok1')).length + (await exposuresOf('st-ok2')).length + (await exposuresOf('st-bad')).length).toBe(4);
  });

  it('is given the expected facts as PostgreSQL renders them (so a holding check compares two texts)', async () => {
    const rows: FactsRow[] = [
      { k: 3, a: 'seg_b', b: null, c: null },
      { k: 2, a: 'exp_é"q\\', b: 'arm\n1\u0001', c: null },
      { k: 2, a: 'exp_B', b: 'arm_a', c: null },
      { k: 1, a: 'prof_1', b: null, c: 'prof_1' },
      { k: 3, a: 'seg_a', b: null, c: null },
      { k: 2, a: 'exp_a', b: 'arm_中', c: null },
    ];
    const pgText = await store.sql.get<{ t: string }>(
      'SELECT json_agg(json_build_array(w.k, w.a, w.b, w.c) ORDER BY w.k, w.a COLLATE "C", w.b COLLATE "C", w.c COLLATE "C")::text AS t FROM json_to_recordset(?::json) AS w(k int, a text, b text, c text)',
      [JSON.stringify(rows)],
    );
    expect(renderFacts(rows)).toBe(pgText!.t);
    expect(renderFacts([])).toBe('[]');
  });

  it('is planned once per connection (a generic plan after the first five)', async () => {
    const client = new pg.Client(pgClientConfig({ url: databaseUrlFor(dir) }));
    await client.connect();
    try {
      // Statement names are per process and bounded (pg/names.ts: 1,000 of the code's texts, 250 built at run time).
      // The unit tests share their processes (isolate: false), and earlier files' texts could have taken every name,
      // leaving this text unnamed and so unplanned; modules loaded afresh start with no names taken, as a server does.
      vi.resetModules();
      const fresh = {
        ...(await import('../../src/store/exposures.js')),
        ...(await import('../../src/store/pg/sql.js')),
      };
      const own = new fresh.ExposuresRepo(new fresh.PgSql(client as unknown as pg.PoolClient));
      for (let i = 0; i < 8; i++) expect(await own.insertIfFacts([], rowsOf(`st-plan-${i}`))).toBeNull();
      const plans = await client.query<{ generic_plans: string; custom_plans: string }>("SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE '%unnest((SELECT $1::text[]))%'");
      expect(plans.rows.map((r) => [Number(r.generic_plans), Number(r.custom_plans)])).toEqual([[3, 5]]);
    } finally {
      await client.end();
    }
  });
});

describe.runIf(onPg)('binaryTextArray', () => {
  it('is read by PostgreSQL as the text form of the same array is', async () => {
    const values = ['a"b', 'c\\d', '{e,f}', 'NULL', '', ' g ', '\u00e9\u4e2d\u{1f600}', null, 12, 1.5, -0, true, 12345678901234567890n];
    const bin = binaryTextArray(values)!;
    const r = await store.sql.get<{ same: boolean; t: string[] }>('SELECT ?::text[] IS NOT DISTINCT FROM ?::text[] AS same, ?::text[] AS t', [bin, values, bin]);
    expect(r).toEqual({ same: true, t: ['a"b', 'c\\d', '{e,f}', 'NULL', '', ' g ', '\u00e9\u4e2d\u{1f600}', null, '12', '1.5', '0', 'true', '12345678901234567890'] });
    expect((await store.sql.get<{ n: number }>('SELECT cardinality(?::text[]) AS n', [binaryTextArray([])!]))!.n).toBe(0);
    expect(binaryTextArray(['a', new Date(0)])).toBeNull();
    expect(binaryTextArray([['a']])).toBeNull();
  });
});

describe('the checked exposure statement\u2019s shape', () => {
  it('is a tagged append (its sets joined end to end, rows back by position); other forms are not', () => {
    expect(shapeOf(INSERT_EXPOSURES_IF_FACTS_PG)).toEqual({ kind: 'append', params: 7, types: Array(7).fill('text'), tagged: true });
    const head = 'WITH q (a, b, svc_i) AS (SELECT * FROM ROWS FROM (unnest((SELECT ?::text[])), unnest((SELECT ?::text[]))) WITH ORDINALITY)';
    expect(shapeOf(`${head}, e AS (INSERT INTO x (a) SELECT a FROM q) SELECT svc_i FROM q`)).toEqual({ kind: 'append', params: 2, types: ['text', 'text'], tagged: true });
    expect(shapeOf(`${head}, e AS (INSERT INTO x (a) SELECT a FROM q WHERE b = ?) SELECT svc_i FROM q`)).toBeNull();
    expect(shapeOf(`${head.replace('svc_i', 'n')}, e AS (INSERT INTO x (a) SELECT a FROM q) SELECT n FROM q`)).toBeNull();
    expect(shapeOf(`${head.replace('a, b, svc_i', 'a, svc_i')}, e AS (INSERT INTO x (a) SELECT a FROM q) SELECT svc_i FROM q`)).toBeNull();
  });
});

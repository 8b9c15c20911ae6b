import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { Database } from '../../src/store/sqlite-driver.js';
import { migrate } from '../../src/store/db.js';
import { MIGRATIONS, type Migration } from '../../src/store/migrations.js';
import { PG_MIGRATIONS } from '../../src/store/pg/migrations.js';
import { migratePg, pgClientConfig } from '../../src/store/pg/store.js';
import { openStore, type Store } from '../../src/store/store.js';
import { openPgStore } from '../../src/store/pg/store.js';
import { publishedVariant, runningTest } from '../helpers/store.js';
import { decisionService } from '../../src/domain/web/decisions.js';
import { ExposuresRepo, INSERT_EXPOSURES_PG, type ExposureInsert } from '../../src/store/exposures.js';
import { shapeOf } from '../../src/store/pg/batch.js';
import { PgSql } from '../../src/store/pg/sql.js';
import { databaseUrlFor, PG_BASE_URL } from '../helpers/backend.js';
import { cleanup, tempDir } from '../helpers/svc.js';

/**
 * first_arms (the arm a visitor first saw in each test, what a decision reads instead of the visitor's
 * every exposure) on the store of this run: the migration fills it from the exposures already stored
 * (the lowest id wins, as the read over exposures chose), and every insert afterwards keeps it in the inserting
 * statement: on SQLite a trigger on exposures (so the release before, a plain INSERT, too), on PostgreSQL
 * svc's exposure statement (a CTE).
 */

const pg_ = PG_BASE_URL !== undefined;
const LIST = pg_ ? PG_MIGRATIONS : MIGRATIONS;
const AT = LIST.findIndex((m) => m.name.startsWith('first arms'));
const dirs: string[] = [];
const stores: Store[] = [];
afterAll(async () => {
  for (const s of stores) await s.close();
  for (const d of dirs) cleanup(d);
});

interface Backend {
  migrateTo(list: readonly Migration[]): Promise<unknown>;
  run(sql: string, params?: unknown[]): Promise<void>;
  all<T>(sql: string, params?: unknown[]): Promise<T[]>;
  close(): Promise<void>;
  /** PostgreSQL: the pool (svc's statements run on it). */
  pool?: pg.Pool;
}

async function openBackend(): Promise<Backend> {
  const dir = tempDir();
  dirs.push(dir);
  if (!pg_) {
    const db = new Database(path.join(dir, 'svc.db'));
    return {
      migrateTo: async (list) => migrate(db, list),
      run: async (sql, params = []) => {
        db.prepare(sql).run(...params);
      },
      all: async <T>(sql: string, params: unknown[] = []) => db.prepare(sql).all(...params) as T[],
      close: async () => {
        db.close();
      },
    };
  }
  const { schema, ...config } = pgClientConfig({ url: databaseUrlFor(dir), poolSize: 2 });
  const pool = new pg.Pool(config);
  const text = (sql: string) => {
    let n = 0;
    return sql.replace(/\?/g, () => `$${++n}`);
  };
  return {
    migrateTo: (list) => migratePg(pool, schema, list),
    run: async (sql, params = []) => void (await pool.query(text(sql), params)),
    all: async <T>(sql: string, params: unknown[] = []) => (await pool.query(text(sql), params)).rows as T[],
    close: () => pool.end(),
    pool,
  };
}

const INSERT =
  'INSERT INTO exposures (site_id, visitor_id, profile_id, zone_id, variant_id, experiment_id, arm_id, holdout, url, created_at) VALUES ' +
  "(?, ?, NULL, 'zone_1', NULL, ?, ?, 0, '/p', ?)";

const firstArms = (b: Backend) =>
  b.all<{ site_id: string; visitor_id: string; experiment_id: string; arm_id: string; created_at: number | string }>(
    'SELECT site_id, visitor_id, experiment_id, arm_id, created_at FROM first_arms ORDER BY site_id, visitor_id, experiment_id',
  );

describe(`first arms on ${pg_ ? 'PostgreSQL' : 'SQLite'}`, () => {
  it('the migration fills them from the stored exposures (the first by time and arm of each visitor and test), and each insert keeps them', async () => {
    expect(AT).toBeGreaterThan(0);
    const b = await openBackend();
    try {
      await b.migrateTo(LIST.slice(0, AT));
      // Ids in insertion order; created_at deliberately out of order: the first arm is the earliest (migration 29; it was
      // the first inserted before), as experiment results rank a visitor's exposures.
      const before: [string, string, string | null, string | null, number][] = [
        ['s1', 'v1', 'exp_a', 'arm_a2', 5000],
        ['s1', 'v1', 'exp_a', 'arm_a1', 1000],
        ['s1', 'v1', null, null, 500],
        ['s1', 'v1', 'exp_b', 'arm_b1', 2000],
        ['s1', 'v2', 'exp_a', null, 100],
        ['s1', 'v2', 'exp_a', 'arm_a1', 3000],
        ['s2', 'v1', 'exp_a', 'arm_a1', 4000],
      ];
      for (const r of before) await b.run(INSERT, r);
      await b.migrateTo(LIST);
      const expected = [
        { site_id: 's1', visitor_id: 'v1', experiment_id: 'exp_a', arm_id: 'arm_a1', created_at: 1000 },
        { site_id: 's1', visitor_id: 'v1', experiment_id: 'exp_b', arm_id: 'arm_b1', created_at: 2000 },
        { site_id: 's1', visitor_id: 'v2', experiment_id: 'exp_a', arm_id: 'arm_a1', created_at: 3000 },
        { site_id: 's2', visitor_id: 'v1', experiment_id: 'exp_a', arm_id: 'arm_a1', created_at: 4000 },
      ];
      expect((await firstArms(b)).map((r) => ({ ...r, created_at: Number(r.created_at) }))).toEqual(expected);
      // After the migration, each insert keeps them (SQLite: a trigger, so a plain INSERT of the previous release
      // too; PostgreSQL: the statement svc sends, ExposuresRepo.insert): a later arm changes nothing, a new visitor
      // or test gets its first, rows without an arm add none; of two rows of one visitor and test in one statement,
      // the earlier wins.
      const row = (site: string, visitor: string, experiment: string | null, arm: string | null, at: number): ExposureInsert => ({
        siteId: site,
        visitorId: visitor,
        profileId: null,
        zoneId: 'zone_1',
        variantId: null,
        experimentId: experiment,
        armId: arm,
        holdout: false,
        url: '/p',
        at,
      });
      const write = (rows: ExposureInsert[]) =>
        pg_
          ? new ExposuresRepo(new PgSql(b.pool!)).insert(rows)
          : b.run(
              `${INSERT}${', (?, ?, NULL, ?, NULL, ?, ?, 0, ?, ?)'.repeat(rows.length - 1)}`,
              rows.flatMap((r, i) => (i === 0 ? [r.siteId, r.visitorId, r.experimentId, r.armId, r.at] : [r.siteId, r.visitorId, r.zoneId, r.experimentId, r.armId, r.url, r.at])),
            );
      await write([row('s1', 'v1', 'exp_a', 'arm_a9', 9000)]);
      await write([row('s1', 'v3', 'exp_a', 'arm_a1', 9001), row('s1', 'v3', null, null, 9002), row('s1', 'v2', 'exp_c', null, 9003)]);
      await write([row('s1', 'v4', 'exp_b', 'arm_b2', 0), row('s1', 'v4', 'exp_a', 'arm_a2', 1), row('s1', 'v4', 'exp_a', 'arm_a1', 2)]);
      expect((await firstArms(b)).map((r) => `${r.site_id}/${r.visitor_id}/${r.experiment_id}=${r.arm_id}`)).toEqual([
        's1/v1/exp_a=arm_a1',
        's1/v1/exp_b=arm_b1',
        's1/v2/exp_a=arm_a1',
        's1/v3/exp_a=arm_a1',
        's1/v4/exp_a=arm_a2',
        's1/v4/exp_b=arm_b2',
        's2/v1/exp_a=arm_a1',
      ]);
      if (!pg_) {
        // svc's exposures of a group's decisions go OR FAIL (no statement journal); the trigger's upsert still holds for a
        // visitor and test it has (an INSERT OR IGNORE in the trigger became OR FAIL under it: this statement failed), and
        // an exposure earlier than the stored first arm (v1 at 1) takes its place.
        await b.run(
          "INSERT OR FAIL INTO exposures (site_id, visitor_id, zone_id, experiment_id, arm_id, url, created_at) VALUES ('s1', 'v1', 'zone_1', 'exp_a', 'arm_a7', '/p', 1), ('s1', 'v7', 'zone_1', 'exp_a', 'arm_a1', '/p', 2), ('s1', 'v7', 'zone_1', 'exp_a', 'arm_a2', '/p', 3)",
          [],
        );
        expect(await b.all("SELECT visitor_id, arm_id FROM first_arms WHERE site_id = 's1' AND experiment_id = 'exp_a' AND visitor_id IN ('v1', 'v7') ORDER BY visitor_id")).toEqual([
          { visitor_id: 'v1', arm_id: 'arm_a7' },
          { visitor_id: 'v7', arm_id: 'arm_a1' },
        ]);
      }
      // A statement that fails stores neither its exposures nor their first arms.
      await expect(write([row('s1', 'v5', 'exp_a', 'arm_a1', 1), row('s1', 'v6', 'exp_a', 'arm_a1', null as unknown as number)])).rejects.toThrow();
      expect(await b.all("SELECT visitor_id FROM first_arms WHERE visitor_id IN ('v5', 'v6')")).toEqual([]);
      expect(await b.all("SELECT visitor_id FROM exposures WHERE visitor_id IN ('v5', 'v6')")).toEqual([]);
    } finally {
      await b.close();
    }
  });

  it('a decision keeps the first arm however many exposures follow, and previews read the same arm', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const store = pg_ ? await openPgStore({ url: databaseUrlFor(dir), dataDir: dir }) : openStore({ dataDir: dir, synchronous: 'normal' });
    stores.push(store);
    const siteId = (await store.write((tx) => tx.sites.create({ name: 'arms' }))).id;
    const now = Date.now();
    await store.write(async (tx) => {
      const pageId = await tx.pages.insert({ siteId, name: 'p', matchType: 'exact', pattern: '/p', now });
      const contentId = await tx.content.insert({ siteId, name: 'c', kind: 'html', body: '<p>c</p>', now });
      const zoneId = await tx.zones.insert({ siteId, pageId, name: 'z', selector: '#z', defaultContentId: contentId, now });
      const variantId = await publishedVariant(tx, { siteId, zoneId, contentId, now });
      await runningTest(tx, { siteId, id: 'exp_k', pageId, zoneId, variantId, arms: ['arm_kc', 'arm_kb'], now });
    });
    const svc = decisionService(store);
    const visitors = Array.from({ length: 12 }, (_, i) => `keep-${i}`);
    const first = new Map<string, string>();
    for (const v of visitors) first.set(v, (await svc.decideAndRecord(siteId, v, '/p'))!.decision.zones[0]!.arm_id!);
    // Both arms drawn, so moving the weights below changes some visitors' draw.
    expect(new Set(first.values())).toEqual(new Set(['arm_kc', 'arm_kb']));
    await store.write((tx) => tx.sql.run("UPDATE experiment_arms SET weight = CASE id WHEN 'arm_kc' THEN 0 ELSE 1 END WHERE experiment_id = 'exp_k'", []));
    svc.invalidate(siteId);
    // Concurrent decisions (one shared facts read and exposure insert on PostgreSQL), several rounds.
    for (let round = 0; round < 3; round++) {
      const rs = await Promise.all(visitors.map((v) => svc.decideAndRecord(siteId, v, '/p')));
      rs.forEach((r, i) => expect(r!.decision.zones[0]!.arm_id).toBe(first.get(visitors[i]!)));
    }
    for (const v of visitors) {
      expect((await svc.preview(siteId, v, '/p'))!.visitor.earlierArms).toEqual(new Map([['exp_k', first.get(v)]]));
      expect(await store.exposures.earlierArms(siteId, v)).toEqual(new Map([['exp_k', first.get(v)]]));
    }
    // A new visitor draws with the new weights.
    expect((await svc.decideAndRecord(siteId, 'keep-new', '/p'))!.decision.zones[0]!.arm_id).toBe('arm_kb');
    const n = await store.sql.get<{ n: number | string }>("SELECT count(*) AS n FROM exposures WHERE visitor_id LIKE 'keep-%'");
    expect(Number(n!.n)).toBe(12 * 4 + 1);
    const fa = await store.sql.get<{ n: number | string }>("SELECT count(*) AS n FROM first_arms WHERE visitor_id LIKE 'keep-%'");
    expect(Number(fa!.n)).toBe(13);
  });
});

describe('the PostgreSQL exposure statement', () => {
  it('is appended like a plain unnest insert (concurrent decisions share it), and forms that do not stand row by row are not', () => {
    expect(shapeOf(INSERT_EXPOSURES_PG)).toEqual({ kind: 'append', params: 10, types: ['text', 'text', 'text', 'text', 'text', 'text', 'text', 'int4', 'text', 'int8'] });
    const cte = 'WITH r (a, b) AS (SELECT * FROM unnest(?::text[], ?::int8[])), e AS (INSERT INTO x (a, b) SELECT * FROM r) INSERT INTO y (a) SELECT a FROM r';
    expect(shapeOf(cte)).toEqual({ kind: 'append', params: 2, types: ['text', 'int8'] });
    expect(shapeOf(`${cte} ON CONFLICT DO NOTHING`)).toEqual({ kind: 'append', params: 2, types: ['text', 'int8'] });
    expect(shapeOf(`${cte} ON CONFLICT (a) DO UPDATE SET a = 1`)).toBeNull();
    expect(shapeOf(`${cte} RETURNING a`)).toBeNull();
    expect(shapeOf(`${cte} WHERE a = ?`)).toBeNull();
    expect(shapeOf('WITH r (a) AS (SELECT * FROM unnest(?::text[])), e AS (SELECT 1) SELECT * FROM r')).toBeNull();
  });
});

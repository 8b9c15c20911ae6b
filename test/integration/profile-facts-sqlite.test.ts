import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, cli, createSite, tempDir } from '../helpers/svc.js';
import { PG_BASE_URL } from '../helpers/backend.js';
import { openTestStore } from '../helpers/store.js';
import { Database } from '../../src/store/sqlite-driver.js';
import { SqliteSql, type Sql } from '../../src/store/sql.js';
import { ProfileReadRepo, type ProfileRow } from '../../src/store/profile-read.js';
import { mergeProfiles } from '../../src/domain/profiles/service.js';
import { SegmentMembership } from '../../src/domain/segments/membership.js';

/**
 * On SQLite a profile's facts are read in three statements (JSON arrays of
 * one row) instead of the ten portable ones: both must give the same facts,
 * value for value, for every profile of a seeded site with merges, segments,
 * several currencies, leads and scores.
 */
describe.skipIf(PG_BASE_URL !== undefined)('profile facts on SQLite', () => {
  let dataDir: string;
  let site: string;

  beforeAll(async () => {
    dataDir = tempDir();
    site = createSite(dataDir);
    expect(cli(['seed', '--site', site, '--profiles', '300', '--seed', '7', '--data', dataDir]).code).toBe(0);
    expect(cli(['segment', 'create', '--site', site, '--name', 'gold', '--rule', '{"trait":"plan","op":"eq","value":"gold"}', '--data', dataDir]).code).toBe(0);
    expect(cli(['segment', 'create', '--site', site, '--name', 'any', '--rule', '{"trait":"plan","op":"exists"}', '--data', dataDir]).code).toBe(0);
    // Merge a few profiles into others (one survivor takes two), so that merged_profile_ids is not always empty.
    const store = await openTestStore(dataDir);
    try {
      const db = new Database(path.join(dataDir, 'svc.db'), { readonly: true });
      const ids = (db.prepare('SELECT id FROM profiles WHERE site_id = ? ORDER BY id LIMIT 6').all(site) as { id: string }[]).map((r) => r.id);
      db.close();
      const membership = new SegmentMembership(store);
      await mergeProfiles(store, membership, site, { from: ids[0]!, into: ids[1]! });
      await mergeProfiles(store, membership, site, { from: ids[2]!, into: ids[1]! });
      await mergeProfiles(store, membership, site, { from: ids[3]!, into: ids[4]! });
    } finally {
      await store.close();
    }
  });

  afterAll(() => cleanup(dataDir));

  it('gives the facts the ten portable statements give, for every profile', async () => {
    const db = new Database(path.join(dataDir, 'svc.db'), { readonly: true });
    try {
      const sql = new SqliteSql(db);
      // The same executor presented as another dialect takes the portable path.
      const portableSql: Sql = { dialect: 'pg', get: sql.get.bind(sql), all: sql.all.bind(sql), run: sql.run.bind(sql), getEach: sql.getEach.bind(sql), runEach: sql.runEach.bind(sql) };
      const three = new ProfileReadRepo(sql);
      const ten = new ProfileReadRepo(portableSql);
      const rows = db.prepare('SELECT * FROM profiles WHERE site_id = ? ORDER BY id').all(site) as ProfileRow[];
      expect(rows.length).toBe(300);
      let merged = 0;
      let withSegments = 0;
      let withEvents = 0;
      let withIdentities = 0;
      const differing: string[] = [];
      for (const row of rows) {
        const a = await ten.facts(row);
        const b = await three.facts(row);
        if (!isDeepStrictEqual(a, b)) differing.push(row.id);
        if (b.mergedFrom.length > 0) merged++;
        if (b.segments.length > 0) withSegments++;
        if (b.events.length > 0) withEvents++;
        if (b.identities.length > 1 && b.hashes.length > 0) withIdentities++;
      }
      expect(differing).toEqual([]);
      // The comparison covered profiles that have each kind of fact.
      expect(merged).toBe(2);
      expect(withSegments).toBeGreaterThan(50);
      expect(withEvents).toBeGreaterThan(50);
      expect(withIdentities).toBeGreaterThan(50);
    } finally {
      db.close();
    }
  });
});

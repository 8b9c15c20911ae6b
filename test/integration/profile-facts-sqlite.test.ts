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
 * On SQLite a profile's facts are read in one statement (JSON arrays and
 * columns of one row) instead of the ten portable ones: both must give the
 * same facts, value for value, for every profile of a seeded site with
 * merges, segments, several currencies, leads and scores.
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
      // Conversions in another currency than the site's (a site whose currency changed), and one whose revenue is unknown.
      const db2 = new Database(path.join(dataDir, 'svc.db'));
      const some = db2.prepare('SELECT id, site_id, session_id, profile_id FROM conversions WHERE site_id = ? ORDER BY id LIMIT 3').all(site) as { id: string; site_id: string; session_id: string; profile_id: string }[];
      db2.prepare("UPDATE conversions SET currency = 'JPY' WHERE id = ?").run(some[0]!.id);
      db2.prepare('UPDATE conversions SET revenue = NULL WHERE id = ?').run(some[1]!.id);
      db2.close();
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
      let withConversions = 0;
      let withOtherCurrencies = 0;
      let withScores = 0;
      const differing: string[] = [];
      for (const row of rows) {
        const a = await ten.facts(row);
        const b = await three.facts(row);
        if (!isDeepStrictEqual(a, b)) differing.push(row.id);
        if (b.mergedFrom.length > 0) merged++;
        if (b.segments.length > 0) withSegments++;
        if (b.events.length > 0) withEvents++;
        if (b.identities.length > 1 && b.hashes.length > 0) withIdentities++;
        if (b.conversions.count > 0) withConversions++;
        if (b.conversions.otherCurrencies.length > 0) withOtherCurrencies++;
        if (b.lastScore !== null) withScores++;
      }
      expect(differing).toEqual([]);
      // The comparison covered profiles that have each kind of fact.
      expect(merged).toBe(2);
      expect(withSegments).toBeGreaterThan(50);
      expect(withEvents).toBeGreaterThan(50);
      expect(withIdentities).toBeGreaterThan(50);
      expect(withConversions).toBeGreaterThan(10);
      expect(withOtherCurrencies).toBe(1);
      expect(withScores).toBeGreaterThan(10);
    } finally {
      db.close();
    }
  });

  it('finds the surviving profile by every identifier, in one statement per hop', async () => {
    const db = new Database(path.join(dataDir, 'svc.db'), { readonly: true });
    try {
      const repo = new ProfileReadRepo(new SqliteSql(db));
      const survivor = (id: string): string => {
        const r = db.prepare('SELECT merged_into FROM profiles WHERE id = ?').get(id) as { merged_into: string | null };
        return r.merged_into === null ? id : survivor(r.merged_into);
      };
      const kinds = { visitor: 'visitor_id', email: 'email', external_id: 'external_id' } as const;
      const identities = db.prepare('SELECT kind, value, profile_id FROM identities WHERE site_id = ?').all(site) as { kind: keyof typeof kinds; value: string; profile_id: string }[];
      const hashes = db.prepare('SELECT kind, hash, profile_id FROM identity_hashes WHERE site_id = ?').all(site) as { kind: 'email_sha256' | 'phone_sha256'; hash: string; profile_id: string }[];
      const profiles = db.prepare('SELECT id FROM profiles WHERE site_id = ?').all(site) as { id: string }[];
      expect(identities.length).toBeGreaterThan(300);
      expect(hashes.length).toBeGreaterThan(50);
      const wrong: string[] = [];
      const expectFound = async (kind: Parameters<ProfileReadRepo['find']>[1], value: string, owner: string) => {
        const found = await repo.find(site, kind, value);
        if (found?.id !== survivor(owner) || found.merged_into !== null) wrong.push(`${kind} ${value}: ${found?.id}`);
      };
      for (const i of identities) await expectFound(kinds[i.kind], i.value, i.profile_id);
      for (const h of hashes) await expectFound(h.kind, h.hash, h.profile_id);
      for (const p of profiles) await expectFound('profile_id', p.id, p.id);
      expect(wrong).toEqual([]);
      // Merged ids resolve to their survivor; nothing is found in another site or for an unknown value.
      const merged = profiles.filter((p) => survivor(p.id) !== p.id);
      expect(merged.length).toBe(3);
      expect(await repo.find('site_other', 'profile_id', profiles[0]!.id)).toBeUndefined();
      expect(await repo.find(site, 'visitor_id', 'no-such-visitor')).toBeUndefined();
      expect(await repo.find(site, 'email_sha256', '0'.repeat(64))).toBeUndefined();
    } finally {
      db.close();
    }
  });
});

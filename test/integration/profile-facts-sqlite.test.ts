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
  /** A second site whose profiles are made by hand: ties in every ordered list, non-ASCII text, over 50 event types. */
  let tieSite: string;
  const tied = { profile: 'p-tied', many: 'p-many' };

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
      tieSite = createSite(dataDir, 'Ties');
      addTiedProfiles(path.join(dataDir, 'svc.db'), tieSite, tied);
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

  it('lists identities, hashes, segments, event counts and merged ids in the order an ORDER BY inside each aggregate gives', async () => {
    const db = new Database(path.join(dataDir, 'svc.db'), { readonly: true });
    try {
      const repo = new ProfileReadRepo(new SqliteSql(db));
      const reference = db.prepare(ORDERED_LISTS).raw(true);
      const listsOf = (f: Awaited<ReturnType<ProfileReadRepo['facts']>>) => ({
        identities: f.identities,
        hashes: f.hashes,
        segments: f.segments,
        events: f.events,
        merged: f.mergedFrom,
      });
      const expected = (id: string) => {
        const r = reference.get(id, id, id, id, id) as string[];
        return {
          identities: (JSON.parse(r[0]!) as [string, string][]).map(([kind, value]) => ({ kind, value })),
          hashes: (JSON.parse(r[1]!) as [string, string][]).map(([kind, hash]) => ({ kind, hash })),
          segments: (JSON.parse(r[2]!) as [string, string, number, number][]).map(([id, name, priority, since]) => ({ id, name, priority, since })),
          events: (JSON.parse(r[3]!) as [string, number, number][]).map(([type, n, last]) => ({ type, n, last })),
          merged: JSON.parse(r[4]!) as string[],
        };
      };
      const rows = db.prepare('SELECT * FROM profiles WHERE site_id IN (?, ?) ORDER BY id').all(site, tieSite) as ProfileRow[];
      const differing: string[] = [];
      for (const row of rows) if (!isDeepStrictEqual(listsOf(await repo.facts(row)), expected(row.id))) differing.push(row.id);
      expect(differing).toEqual([]);
      // The hand-made profile's lists, spelled out: ties keep the index's order (identities and hashes by value),
      // text compares as SQLite compares it (UTF-8 bytes: U+FF21 before U+1F600, which JavaScript's < puts first).
      const row = rows.find((r) => r.id === tied.profile)!;
      const f = await repo.facts(row);
      expect(f.identities.map((i) => `${i.kind}:${i.value}`)).toEqual(['email:e@x', 'external_id:x-1', 'external_id:x-2', 'visitor:v-a', 'visitor:v-b', 'visitor:v-c']);
      expect(f.hashes.map((h) => `${h.kind}:${h.hash}`)).toEqual(['email_sha256:h0', 'email_sha256:h1', 'email_sha256:h2', 'email_sha256:h3', 'phone_sha256:h9']);
      expect(f.segments.map((s) => s.id)).toEqual(['s-a', 's-b', 's-\u00e9', 's-\uff21', 's-\u{1f600}', 's-lo']);
      expect(f.events.map((e) => `${e.type}:${e.n}`)).toEqual(['one:3', 'alpha:2', 'zeta:2', '\u00e9:2', '\uff21:2', '\u{1f600}:2']);
      expect(f.mergedFrom).toEqual(['p-aa', 'p-zz', 'p-\uff21', 'p-\u{1f600}']);
      const many = await repo.facts(rows.find((r) => r.id === tied.many)!);
      expect(many.events.length).toBe(50);
      expect(many.events[0]).toMatchObject({ type: 't-59', n: 60 });
      expect(many.events[49]).toMatchObject({ type: 't-10', n: 11 });
      // Counted from the events themselves (10) and grouped by the statement (11): the same counts and last times.
      const at = (id: string) => (db.prepare('SELECT min(ts) AS t FROM events WHERE profile_id = ?').get(id) as { t: number }).t;
      const ten = await repo.facts(rows.find((r) => r.id === EVENTS_10)!);
      const t10 = at(EVENTS_10);
      expect(ten.events).toEqual([
        { type: 'b', n: 4, last: t10 + 8 },
        { type: 'a', n: 2, last: t10 + 6 },
        { type: 'c', n: 2, last: t10 + 9 },
        { type: '\u00e9', n: 2, last: t10 + 7 },
      ]);
      const eleven = await repo.facts(rows.find((r) => r.id === EVENTS_11)!);
      const t11 = at(EVENTS_11);
      expect(eleven.events).toEqual([
        { type: 'b', n: 5, last: t11 + 10 },
        { type: 'a', n: 2, last: t11 + 6 },
        { type: 'c', n: 2, last: t11 + 9 },
        { type: '\u00e9', n: 2, last: t11 + 7 },
      ]);
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

  it('reads a look-up and its facts in one statement as find and then facts read them', async () => {
    const db = new Database(path.join(dataDir, 'svc.db'), { readonly: true });
    try {
      const sql = new SqliteSql(db);
      const repo = new ProfileReadRepo(sql);
      const kinds = { visitor: 'visitor_id', email: 'email', external_id: 'external_id' } as const;
      const lookups: [Parameters<ProfileReadRepo['find']>[1], string, string][] = [];
      for (const s of [site, tieSite]) {
        for (const i of db.prepare('SELECT kind, value FROM identities WHERE site_id = ?').all(s) as { kind: keyof typeof kinds; value: string }[]) lookups.push([kinds[i.kind], i.value, s]);
        for (const h of db.prepare('SELECT kind, hash FROM identity_hashes WHERE site_id = ?').all(s) as { kind: 'email_sha256' | 'phone_sha256'; hash: string }[]) lookups.push([h.kind, h.hash, s]);
        for (const p of db.prepare('SELECT id FROM profiles WHERE site_id = ?').all(s) as { id: string }[]) lookups.push(['profile_id', p.id, s]);
      }
      expect(lookups.length).toBeGreaterThan(700);
      const differing: string[] = [];
      let viaMerge = 0;
      let otherCurrencies = 0;
      for (const [kind, value, s] of lookups) {
        const found = await repo.find(s, kind, value);
        const expected = found === undefined ? undefined : await repo.facts(found);
        const got = await repo.findWithFacts(s, kind, value);
        if (!isDeepStrictEqual(got, expected)) differing.push(`${kind} ${value}`);
        if (got !== undefined && kind === 'profile_id' && got.profile.id !== value) viaMerge++;
        if ((got?.conversions.otherCurrencies.length ?? 0) > 0) otherCurrencies++;
      }
      expect(differing).toEqual([]);
      // Merged profiles answered by their survivor (three of the seeded site, four of the tied one), and a profile
      // whose conversions are in two currencies, were among them.
      expect(viaMerge).toBe(7);
      expect(otherCurrencies).toBeGreaterThan(0);
      // Nothing in another site, for an unknown value, or for a kind's value under another kind.
      const anyProfile = lookups.find(([k]) => k === 'profile_id')![1];
      expect(await repo.findWithFacts('site_other', 'profile_id', anyProfile)).toBeUndefined();
      expect(await repo.findWithFacts(site, 'visitor_id', 'no-such-visitor')).toBeUndefined();
      expect(await repo.findWithFacts(site, 'email_sha256', '0'.repeat(64))).toBeUndefined();
      const visitor = lookups.find(([k]) => k === 'visitor_id')![1];
      expect(await repo.findWithFacts(site, 'external_id', visitor)).toBeUndefined();
    } finally {
      db.close();
    }
  });
});

/**
 * The lists of a profile's facts each ordered by an ORDER BY inside its aggregate (the facts statement of the
 * release before did so): the order ProfileReadRepo.facts must keep on SQLite, ties included.
 */
const ORDERED_LISTS =
  'SELECT ' +
  '(SELECT json_group_array(json_array(kind, value) ORDER BY kind, created_at) FROM identities WHERE profile_id = ?), ' +
  '(SELECT json_group_array(json_array(kind, hash) ORDER BY kind, created_at DESC) FROM identity_hashes WHERE profile_id = ?), ' +
  '(SELECT json_group_array(json_array(s.id, s.name, s.priority, m.since) ORDER BY s.priority DESC, s.id) FROM segment_members m JOIN segments s ON s.id = m.segment_id WHERE m.profile_id = ?), ' +
  '(SELECT json_group_array(json_array(type, n, last) ORDER BY n DESC, type) FROM (SELECT type, count(*) AS n, max(ts) AS last FROM events WHERE profile_id = ? GROUP BY type ORDER BY n DESC, type LIMIT 50)), ' +
  '(SELECT json_group_array(id ORDER BY id) FROM profiles WHERE merged_into = ?)';

/** Profiles of the tied site with 10 and 11 events: on either side of the facts statement's RAW_EVENTS. */
const EVENTS_10 = 'p-10-events';
const EVENTS_11 = 'p-11-events';

/**
 * Two profiles of `site` written row by row: `ids.profile` with ties in every ordered list and text whose
 * UTF-8 order differs from JavaScript's, four profiles merged into it (inserted out of id order), and
 * `ids.many` with 60 event types (the snapshot keeps the 50 most frequent).
 */
function addTiedProfiles(file: string, site: string, ids: { profile: string; many: string }): void {
  const db = new Database(file);
  try {
    db.transaction(() => {
      const profile = db.prepare('INSERT INTO profiles (id, site_id, created_at, updated_at, merged_into) VALUES (?, ?, 1, 1, ?)');
      profile.run(ids.profile, site, null);
      profile.run(ids.many, site, null);
      for (const m of ['p-zz', 'p-\u{1f600}', 'p-aa', 'p-\uff21']) profile.run(m, site, ids.profile);
      const identity = db.prepare('INSERT INTO identities (site_id, kind, value, profile_id, created_at) VALUES (?, ?, ?, ?, ?)');
      for (const [kind, value, at] of [['visitor', 'v-c', 1000], ['visitor', 'v-a', 1000], ['external_id', 'x-2', 2000], ['email', 'e@x', 500], ['visitor', 'v-b', 1000], ['external_id', 'x-1', 2000]] as const) {
        identity.run(site, kind, value, ids.profile, at);
      }
      const hash = db.prepare('INSERT INTO identity_hashes (site_id, kind, hash, profile_id, created_at) VALUES (?, ?, ?, ?, ?)');
      for (const [kind, h, at] of [['email_sha256', 'h3', 1000], ['phone_sha256', 'h9', 3000], ['email_sha256', 'h1', 1000], ['email_sha256', 'h0', 2000], ['email_sha256', 'h2', 1000]] as const) {
        hash.run(site, kind, h, ids.profile, at);
      }
      const segment = db.prepare("INSERT INTO segments (id, site_id, name, rule, priority, created_at, updated_at) VALUES (?, ?, ?, '{}', ?, 1, 1)");
      const member = db.prepare('INSERT INTO segment_members (segment_id, profile_id, site_id, since) VALUES (?, ?, ?, ?)');
      for (const [id, priority] of [['s-lo', 1], ['s-\u{1f600}', 5], ['s-b', 5], ['s-\uff21', 5], ['s-a', 5], ['s-\u00e9', 5]] as const) {
        segment.run(id, site, `name ${id} \u2713`, priority);
        member.run(id, ids.profile, site, 7);
      }
      const event = db.prepare("INSERT INTO events (site_id, session_id, profile_id, type, ts, body, received_at) VALUES (?, 's', ?, ?, ?, '{}', ?)");
      let ts = 1;
      for (const [type, n] of [['zeta', 2], ['\u{1f600}', 2], ['one', 3], ['\uff21', 2], ['alpha', 2], ['\u00e9', 2]] as const) {
        for (let i = 0; i < n; i++, ts++) event.run(site, ids.profile, type, ts, ts);
      }
      // t-k occurs k + 1 times: the 50 most frequent are t-59 down to t-10.
      for (let k = 0; k < 60; k++) for (let i = 0; i <= k; i++, ts++) event.run(site, ids.many, `t-${k}`, ts, ts);
      // 10 events (counted from the events themselves) and 11 (grouped by the statement), types interleaved.
      for (const [id, n] of [[EVENTS_10, 10], [EVENTS_11, 11]] as const) {
        profile.run(id, site, null);
        for (let i = 0; i < n; i++, ts++) event.run(site, id, ['b', 'a', '\u00e9', 'b', 'c'][i % 5]!, ts, ts);
      }
    })();
  } finally {
    db.close();
  }
}

import { afterEach, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import type { Store } from '../../src/store/store.js';
import type { GroupCommitInfo } from '../../src/store/observe.js';
import { IngestionService, type RequestContext } from '../../src/domain/ingestion/service.js';
import { SegmentMembership } from '../../src/domain/segments/membership.js';
import { AppError } from '../../src/errors/app-error.js';
import { PG_BASE_URL } from '../helpers/backend.js';
import { tempDir } from '../helpers/svc.js';
import { openTestStore } from '../helpers/store.js';

/**
 * The ingestion hot paths on PostgreSQL are set-based per group commit: the
 * round trips of a group stay a small constant whatever its number of
 * operations (pg/batch.ts). On SQLite (no round trips) the same operations
 * must store the same data. The pg vitest project runs this file on
 * PostgreSQL.
 */
const onPg = PG_BASE_URL !== undefined;
const dirs: string[] = [];
const stores: Store[] = [];

async function open(): Promise<{ store: Store; svc: IngestionService; siteId: string }> {
  const dir = tempDir('svc-batch-');
  dirs.push(dir);
  const store = await openTestStore(dir, { poolSize: 10 });
  stores.push(store);
  const site = await store.write((tx) => tx.sites.create({ name: 'batch' }));
  // A destination of every event type: behavioural events write their outbox rows (none without one), which these tests count.
  await store.write((tx) => tx.webhooks.createDestination({ siteId: site.id, url: 'https://hooks.example.com/in', secretEnc: null, events: ['all'] }));
  return { store, svc: new IngestionService(store, new SegmentMembership(store)), siteId: site.id };
}

afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const ctx = (): RequestContext => ({ ip: '203.0.113.9', userAgent: 'batch-test' });

/** Runs `n` operations submitted at once (with `firstAlone`, the first one before the others); returns the committed groups they made. */
async function groupsOf(store: Store, n: number, f: (i: number) => Promise<unknown>, firstAlone = false): Promise<GroupCommitInfo[]> {
  const groups: GroupCommitInfo[] = [];
  const off = store.onGroupCommit((g) => groups.push(g));
  try {
    if (firstAlone) await f(0);
    await Promise.all(Array.from({ length: n - (firstAlone ? 1 : 0) }, (_, i) => f(i + (firstAlone ? 1 : 0))));
  } finally {
    off();
  }
  expect(groups.reduce((a, g) => a + g.operations, 0)).toBe(n);
  return groups;
}

/** The most round trips of any group that carried at least `minOps` operations (and that such a group exists). */
function maxTrips(groups: GroupCommitInfo[], minOps: number): number {
  if (process.env.SVC_TEST_SHOW_TRIPS) console.log(groups.map((g) => `${g.operations}:${g.roundTrips}`).join(' '));
  const big = groups.filter((g) => g.operations >= minOps);
  expect(big.length).toBeGreaterThan(0);
  return Math.max(...big.map((g) => g.roundTrips));
}

function event(svc: IngestionService, siteId: string, session: string, type = 'pageview', extra: Record<string, unknown> = {}) {
  const body = { site_id: siteId, session_id: session, type, url: 'https://shop.test/p', ...extra };
  return svc.recordEvent(body as never, JSON.stringify(body), ctx());
}

async function count(store: Store, sql: string, params: unknown[]): Promise<number> {
  return Number((await store.sql.get<{ n: number }>(sql, params))!.n);
}

describe(`set-based group commits (${onPg ? 'PostgreSQL' : 'SQLite'})`, () => {
  it('events: every one stored once, and on PostgreSQL a group costs the same few round trips for 50 events as for 300', async () => {
    const { store, svc, siteId } = await open();
    // New sessions (profiles and sessions created), then known ones; add_to_cart also writes the outbox.
    const small = await groupsOf(store, 50, (i) => event(svc, siteId, `s${i}`));
    // 300 sessions, the first 50 known: one operation per session (same-session operations run in turn, see below).
    const large = await groupsOf(store, 300, (i) => event(svc, siteId, `s${i}`, i % 2 === 0 ? 'add_to_cart' : 'pageview', { n: i }));
    expect(await count(store, 'SELECT count(*) AS n FROM events WHERE site_id = ?', [siteId])).toBe(350);
    expect(await count(store, 'SELECT count(*) AS n FROM sessions WHERE site_id = ?', [siteId])).toBe(300);
    expect(await count(store, 'SELECT count(*) AS n FROM profiles WHERE site_id = ?', [siteId])).toBe(300);
    expect(await count(store, "SELECT count(*) AS n FROM outbox WHERE site_id = ? AND event_type = 'add_to_cart'", [siteId])).toBe(150);
    // Every outbox row names a stored event of its session.
    const rows = await store.sql.all<{ payload: string }>("SELECT payload FROM outbox WHERE site_id = ? AND event_type = 'add_to_cart'", [siteId]);
    const ids = new Set(rows.map((r) => (JSON.parse(r.payload) as { event_id: string }).event_id));
    expect(ids.size).toBe(150);
    if (!onPg) return;
    // One statement per wave (its texts combined) or per SQL text and wave: under ten whatever the group's size
    // (one statement per event would be 4 to 6 per event, over a thousand for this group). A new session's event:
    // BEGIN, session and visitor reads, profile and identity inserts, session insert, event and outbox inserts
    // with the trigger read (the event's id reserved ahead), COMMIT.
    // The big groups ran set-based (not re-run one by one after a failure), and say so to /metrics.
    for (const g of large.filter((x) => x.operations >= 60)) expect(g.mode).toBe('set_based');
    expect(maxTrips(small, 8)).toBeLessThanOrEqual(6);
    expect(maxTrips(large, 60)).toBeLessThanOrEqual(6);
    const ops = large.reduce((a, g) => a + g.operations, 0);
    const trips = large.reduce((a, g) => a + g.roundTrips, 0);
    expect(trips / ops).toBeLessThan(1);
  });

  it('events of two stores on one database at once: every event id unique, and each outbox row names its own event', async () => {
    const { store, svc, siteId } = await open();
    // A second store on the same data directory: on PostgreSQL the same schema, reserving its own event ids.
    const other = await openTestStore(dirs[dirs.length - 1]!, { poolSize: 10 });
    stores.push(other);
    const svc2 = new IngestionService(other, new SegmentMembership(other));
    const answers = await Promise.all(
      Array.from({ length: 240 }, (_, i) => event(i % 2 === 0 ? svc : svc2, siteId, `m${i % 60}`, 'add_to_cart', { n: i })),
    );
    const events = await store.sql.all<{ id: number; body: string }>('SELECT id, body FROM events WHERE site_id = ?', [siteId]);
    expect(events.length).toBe(240);
    expect(new Set(events.map((e) => e.id)).size).toBe(240);
    const nOf = new Map(events.map((e) => [`evt_${e.id}`, (JSON.parse(e.body) as { n: number }).n]));
    expect(new Set(answers.map((a) => a.event_id))).toEqual(new Set(nOf.keys()));
    const outbox = await store.sql.all<{ payload: string }>("SELECT payload FROM outbox WHERE site_id = ? AND event_type = 'add_to_cart'", [siteId]);
    expect(outbox.length).toBe(240);
    for (const o of outbox) {
      const p = JSON.parse(o.payload) as { event_id: string; properties: { n: number } };
      expect(nOf.get(p.event_id)).toBe(p.properties.n);
    }
  });

  it('values with quotes, backslashes, braces, commas, NULL as text, empty strings and a lone surrogate go through the set-based statements unchanged', async () => {
    const { store, siteId } = await open();
    const odd = ['"', '\\', '\\"', '{}', '{"a":"b\\\\c"}', 'a,b', 'NULL', 'null', '', ' lead and trail ', 'line\nbreak\ttab', 'ü €  😀', "it's", ...(onPg ? ['lone \ud800 surrogate'] : [])];
    // What the database holds for each: on PostgreSQL a lone surrogate becomes U+FFFD (UTF-8 has no encoding for it), as
    // node-pg sends it whichever statement carries it (SQLite stores it its own way, not this test's subject).
    const held = (v: string) => v.replace(/\ud800/g, '\ufffd');
    const now = Date.now();
    const ids = await Promise.all(
      Array.from({ length: odd.length * 3 }, (_, i) =>
        store.write(
          (tx) =>
            tx.activity.insertEvent({ siteId, sessionId: odd[i % odd.length]!, profileId: `prf_${i}`, visitorId: i % 2 === 0 ? null : odd[(i + 1) % odd.length]!, type: 'odd', ts: i, body: odd[i % odd.length]!, now }),
          { key: `odd${i}` },
        ),
      ),
    );
    const rows = await store.sql.all<{ id: number; session_id: string; visitor_id: string | null; body: string; ts: number }>(
      "SELECT id, session_id, visitor_id, body, ts FROM events WHERE site_id = ? AND type = 'odd' ORDER BY ts",
      [siteId],
    );
    expect(rows.map((r) => [r.id, r.session_id, r.visitor_id, r.body, r.ts])).toEqual(
      ids.map((id, i) => [id, held(odd[i % odd.length]!), i % 2 === 0 ? null : held(odd[(i + 1) % odd.length]!), held(odd[i % odd.length]!), i]),
    );
    // The set-based read of the same values finds each row by them.
    const found = await store.sql.getEach<{ n: number }>(
      "SELECT count(*) AS n FROM events WHERE site_id = ? AND type = 'odd' AND session_id = ? AND body = ?",
      odd.map((v) => [siteId, v, v]),
    );
    expect(found.map((r) => Number(r!.n))).toEqual(odd.map(() => 3));
    // The same with only the values free of quotes and backslashes (on PostgreSQL their arrays are written joined in one go).
    const plain = odd.filter((v) => !/["\\]/.test(v));
    expect(plain).toContain('NULL');
    const foundPlain = await store.sql.getEach<{ n: number }>(
      "SELECT count(*) AS n FROM events WHERE site_id = ? AND type = 'odd' AND session_id = ? AND body = ?",
      plain.map((v) => [siteId, v, v]),
    );
    expect(foundPlain.map((r) => Number(r!.n))).toEqual(plain.map(() => 3));
  });

  it('text values holding U+001E, and empty strings, go through the set-based insert unchanged', async () => {
    const { store, siteId } = await open();
    // On PostgreSQL a text column of a group's insert goes as its values joined by U+001E unless one holds it (then JSON),
    // empty strings among them (string_to_table('') alone would give no row): each way, every row as written.
    const insert = (i: number, session: string, body: string) =>
      store.write((tx) => tx.activity.insertEvent({ siteId, sessionId: session, profileId: `prf_${i}`, visitorId: `v${i}`, type: 'sep', ts: i, body, now: 1 }), {
        key: `sep${i}`,
      });
    const groups: GroupCommitInfo[] = [];
    const off = store.onGroupCommit((g) => groups.push(g));
    await insert(0, '', '');
    const mixed = [
      ['a\u001eb', '\u001e'],
      ['plain', ''],
      ['', 'c\u001e'],
      ['\u001e\u001e', 'end'],
    ];
    await Promise.all(mixed.map(([session, body], i) => insert(i + 1, session!, body!)));
    await Promise.all(['x', '', 'y'].map((v, i) => insert(i + 10, v, v)));
    off();
    // None of the groups failed its first, set-based run (a failed one is run again in turn, which would store the same
    // rows); the first, one operation, runs in turn.
    if (onPg) expect(groups.map((g) => g.mode)).toEqual(['in_turn', 'set_based', 'set_based']);
    const rows = await store.sql.all<{ session_id: string; body: string; profile_id: string; visitor_id: string; ts: number }>(
      "SELECT session_id, body, profile_id, visitor_id, ts FROM events WHERE site_id = ? AND type = 'sep' ORDER BY ts",
      [siteId],
    );
    expect(rows.map((r) => [r.ts, r.session_id, r.body, r.profile_id, r.visitor_id])).toEqual([
      [0, '', '', 'prf_0', 'v0'],
      ...mixed.map(([session, body], i) => [i + 1, session, body, `prf_${i + 1}`, `v${i + 1}`]),
      ...['x', '', 'y'].map((v, i) => [i + 10, v, v, `prf_${i + 10}`, `v${i + 10}`]),
    ]);
  });

  it('scores and conversions: bounded round trips per group, co-purchase counters summed exactly', async () => {
    const { store, svc, siteId } = await open();
    await groupsOf(store, 40, (i) => event(svc, siteId, `c${i}`));
    const scores = await groupsOf(store, 120, (i) => {
      const body = { site_id: siteId, session_id: `c${i % 40}`, score: i % 7 };
      return svc.recordScore(body as never, JSON.stringify(body), ctx());
    });
    const conversions = await groupsOf(store, 120, (i) =>
      svc.convert(
        {
          site_id: siteId,
          session_id: `v${i}`,
          revenue: 10,
          line_items: [
            { sku: 'a', qty: 1, price: 4 },
            { sku: 'b', qty: 1, price: 3 },
            ...(i % 3 === 0 ? [{ sku: 'c', qty: 2, price: 3 }] : []),
          ],
        } as never,
        ctx(),
      ),
    );
    expect(await count(store, 'SELECT count(*) AS n FROM scores WHERE site_id = ?', [siteId])).toBe(120);
    expect(await count(store, 'SELECT count(*) AS n FROM conversions WHERE site_id = ?', [siteId])).toBe(120);
    expect(await store.copurchase.totalOrders(siteId)).toBe(120);
    expect(await store.copurchase.itemOrders(siteId, 'a')).toBe(120);
    expect(await store.copurchase.itemOrders(siteId, 'c')).toBe(40);
    const companions = await store.copurchase.companions(siteId, 'a', 1);
    expect(companions.map((c) => [c.sku, c.pair_orders, c.orders]).sort()).toEqual([
      ['b', 120, 120],
      ['c', 40, 40],
    ]);
    if (!onPg) return;
    expect(maxTrips(scores, 20)).toBeLessThanOrEqual(12);
    expect(maxTrips(conversions, 20)).toBeLessThanOrEqual(16);
  });

  it('identify and lead capture: bounded round trips per group; one email through two sessions at once still makes one profile', async () => {
    const { store, svc, siteId } = await open();
    const identified = await groupsOf(store, 120, (i) =>
      svc.identify({ site_id: siteId, session_id: `i${i}`, traits: { email: `person${i}@example.com`, plan: 'pro' } } as never, ctx()),
    );
    const leads = await groupsOf(store, 80, (i) =>
      svc.captureLead({ site_id: siteId, session_id: `l${i}`, email: `lead${i}@example.com`, name: `Lead ${i}` } as never, ctx()),
    );
    expect(await count(store, "SELECT count(*) AS n FROM identities WHERE site_id = ? AND kind = 'email'", [siteId])).toBe(200);
    expect(await count(store, 'SELECT count(*) AS n FROM leads WHERE site_id = ?', [siteId])).toBe(80);
    expect(await count(store, "SELECT count(*) AS n FROM outbox WHERE site_id = ? AND event_type = 'profile.identified'", [siteId])).toBe(200);
    // The same email from 20 sessions in one group: the unique key decides, every session ends on one profile.
    const same = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        svc.identify({ site_id: siteId, session_id: `same${i}`, traits: { email: 'shared@example.com' } } as never, ctx()),
      ),
    );
    expect(new Set(same.map((r) => r.profile_id)).size).toBe(1);
    expect(await count(store, "SELECT count(*) AS n FROM sessions WHERE site_id = ? AND id LIKE 'same%' AND profile_id = ?", [siteId, same[0]!.profile_id])).toBe(20);
    if (!onPg) return;
    expect(maxTrips(identified, 20)).toBeLessThanOrEqual(24);
    expect(maxTrips(leads, 20)).toBeLessThanOrEqual(24);
  });

  it('decision exposures: keyed writes of many visitors share one insert per group', async () => {
    const { store, siteId } = await open();
    const row = (i: number, zone: string) => ({
      siteId,
      visitorId: `vis${i}`,
      profileId: null,
      zoneId: zone,
      variantId: `var_${zone}`,
      experimentId: null,
      armId: null,
      holdout: i % 5 === 0,
      url: '/p',
      at: 1_700_000_000_000 + i,
    });
    const groups = await groupsOf(store, 150, (i) =>
      store.write((tx) => tx.exposures.insert(i % 2 === 0 ? [row(i, 'hero')] : [row(i, 'hero'), row(i, 'footer')]), { key: `vis${i}` }),
    );
    expect(await count(store, 'SELECT count(*) AS n FROM exposures WHERE site_id = ?', [siteId])).toBe(225);
    expect(await count(store, 'SELECT count(*) AS n FROM exposures WHERE site_id = ? AND holdout = 1', [siteId])).toBe(45);
    if (!onPg) return;
    // BEGIN, one insert per wave, COMMIT.
    expect(maxTrips(groups, 20)).toBeLessThanOrEqual(4);
  });

  it('a keyed operation that fails loses only its own writes: the group is run again in turn', async () => {
    const { store, siteId } = await open();
    const modes: (string | undefined)[] = [];
    const off = store.onGroupCommit((g) => modes.push(g.mode));
    const outcomes = await Promise.allSettled(
      Array.from({ length: 40 }, (_, i) =>
        store.write(
          async (tx) => {
            const id = await tx.activity.insertEvent({ siteId, sessionId: `k${i}`, profileId: `prf_${i}`, visitorId: null, type: 'pageview', ts: i, body: '{}', now: i });
            if (i % 10 === 3) throw new AppError('validation_failed', `op ${i} refused after writing`);
            return id;
          },
          { key: `k${i}` },
        ),
      ),
    );
    off();
    expect(outcomes.flatMap((o, i) => (o.status === 'rejected' ? [i] : []))).toEqual([3, 13, 23, 33]);
    const stored = await store.sql.all<{ ts: number }>('SELECT ts FROM events WHERE site_id = ? ORDER BY ts', [siteId]);
    expect(stored.map((r) => Number(r.ts))).toEqual(Array.from({ length: 40 }, (_, i) => i).filter((i) => i % 10 !== 3));
    if (onPg) expect(modes).toContain('rerun');
  });

  it("a new session of a known visitor goes to the visitor's profile, a known session keeps its own, a new visitor gets a new one: alone and together in one group", async () => {
    const { store, svc, siteId } = await open();
    const withVisitor = (session: string, visitor?: string) => event(svc, siteId, session, 'pageview', visitor === undefined ? {} : { visitor_id: visitor });
    const first = await withVisitor('o1', 'vis_1');
    // Alone: a new session of vis_1, and o1 again with another visitor id (a known session keeps its profile).
    expect((await withVisitor('o2', 'vis_1')).profile_id).toBe(first.profile_id);
    expect((await withVisitor('o1', 'vis_other')).profile_id).toBe(first.profile_id);
    // Together, several groups' worth so that on PostgreSQL they share waves.
    const together = await Promise.all([
      ...Array.from({ length: 20 }, (_, i) => withVisitor(`o_new${i}`, 'vis_1')),
      ...Array.from({ length: 20 }, () => withVisitor('o1', 'vis_1')),
      ...Array.from({ length: 10 }, (_, i) => withVisitor(`o_fresh${i}`, `vis_fresh${i}`)),
      ...Array.from({ length: 5 }, (_, i) => withVisitor(`o_anon${i}`)),
    ]);
    for (const r of together.slice(0, 40)) expect(r.profile_id).toBe(first.profile_id);
    const fresh = together.slice(40).map((r) => r.profile_id);
    expect(new Set([...fresh, first.profile_id]).size).toBe(16);
    // The fresh visitors' identities point at their new profiles; o2 and the o_new sessions at the first one.
    const owner = await store.sql.get<{ profile_id: string }>("SELECT profile_id FROM identities WHERE site_id = ? AND kind = 'visitor' AND value = ?", [siteId, 'vis_fresh3']);
    expect(owner?.profile_id).toBe(fresh[3]);
    expect(await count(store, 'SELECT COUNT(*) AS n FROM sessions WHERE site_id = ? AND profile_id = ?', [siteId, first.profile_id])).toBe(22);
  });

  it('two events of one new session in one group create it once (same-session operations run in turn)', async () => {
    const { store, svc, siteId } = await open();
    const out = await Promise.all(Array.from({ length: 60 }, (_, i) => event(svc, siteId, `dup${i % 6}`)));
    expect(await count(store, 'SELECT count(*) AS n FROM sessions WHERE site_id = ?', [siteId])).toBe(6);
    expect(await count(store, 'SELECT count(*) AS n FROM profiles WHERE site_id = ?', [siteId])).toBe(6);
    for (let i = 0; i < 60; i++) expect(out[i]!.profile_id).toBe(out[i % 6]!.profile_id);
  });

  it("a wave's independent statements go as one statement: rows read through it equal the plain reads, and a known session's event costs 4 round trips per group, alone or not", async () => {
    const { store, svc, siteId } = await open();
    const now = Date.now();
    const trigger = await store.write(async (tx) => {
      const t = await tx.triggers.create(
        'trg_wave',
        siteId,
        {
          name: 'Wave',
          on_kind: 'event',
          on_value: 'wave_seen',
          score_min: 2.5,
          message_id: 'tpl',
          message_values: '{"k":"v"}',
          include_email: 0,
          cap_count: 1000,
          cap_window_ms: 3_600_000,
          quiet_start: null,
          quiet_end: null,
        },
        'test',
        now,
      );
      await tx.triggers.setEnabled(siteId, t.id, true, now);
      return (await tx.triggers.get(siteId, t.id))!;
    });
    expect(trigger.enabled).toBe(1);
    // Events insert and trigger read asked together by each of 40 operations: one wave, one statement on PostgreSQL
    // (once the texts ran on their own, which tells their columns: the first operation, alone).
    const seen: unknown[] = [];
    const together = await groupsOf(store, 40, (i) =>
      store.write(
        async (tx) => {
          const [id, listening] = await Promise.all([
            tx.activity.insertEvent({ siteId, sessionId: `r${i}`, profileId: `prf_r${i}`, visitorId: null, type: 'wave_seen', ts: i, body: '{}', now }),
            tx.triggers.listeningForEvent(siteId, 'wave_seen'),
          ]);
          seen.push(listening);
          return id;
        },
        { key: `r${i}` },
      ),
      true,
    );
    for (const listening of seen) expect(listening).toEqual([trigger]);
    expect(seen.length).toBe(40);
    expect(await count(store, "SELECT count(*) AS n FROM events WHERE site_id = ? AND type = 'wave_seen'", [siteId])).toBe(40);
    // BEGIN, the combined statement, COMMIT.
    if (onPg) expect(maxTrips(together, 10)).toBeLessThanOrEqual(3);
    // Through the ingestion service: every event fires the trigger once, for its session's profile.
    const first = await Promise.all(Array.from({ length: 50 }, (_, i) => event(svc, siteId, `w${i}`)));
    await groupsOf(store, 50, (i) => event(svc, siteId, `w${i}`, 'wave_seen'));
    const fires = await store.sql.all<{ profile_id: string }>('SELECT profile_id FROM trigger_fires WHERE trigger_id = ?', [trigger.id]);
    expect(fires.map((f) => f.profile_id).sort()).toEqual(first.map((r) => r.profile_id).sort());
    // Known sessions, no trigger listening: BEGIN, the sessions read, the events and outbox inserts with the triggers read
    // (the event's id reserved ahead, so its outbox row need not wait for it), COMMIT.
    const known = await groupsOf(store, 50, (i) => event(svc, siteId, `w${i}`));
    // The same for an event alone in its group.
    const alone = await groupsOf(store, 1, () => event(svc, siteId, 'w0'));
    expect(await count(store, 'SELECT count(*) AS n FROM events WHERE site_id = ?', [siteId])).toBe(40 + 151);
    const rows = await store.sql.all<{ payload: string }>("SELECT payload FROM outbox WHERE site_id = ? AND event_type = 'pageview'", [siteId]);
    const stored = new Set((await store.sql.all<{ id: number }>("SELECT id FROM events WHERE site_id = ? AND type = 'pageview'", [siteId])).map((r) => `evt_${r.id}`));
    expect(rows.length).toBe(101);
    for (const r of rows) expect(stored.has((JSON.parse(r.payload) as { event_id: string }).event_id)).toBe(true);
    if (!onPg) return;
    expect(maxTrips(known, 10)).toBeLessThanOrEqual(4);
    expect(maxTrips(alone, 1)).toBeLessThanOrEqual(4);
  });

  it("one read text asked by many operations of a group: each gets its own set's rows in order, identical sets share a statement but not their row objects", async () => {
    const { store, siteId } = await open();
    const now = Date.now();
    // Sessions with 0 to 3 events each (ids in insertion order).
    await store.write(async (tx) => {
      for (let s = 0; s < 12; s++) {
        for (let e = 0; e < s % 4; e++) {
          await tx.activity.insertEvent({ siteId, sessionId: `m${s}`, profileId: `prf_m${s}`, visitorId: null, type: `t${e}`, ts: 10 - e, body: '{}', now });
        }
      }
    });
    // The last parameter distinct per session, or shared by all (more sets than distinctSets keeps per value of it).
    const lastDistinct = 'SELECT type, ts FROM events WHERE site_id = ? AND session_id = ? ORDER BY id';
    const lastShared = 'SELECT type, ts FROM events WHERE session_id = ? AND site_id = ? ORDER BY id';
    for (const [sql, params] of [
      [lastDistinct, (s: string) => [siteId, s]],
      [lastShared, (s: string) => [s, siteId]],
    ] as const) {
      const expected = new Map<string, unknown[]>();
      for (let s = 0; s < 12; s++) expected.set(`m${s}`, await store.sql.all(sql, params(`m${s}`)));
      expect(expected.get('m3')).toEqual([
        { type: 't0', ts: 10 },
        { type: 't1', ts: 9 },
        { type: 't2', ts: 8 },
      ]);
      // Twice as a wave of reads alone, then with an insert beside each read (a combined wave on PostgreSQL); operations
      // 2k and 2k+1 ask the same set, and each changes the rows it got.
      for (const withInsert of [false, true]) {
        const got = new Map<number, unknown[]>();
        const groups = await groupsOf(store, 24, (i) =>
          store.write(
            async (tx) => {
              const session = `m${Math.floor(i / 2)}`;
              const [rows] = await Promise.all([
                tx.sql.all<{ type: string; ts: number }>(sql, params(session)),
                withInsert ? tx.activity.insertEvent({ siteId, sessionId: `n${i}`, profileId: 'prf_n', visitorId: null, type: 'x', ts: 0, body: '{}', now }) : null,
              ]);
              got.set(i, structuredClone(rows));
              for (const r of rows) r.type = `changed by ${i}`;
            },
            { key: `op${i}` },
          ),
        );
        for (let i = 0; i < 24; i++) expect(got.get(i)).toEqual(expected.get(`m${Math.floor(i / 2)}`));
        // BEGIN with the wave's one statement (the reads, and the inserts with them), COMMIT.
        if (onPg) expect(maxTrips(groups, 10)).toBeLessThanOrEqual(3);
      }
    }
  });

  it('one read asked alike by every operation of a group, or alike but for one operation (first, middle or last), or alike but for a value that JSON writes the same: each gets its own rows', async () => {
    const { store, siteId } = await open();
    const now = Date.now();
    await store.write(async (tx) => {
      for (const [s, n] of [
        ['same', 2],
        ['other', 1],
      ] as const) {
        for (let e = 0; e < n; e++) await tx.activity.insertEvent({ siteId, sessionId: s, profileId: `prf_${s}`, visitorId: null, type: `${s}${e}`, ts: e, body: '{}', now });
      }
    });
    const sql = 'SELECT type FROM events WHERE site_id = ? AND session_id = ? AND ts >= ? ORDER BY id';
    const same = [{ type: 'same0' }, { type: 'same1' }];
    const other = [{ type: 'other0' }];
    // -0 and 0 are one set (as their JSON forms are); a different session at position `odd` (none: -1) is its own.
    for (const odd of [-1, 0, 11, 23]) {
      const got = new Map<number, unknown[]>();
      await groupsOf(store, 24, (i) =>
        store.write(
          async (tx) => {
            const rows = await tx.sql.all<{ type: string }>(sql, [siteId, i === odd ? 'other' : 'same', i % 3 === 0 ? -0 : 0]);
            got.set(i, structuredClone(rows));
            for (const r of rows) r.type = `changed by ${i}`;
          },
          { key: `alike${i}` },
        ),
      );
      for (let i = 0; i < 24; i++) expect(got.get(i), `operation ${i}, odd ${odd}`).toEqual(i === odd ? other : same);
    }
  });

  it('a combined wave that fails (one insert breaks a constraint) is run again in turn: only the breaking operation fails', async () => {
    const { store, siteId } = await open();
    const modes: (string | undefined)[] = [];
    const off = store.onGroupCommit((g) => modes.push(g.mode));
    const op = (i: number) =>
      store.write(
        async (tx) => {
          const [id] = await Promise.all([
            tx.activity.insertEvent({ siteId, sessionId: `f${i}`, profileId: `prf_f${i}`, visitorId: null, type: (i === 7 ? null : 'pageview') as string, ts: i, body: '{}', now: i }),
            tx.triggers.listeningForEvent(siteId, 'pageview'),
          ]);
          return id;
        },
        { key: `f${i}` },
      );
    // The first alone (its texts' columns are then known: the others' wave is combined), then the rest at once.
    const outcomes: PromiseSettledResult<number>[] = [await op(0).then((value) => ({ status: 'fulfilled' as const, value }))];
    outcomes.push(...(await Promise.allSettled(Array.from({ length: 29 }, (_, i) => op(i + 1)))));
    off();
    expect(outcomes.flatMap((o, i) => (o.status === 'rejected' ? [i] : []))).toEqual([7]);
    if (onPg) expect(modes).toContain('rerun');
    const stored = await store.sql.all<{ ts: number }>('SELECT ts FROM events WHERE site_id = ? ORDER BY ts', [siteId]);
    expect(stored.map((r) => Number(r.ts))).toEqual(Array.from({ length: 30 }, (_, i) => i).filter((i) => i !== 7));
  });
});

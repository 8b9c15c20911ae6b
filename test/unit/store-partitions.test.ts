import { rmSync } from 'node:fs';
import pg from 'pg';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/store.js';
import { PG_MIGRATIONS } from '../../src/store/pg/migrations.js';
import { MONTHS_AHEAD, monthOf } from '../../src/store/pg/partitions.js';
import { migratePg, pgClientConfig } from '../../src/store/pg/store.js';
import { Janitor } from '../../src/workers/janitor.js';
import { databaseUrlFor, PG_BASE_URL } from '../helpers/backend.js';
import { tempDir } from '../helpers/svc.js';
import { openTestStore } from '../helpers/store.js';

/**
 * Time partitions of the PostgreSQL store (migration 15, pg/partitions.ts):
 * events, exposures, the health log and the outbox are partitioned by month.
 * A group commit whose rows fall on both sides of a month boundary stores
 * every row (on SQLite too, which has no partitions); a row written into a
 * month without a partition lands in DEFAULT and moves when the month's
 * partition is created; retention drops whole partitions past the cutoff but
 * never one that holds a pending outbox row; two instances creating the same
 * months do not race; existing databases upgrade in place.
 */
const onPg = PG_BASE_URL !== undefined;
const dirs: string[] = [];
const stores: Store[] = [];

async function open(): Promise<{ store: Store; siteId: string; dir: string }> {
  const dir = tempDir('svc-part-');
  dirs.push(dir);
  const store = await openTestStore(dir, { poolSize: 6 });
  stores.push(store);
  const site = await store.write((tx) => tx.sites.create({ name: 'partitions' }));
  return { store, siteId: site.id, dir };
}

afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** The partition holding each row of `table` for the site, by id (PostgreSQL). */
async function whereRows(store: Store, table: string, siteId: string): Promise<Map<number, string>> {
  const rows = await store.sql.all<{ id: number; part: string }>(`SELECT id, tableoid::regclass::text AS part FROM ${table} WHERE site_id = ?`, [siteId]);
  return new Map(rows.map((r) => [Number(r.id), r.part.replace(/^.*\./, '')]));
}

const suffix = (ms: number) => monthOf(ms).suffix;

describe('time partitions', () => {
  it('a group commit straddling a month boundary stores every row, each in its month', async () => {
    const { store, siteId } = await open();
    const boundary = monthOf(Date.now(), 1).lo;
    const groups: { operations: number; mode?: string }[] = [];
    const off = store.onGroupCommit((g) => groups.push(g));
    // Submitted at once with distinct keys: on PostgreSQL one set-based group, one multi-row INSERT per table
    // whose rows go to two partitions.
    const n = 40;
    const ids = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        store.write(
          async (tx) => {
            const at = i % 2 === 0 ? boundary - 1 - i : boundary + i;
            const event = await tx.activity.insertEvent({
              siteId,
              sessionId: `s${i}`,
              profileId: `p${i}`,
              visitorId: `v${i}`,
              type: 'pageview',
              ts: at,
              body: JSON.stringify({ i }),
              now: at,
            });
            const outbox = await tx.activity.enqueue(siteId, 'event.created', { i }, at);
            return { event, outbox, at };
          },
          { key: `k${i}` },
        ),
      ),
    );
    off();
    expect(groups.reduce((a, g) => a + g.operations, 0)).toBeGreaterThanOrEqual(n);
    if (onPg) expect(groups.some((g) => g.mode === 'set_based' && g.operations > 1)).toBe(true);
    expect(new Set(ids.map((r) => r.event)).size).toBe(n);
    const events = await store.sql.all<{ id: number; received_at: number; body: string }>('SELECT id, received_at, body FROM events WHERE site_id = ? ORDER BY id', [
      siteId,
    ]);
    expect(events.map((e) => Number(e.id)).sort((a, b) => a - b)).toEqual(ids.map((r) => r.event).sort((a, b) => a - b));
    for (const r of ids) expect(Number(events.find((e) => Number(e.id) === r.event)!.received_at)).toBe(r.at);
    const outbox = await store.sql.all<{ id: number }>('SELECT id FROM outbox WHERE site_id = ?', [siteId]);
    expect(outbox.map((o) => Number(o.id)).sort((a, b) => a - b)).toEqual(ids.map((r) => r.outbox).sort((a, b) => a - b));
    if (onPg) {
      const parts = await whereRows(store, 'events', siteId);
      for (const r of ids) expect(parts.get(r.event)).toBe(`events_p${suffix(r.at)}`);
      expect(new Set(parts.values())).toEqual(new Set([`events_p${suffix(boundary - 1)}`, `events_p${suffix(boundary)}`]));
      const outParts = await whereRows(store, 'outbox', siteId);
      for (const r of ids) expect(outParts.get(r.outbox)).toBe(`outbox_p${suffix(r.at)}`);
    }
  });

  it.skipIf(!onPg)('a write into a month without a partition lands in DEFAULT and moves into the partition when it is created', async () => {
    const { store, siteId } = await open();
    const far = monthOf(Date.now(), MONTHS_AHEAD + 4);
    const at = far.lo + 3_600_000;
    const id = await store.write((tx) =>
      tx.activity.insertEvent({ siteId, sessionId: 's', profileId: 'p', visitorId: null, type: 'late', ts: at, body: '{"n":1}', now: at }),
    );
    const exposureAt = far.lo + 7_200_000;
    await store.write((tx) =>
      tx.exposures.insert([
        {
          siteId,
          visitorId: 'v1',
          profileId: null,
          zoneId: 'zone_1',
          variantId: null,
          experimentId: 'exp_1',
          armId: 'arm_1',
          holdout: false,
          url: 'https://shop.example/',
          at: exposureAt,
        },
      ]),
    );
    expect((await whereRows(store, 'events', siteId)).get(id)).toBe('events_default');
    expect([...(await whereRows(store, 'exposures', siteId)).values()]).toEqual(['exposures_default']);
    const before = { ...store.partitions!.counters };
    // The server's pass in the month before: the far month is among the months ahead now.
    const created = await store.partitions!.ensure(monthOf(at, -MONTHS_AHEAD).lo);
    expect(created).toBeGreaterThanOrEqual(4);
    expect(store.partitions!.counters.moved - before.moved).toBe(2);
    expect((await whereRows(store, 'events', siteId)).get(id)).toBe(`events_p${far.suffix}`);
    expect([...(await whereRows(store, 'exposures', siteId)).values()]).toEqual([`exposures_p${far.suffix}`]);
    const row = await store.sql.get<{ id: number; body: string; received_at: number }>('SELECT id, body, received_at FROM events WHERE site_id = ?', [siteId]);
    expect({ id: Number(row!.id), body: row!.body, received_at: Number(row!.received_at) }).toEqual({ id, body: '{"n":1}', received_at: at });
    // Done once: a second pass creates nothing and moves nothing.
    expect(await store.partitions!.ensure(monthOf(at, -MONTHS_AHEAD).lo)).toBe(0);
    // New ids keep growing past the moved row's.
    const next = await store.write((tx) =>
      tx.activity.insertEvent({ siteId, sessionId: 's', profileId: 'p', visitorId: null, type: 'next', ts: Date.now(), body: '{}', now: Date.now() }),
    );
    expect(next).toBeGreaterThan(id);
  });

  it.skipIf(!onPg)('retention drops whole partitions past the cutoff and keeps a partition holding a pending outbox row', async () => {
    const { store, siteId } = await open();
    const now = Date.now();
    const m4 = monthOf(now, -4);
    const m3 = monthOf(now, -3);
    const m2 = monthOf(now, -2);
    // Months -4, -3 and -2 get their partitions (as a server running then would have made them).
    expect(await store.partitions!.ensure(m4.lo)).toBe(12);
    const cutoff = monthOf(now, -1).lo;
    const outbox = async (createdAt: number, dispatchedAt: number | null) => {
      const id = await store.write((tx) => tx.activity.enqueue(siteId, 'event.created', { createdAt }, createdAt));
      if (dispatchedAt !== null) await store.sql.run('UPDATE outbox SET dispatched_at = ? WHERE id = ?', [dispatchedAt, id]);
      return id;
    };
    const pendingOld = await outbox(m4.lo + 1000, null);
    const doneOld = await outbox(m4.lo + 2000, m4.lo + 3000);
    await outbox(m3.lo + 1000, m3.lo + 2000);
    await outbox(m3.lo + 5000, m3.lo + 6000);
    // Created before the cutoff, dispatched after it: still within retention.
    const lateDispatch = await outbox(m2.hi - 1000, cutoff + 1000);
    const current = await outbox(now, null);
    for (const at of [m3.lo + 10, m2.lo + 10, now]) {
      await store.sql.run(
        "INSERT INTO health_log (site_id, integration, destination_id, kind, ok, created_at) VALUES (?, 'webhooks', 'dst_1', 'attempt', 1, ?)",
        [siteId, at],
      );
    }
    const janitor = new Janitor(store, { retentionMs: Date.now() - cutoff, intervalMs: 3_600_000, leaseMs: 30_000, logger: pino({ level: 'silent' }) });
    const done = await janitor.pass();
    await janitor.stop();
    const parts = async (table: string) =>
      (
        await store.sql.all<{ name: string }>(
          'SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = to_regclass(?) ORDER BY 1',
          [table],
        )
      ).map((r) => r.name);
    const outboxParts = await parts('outbox');
    // -4 holds a pending row: kept; -3 is all dispatched before the cutoff: dropped; -2 has a row dispatched after it: kept.
    expect(outboxParts).toContain(`outbox_p${m4.suffix}`);
    expect(outboxParts).not.toContain(`outbox_p${m3.suffix}`);
    expect(outboxParts).toContain(`outbox_p${m2.suffix}`);
    const healthParts = await parts('health_log');
    // Empty or not, every health-log month before the cutoff goes (the health log has no pending rows).
    expect(healthParts).not.toContain(`health_log_p${m4.suffix}`);
    expect(healthParts).not.toContain(`health_log_p${m3.suffix}`);
    expect(healthParts).not.toContain(`health_log_p${m2.suffix}`);
    expect(healthParts).toContain(`health_log_p${monthOf(now).suffix}`);
    // Events and exposures are kept whole.
    expect(await parts('events')).toContain(`events_p${m3.suffix}`);
    expect(await parts('exposures')).toContain(`exposures_p${m3.suffix}`);
    expect(janitor.counters.partitionsDropped).toBe(4);
    expect(store.partitions!.counters.dropped).toBe(4);
    // The rows left are those the row-by-row rule keeps: pending, dispatched after the cutoff, current.
    const left = (await store.sql.all<{ id: number }>('SELECT id FROM outbox WHERE site_id = ? ORDER BY id', [siteId])).map((r) => Number(r.id));
    expect(left).toEqual([pendingOld, lateDispatch, current]);
    expect(left).not.toContain(doneOld);
    // The dropped partitions' rows were not counted as deleted rows; the old dispatched row of -4 was.
    expect(done.outbox).toBe(1);
    const health = await store.sql.all<{ created_at: number }>('SELECT created_at FROM health_log WHERE site_id = ?', [siteId]);
    expect(health.map((h) => Number(h.created_at))).toEqual([now]);
  });

  it.skipIf(!onPg)('two instances creating the same months at once create each partition once, without an error', async () => {
    const { store, dir } = await open();
    const other = await openTestStore(dir, { poolSize: 4 });
    stores.push(other);
    const at = monthOf(Date.now(), 12).lo;
    const [a, b] = await Promise.all([store.partitions!.ensure(at), other.partitions!.ensure(at)]);
    // Four tables, three months each, split between the two in whatever order the advisory lock let them in.
    expect(a + b).toBe(12);
    expect(await store.partitions!.ensure(at)).toBe(0);
  });

  it.skipIf(!onPg)('an existing database upgrades in place: rows keep their ids, land in their months, and ids continue', async () => {
    const dir = tempDir('svc-part-up-');
    dirs.push(dir);
    const { schema, ...config } = pgClientConfig({ url: databaseUrlFor(dir), poolSize: 2 });
    const pool = new pg.Pool(config);
    try {
      await migratePg(pool, schema, PG_MIGRATIONS.slice(0, 14));
      const now = Date.now();
      const old = monthOf(now, -5).lo + 5000;
      for (const [i, at] of [old, now].entries()) {
        await pool.query(
          "INSERT INTO events (site_id, session_id, profile_id, type, ts, body, received_at) VALUES ('site_u', 's', 'p', 'pageview', $1, $2, $1)",
          [at, `{"i":${i}}`],
        );
        await pool.query("INSERT INTO outbox (site_id, event_type, payload, created_at) VALUES ('site_u', 'x', '{}', $1)", [at]);
        await pool.query(
          "INSERT INTO exposures (site_id, visitor_id, zone_id, experiment_id, arm_id, url, created_at) VALUES ('site_u', 'v', 'z', 'exp', 'arm', '/', $1)",
          [at],
        );
      }
      const before = (await pool.query<{ id: number; received_at: number }>('SELECT id, received_at FROM events ORDER BY id')).rows;
      expect(await migratePg(pool, schema, PG_MIGRATIONS.slice(0, 15))).toEqual([15]);
      const after = (await pool.query<{ id: number; received_at: number; part: string }>('SELECT id, received_at, tableoid::regclass::text AS part FROM events ORDER BY id'))
        .rows;
      expect(after.map((r) => [Number(r.id), Number(r.received_at)])).toEqual(before.map((r) => [Number(r.id), Number(r.received_at)]));
      expect(after.map((r) => r.part.replace(/^.*\./, ''))).toEqual([`events_p${suffix(old)}`, `events_p${suffix(now)}`]);
      const kinds = (await pool.query<{ relkind: string }>("SELECT relkind FROM pg_class WHERE oid IN (to_regclass('events'), to_regclass('exposures'), to_regclass('health_log'), to_regclass('outbox'))")).rows;
      expect(kinds.map((k) => k.relkind)).toEqual(['p', 'p', 'p', 'p']);
      // Every month from the oldest row to two ahead has its partition, and the DEFAULT exists.
      const names = (
        await pool.query<{ name: string }>("SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = to_regclass('outbox')")
      ).rows.map((r) => r.name);
      for (let k = -5; k <= MONTHS_AHEAD; k++) expect(names).toContain(`outbox_p${monthOf(now, k).suffix}`);
      expect(names).toContain('outbox_default');
      const next = await pool.query<{ id: number }>(
        "INSERT INTO events (site_id, session_id, profile_id, type, ts, body, received_at) VALUES ('site_u', 's', 'p', 'pageview', $1, '{}', $1) RETURNING id",
        [now],
      );
      expect(Number(next.rows[0]!.id)).toBe(Math.max(...before.map((r) => Number(r.id))) + 1);
      expect(Number((await pool.query<{ n: number }>('SELECT count(*) AS n FROM exposures')).rows[0]!.n)).toBe(2);
    } finally {
      await pool.end();
    }
  });
});

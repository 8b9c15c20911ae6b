import { afterEach, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import type { Store } from '../../src/store/store.js';
import type { WriteOp } from '../../src/store/repos.js';
import type { GroupCommitInfo } from '../../src/store/observe.js';
import type { DeliveryRow, DestinationRow, NewDelivery } from '../../src/store/webhooks.js';
import type { AttemptResult } from '../../src/outbound/sender.js';
import type { JobOutcome } from '../../src/adplatforms/http.js';
import { recordAttempts } from '../../src/webhooks/dispatcher.js';
import { recordJobAttempts } from '../../src/adplatforms/worker.js';
import { PG_BASE_URL } from '../helpers/backend.js';
import { tempDir } from '../helpers/svc.js';
import { openTestStore } from '../helpers/store.js';

/**
 * The webhook and ad-platform outcome writes are set-based: a lot of delivery
 * outcomes (the dispatcher's recordAttempts), a fan-out batch of deliveries
 * and a batch of ad-platform job outcomes each cost a fixed number of round
 * trips on PostgreSQL, the same for 20 rows as for 300 (one statement per
 * row would be hundreds). On SQLite (no round trips) the same calls must store
 * the same rows. The pg vitest project runs this file on PostgreSQL.
 */
const onPg = PG_BASE_URL !== undefined;
const dirs: string[] = [];
const stores: Store[] = [];

const RETRY = { delaysMs: [60_000, 120_000], jitter: 0 };

async function open(): Promise<{ store: Store; siteId: string; dest: DestinationRow }> {
  const dir = tempDir('svc-outcomes-');
  dirs.push(dir);
  const store = await openTestStore(dir, { poolSize: 6 });
  stores.push(store);
  const site = await store.write((tx) => tx.sites.create({ name: 'outcomes' }));
  const dest = await store.write((tx) => tx.webhooks.createDestination({ siteId: site.id, url: 'https://hooks.test/a', secretEnc: null, events: ['all'] }));
  return { store, siteId: site.id, dest };
}

afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Runs one write operation alone; returns its value and the round trips of the group commit that carried it. */
async function tripsOf<T>(store: Store, fn: WriteOp<T>): Promise<{ value: T; roundTrips: number }> {
  const groups: GroupCommitInfo[] = [];
  const off = store.onGroupCommit((g) => groups.push(g));
  let value: T;
  try {
    value = await store.write(fn);
  } finally {
    off();
  }
  expect(groups.length).toBe(1);
  expect(groups[0]!.operations).toBe(1);
  return { value, roundTrips: groups[0]!.roundTrips };
}

async function count(store: Store, sql: string, params: unknown[]): Promise<number> {
  return Number((await store.sql.get<{ n: number }>(sql, params))!.n);
}

const ok = (status = 200): AttemptResult => ({ ok: true, status, latencyMs: 3, errorClass: null, message: null, excerpt: 'fine' });
const failed = (status: number | null): AttemptResult => ({
  ok: false,
  status,
  latencyMs: 4,
  errorClass: status === null ? 'connection' : 'http_status',
  message: status === null ? 'connect ECONNREFUSED' : `receiver answered ${status}`,
  excerpt: null,
});

async function newDeliveries(store: Store, siteId: string, dest: DestinationRow, n: number, tag: string): Promise<{ rows: DeliveryRow[]; roundTrips: number }> {
  const now = Date.now();
  const list: NewDelivery[] = Array.from({ length: n }, (_, i) => ({
    siteId,
    destinationId: dest.id,
    outboxId: null,
    eventType: 'add_to_cart',
    payload: JSON.stringify({ tag, i }),
    now,
  }));
  const { value: ids, roundTrips } = await tripsOf(store, (tx) => tx.webhooks.insertDeliveries(list));
  expect(new Set(ids).size).toBe(n);
  const rows = await Promise.all(ids.map(async (id) => (await store.webhooks.delivery(id))!));
  // In the order given, each with its own payload.
  expect(rows.map((r) => (JSON.parse(r.payload) as { i: number }).i)).toEqual(list.map((_, i) => i));
  return { rows, roundTrips };
}

describe(`set-based webhook and ad-platform outcomes (${onPg ? 'PostgreSQL' : 'SQLite'})`, () => {
  it('fan-out inserts and a lot of delivery outcomes: every row written, and a fixed few round trips for 20 as for 300', async () => {
    const { store, siteId, dest } = await open();
    const trips: { insert: number; record: number }[] = [];
    for (const n of [20, 300]) {
      const { rows, roundTrips: insert } = await newDeliveries(store, siteId, dest, n, `n${n}`);
      const outcomes = rows.map((d, i) => ({ dest, d, result: ok(200 + (i % 3)) }));
      const { roundTrips: record } = await tripsOf(store, (tx) => recordAttempts(tx, outcomes, { retry: RETRY, disableAfter: { failures: 5, windowMs: 0 } }));
      trips.push({ insert, record });
      for (const [i, d] of rows.entries()) {
        const after = (await store.webhooks.delivery(d.id))!;
        expect(after.state).toBe('delivered');
        expect(after.attempts).toBe(1);
        expect(after.last_status).toBe(200 + (i % 3));
        expect(after.delivered_at).not.toBeNull();
      }
      const log = await store.webhooks.healthLog({ destinationId: dest.id, limit: 1000 });
      const mine = log.filter((h) => rows.some((d) => d.id === h.delivery_id));
      // One row per outcome, in the order of the outcomes.
      expect(mine.map((h) => h.delivery_id)).toEqual(rows.map((d) => d.id));
      expect(mine.every((h) => h.ok === 1 && h.kind === 'attempt' && h.attempt === 1 && h.integration === 'webhook' && h.response_excerpt === 'fine')).toBe(true);
      expect(mine.map((h) => h.status)).toEqual(rows.map((_, i) => 200 + (i % 3)));
    }
    if (!onPg) return;
    // BEGIN, one INSERT, COMMIT; BEGIN, the health-log INSERT, the deliveries' UPDATE, the destination's, COMMIT.
    expect(trips).toEqual([
      { insert: 3, record: 5 },
      { insert: 3, record: 5 },
    ]);
  });

  it('failures among the successes: the same deliveries, streak and automatic disabling as one outcome after another', async () => {
    const { store, siteId, dest } = await open();
    const { rows } = await newDeliveries(store, siteId, dest, 9, 'mixed');
    const results = [ok(), failed(500), ok(), ok(), failed(null), failed(503), ok(), failed(502), ok()];
    const disableAfter = { failures: 2, windowMs: 0 };
    await store.write((tx) => recordAttempts(tx, rows.map((d, i) => ({ dest, d, result: results[i]! })), { retry: RETRY, disableAfter }));
    const after = await Promise.all(rows.map(async (d) => (await store.webhooks.delivery(d.id))!));
    expect(after.map((d) => d.state)).toEqual(results.map((r) => (r.ok ? 'delivered' : 'pending')));
    expect(after.every((d) => d.attempts === 1)).toBe(true);
    expect(after.map((d) => d.last_status)).toEqual(results.map((r) => r.status));
    for (const [i, d] of after.entries()) {
      if (results[i]!.ok) expect(d.last_error).toBeNull();
      else expect(d.next_attempt_at).toBeGreaterThan(Date.now() + 50_000); // the first retry, a minute on
    }
    // One after another: ok, fail (1), ok (0), ok, fail (1), fail (2: disabled), ok (0), fail (1), ok (0).
    const destAfter = (await store.webhooks.destination(dest.id))!;
    expect(destAfter.enabled).toBe(0);
    expect(destAfter.disabled_reason).toMatch(/^disabled automatically after 2 consecutive failed attempts/);
    expect(destAfter.consecutive_failures).toBe(0);
    const log = await store.webhooks.healthLog({ destinationId: dest.id, limit: 100 });
    expect(log.map((h) => h.kind)).toEqual(['attempt', 'attempt', 'attempt', 'attempt', 'attempt', 'attempt', 'disabled', 'attempt', 'attempt', 'attempt']);
    expect(log.filter((h) => h.kind === 'attempt').map((h) => h.delivery_id)).toEqual(rows.map((d) => d.id));
    expect(log.filter((h) => h.kind === 'attempt').map((h) => h.ok)).toEqual(results.map((r) => (r.ok ? 1 : 0)));
  });

  it('ad-platform job outcomes: delivered, due again and failed for good, a fixed few round trips for 20 jobs as for 300', async () => {
    const { store, siteId } = await open();
    const conn = await store.write((tx) => tx.adplatforms.create({ siteId, platform: 'meta', name: null, config: {}, secretsEnc: 'sealed' }));
    const trips: number[] = [];
    let from = 0;
    for (const n of [20, 300]) {
      const now = Date.now();
      await store.write(async (tx) => {
        for (let i = 0; i < n; i++) await tx.adplatforms.insertJob({ siteId, connectionId: conn.id, conversionId: `cv_${from + i}`, payload: '{}', now });
      });
      from += n;
      const jobs = await store.adplatforms.due(conn.id, Date.now(), 1000);
      expect(jobs.length).toBe(n);
      // Delivered, a 500 to retry, refused locally (no status: failed for good), a 429 with Retry-After.
      const outcomes: JobOutcome[] = jobs.map((_, i) =>
        i % 4 === 0
          ? { ok: true, status: 200, latencyMs: 5, errorClass: null, message: null, excerpt: '{}', retryable: false }
          : i % 4 === 1
            ? { ok: false, status: 500, latencyMs: 5, errorClass: 'http_status', message: 'boom', excerpt: null, retryable: true }
            : i % 4 === 2
              ? { ok: false, status: null, latencyMs: 0, errorClass: 'invalid_event', message: 'unreadable', excerpt: null, retryable: false }
              : { ok: false, status: 429, latencyMs: 5, errorClass: 'http_status', message: 'slow down', excerpt: null, retryable: true, retryAfterMs: 600_000 },
      );
      const { value: ended, roundTrips } = await tripsOf(store, (tx) => recordJobAttempts(tx, { platform: 'meta', id: conn.id }, jobs, outcomes, RETRY));
      trips.push(roundTrips);
      expect(ended).toEqual(jobs.map((_, i) => ['delivered', 'retrying', 'failed', 'retrying'][i % 4]));
      for (const [i, j] of jobs.entries()) {
        const row = (await store.adplatforms.job(j.id))!;
        expect(row.attempts).toBe(1);
        expect(row.state).toBe(['delivered', 'pending', 'failed', 'pending'][i % 4]);
        expect(row.last_status).toBe([200, 500, null, 429][i % 4]);
        if (i % 4 === 1) expect(row.next_attempt_at).toBeGreaterThan(Date.now() + 50_000);
        if (i % 4 === 3) expect(row.next_attempt_at).toBeGreaterThan(Date.now() + 500_000);
        if (i % 4 === 2) expect(row.last_error).toBe('invalid_event: unreadable');
      }
      const log = await store.webhooks.healthLog({ destinationId: conn.id, integration: 'meta', limit: 1000 });
      expect(log.slice(-n).map((h) => h.delivery_id)).toEqual(jobs.map((j) => j.id));
      expect(log.slice(-n).map((h) => h.status)).toEqual(jobs.map((_, i) => [200, 500, null, 429][i % 4]));
    }
    // Failures that all lack a status (every job refused locally) still go as one set.
    const now = Date.now();
    await store.write(async (tx) => {
      for (let i = 0; i < 30; i++) await tx.adplatforms.insertJob({ siteId, connectionId: conn.id, conversionId: `cv_refused_${i}`, payload: '{}', now });
    });
    const refusedJobs = await store.adplatforms.due(conn.id, Date.now(), 1000);
    expect(refusedJobs.length).toBe(30);
    const refused: JobOutcome = { ok: false, status: null, latencyMs: 0, errorClass: 'expired', message: 'too old', excerpt: null, retryable: false };
    const { roundTrips } = await tripsOf(store, (tx) => recordJobAttempts(tx, { platform: 'meta', id: conn.id }, refusedJobs, refusedJobs.map(() => refused), RETRY));
    for (const j of refusedJobs) expect((await store.adplatforms.job(j.id))!).toMatchObject({ state: 'failed', last_status: null, last_error: 'expired: too old' });
    expect(await count(store, "SELECT count(*) AS n FROM health_log WHERE integration = 'meta' AND destination_id = ?", [conn.id])).toBe(350);
    if (!onPg) return;
    // BEGIN, the health-log INSERT, the delivered jobs' UPDATE, the failed jobs' UPDATE, COMMIT.
    expect(trips).toEqual([5, 5]);
    expect(roundTrips).toBe(4);
  });
});

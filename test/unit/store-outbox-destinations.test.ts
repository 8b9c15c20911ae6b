import { afterEach, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import type { Store } from '../../src/store/store.js';
import { IngestionService } from '../../src/domain/ingestion/service.js';
import { SegmentMembership } from '../../src/domain/segments/membership.js';
import { PG_BASE_URL } from '../helpers/backend.js';
import { tempDir } from '../helpers/svc.js';
import { openTestStore } from '../helpers/store.js';

/**
 * A behavioural event (pageview, click, add_to_cart, abandon_cart) writes its outbox row only when an enabled
 * destination of its site subscribes to its type (WebhooksRepo.receives, asked in the event's transaction): a
 * destination sees the events committed after it was created or enabled. On PostgreSQL several instances write at
 * once: a destination committed before an event's group commits is never missed (the lock of migration 18). The pg
 * project runs this file on PostgreSQL.
 */
const onPg = PG_BASE_URL !== undefined;
const dirs: string[] = [];
const stores: Store[] = [];

afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function open(dir?: string): Promise<{ store: Store; svc: IngestionService; dir: string }> {
  const d = dir ?? tempDir('svc-outbox-dst-');
  if (dir === undefined) dirs.push(d);
  const store = await openTestStore(d, { poolSize: 6 });
  stores.push(store);
  return { store, svc: new IngestionService(store, new SegmentMembership(store)), dir: d };
}

function event(svc: IngestionService, siteId: string, session: string, type = 'pageview', n = 0) {
  const body = { site_id: siteId, session_id: session, type, n };
  return svc.recordEvent(body as never, JSON.stringify(body), { ip: '203.0.113.7', userAgent: 'outbox-test' });
}

/** The outbox rows of a site's behavioural events: their type and the `n` of their event. */
async function rows(store: Store, siteId: string): Promise<{ type: string; n: number }[]> {
  const r = await store.sql.all<{ event_type: string; payload: string }>('SELECT event_type, payload FROM outbox WHERE site_id = ? ORDER BY id', [siteId]);
  return r.map((x) => ({ type: x.event_type, n: (JSON.parse(x.payload) as { properties: { n: number } }).properties.n }));
}

const destination = (store: Store, siteId: string, events: string[]) =>
  store.write((tx) => tx.webhooks.createDestination({ siteId, url: 'https://hooks.example.com/in', secretEnc: null, events }));

describe(`behavioural outbox rows follow the site's destinations (${onPg ? 'PostgreSQL' : 'SQLite'})`, () => {
  it("the subscriptions asked by the operations of one group (runs of the same site and type, each next to one differing in the site or the type alone): each gets its own site and type's answer; an ask after a destination change of the same operation sees it", async () => {
    const { store } = await open();
    const a = await store.write((tx) => tx.sites.create({ name: 'a' }));
    const b = await store.write((tx) => tx.sites.create({ name: 'b' }));
    await destination(store, a.id, ['pageview']);
    const run: [string, string][] = [
      [a.id, 'pageview'],
      [a.id, 'pageview'],
      [a.id, 'click'],
      [a.id, 'click'],
      [b.id, 'click'],
      [b.id, 'click'],
      [b.id, 'pageview'],
      [b.id, 'pageview'],
    ];
    const asks = [...run, ...run, ...run];
    // Operations submitted in one turn (one group commit; on PostgreSQL their asks share a statement wave).
    const got = await Promise.all(asks.map(([site, type], i) => store.write((tx) => tx.webhooks.receives(site, type), { key: `ask${i}` })));
    expect(got).toEqual(asks.map(([site, type]) => site === a.id && type === 'pageview'));
    const changed = await store.write(async (tx) => {
      const before = await tx.webhooks.receives(b.id, 'pageview');
      await tx.webhooks.createDestination({ siteId: b.id, url: 'https://hooks.example.com/in', secretEnc: null, events: ['pageview'] });
      return [before, await tx.webhooks.receives(b.id, 'pageview')];
    });
    expect(changed).toEqual([false, true]);
  });

  it('none without a destination; rows for the types one subscribes to from its creation on; none while disabled', async () => {
    const { store, svc } = await open();
    const site = await store.write((tx) => tx.sites.create({ name: 'a' }));
    const other = await store.write((tx) => tx.sites.create({ name: 'b' }));
    const enqueuedBefore = store.shared.enqueued.outbox;
    await event(svc, site.id, 's1', 'pageview', 1);
    await event(svc, site.id, 's1', 'click', 2);
    expect(await rows(store, site.id)).toEqual([]);
    // Nothing written, so nothing for the dispatcher to wake for (nor, on PostgreSQL, a NOTIFY).
    expect(store.shared.enqueued.outbox).toBe(enqueuedBefore);
    await destination(store, other.id, ['all']); // another site's: changes nothing here
    await event(svc, site.id, 's1', 'pageview', 3);
    expect(await rows(store, site.id)).toEqual([]);
    const d = await destination(store, site.id, ['click']);
    await event(svc, site.id, 's1', 'pageview', 4);
    await event(svc, site.id, 's1', 'click', 5);
    await event(svc, site.id, 's1', 'custom_step', 6);
    expect(await rows(store, site.id)).toEqual([{ type: 'click', n: 5 }]);
    await store.write((tx) => tx.webhooks.updateDestination(d.id, { events: ['all'] }));
    await event(svc, site.id, 's2', 'add_to_cart', 7);
    await store.write((tx) => tx.webhooks.updateDestination(d.id, { enabled: false }));
    await event(svc, site.id, 's2', 'abandon_cart', 8);
    await store.write((tx) => tx.webhooks.disableDestination(d.id, 'failing', Date.now())); // already off: no change
    await event(svc, site.id, 's2', 'pageview', 9);
    await store.write((tx) => tx.webhooks.updateDestination(d.id, { enabled: true }));
    await event(svc, site.id, 's2', 'pageview', 10);
    await store.write((tx) => tx.webhooks.disableDestination(d.id, 'failing', Date.now()));
    await event(svc, site.id, 's2', 'pageview', 11);
    await store.write((tx) => tx.webhooks.updateDestination(d.id, { enabled: true }));
    await store.write((tx) => tx.webhooks.removeDestination(d.id));
    await event(svc, site.id, 's2', 'pageview', 12);
    expect(await rows(store, site.id)).toEqual([
      { type: 'click', n: 5 },
      { type: 'add_to_cart', n: 7 },
      { type: 'pageview', n: 10 },
    ]);
  });

  it('a destination created while events are in flight: the events asked after its creation have their rows', async () => {
    const { store, svc } = await open();
    const site = await store.write((tx) => tx.sites.create({ name: 'a' }));
    await event(svc, site.id, 'warm', 'pageview', 0); // the site's subscriptions read (and cached on SQLite) as none
    const before = Array.from({ length: 10 }, (_, i) => event(svc, site.id, `g${i}`, 'pageview', 100 + i));
    const created = destination(store, site.id, ['pageview']);
    await created;
    await Promise.all(before);
    const after = await Promise.all(Array.from({ length: 10 }, (_, i) => event(svc, site.id, `g${i}`, 'pageview', 200 + i)));
    expect(after).toHaveLength(10);
    const got = (await rows(store, site.id)).map((r) => r.n);
    // Events asked after the destination committed all have their row; none has two.
    for (let i = 0; i < 10; i++) expect(got.filter((n) => n === 200 + i)).toHaveLength(1);
    expect(new Set(got).size).toBe(got.length);
  });

  it.skipIf(!onPg)('PostgreSQL: an event whose transaction waits on a destination not yet committed sees it once committed', async () => {
    const a = await open();
    const b = await open(a.dir); // a second instance on the same schema
    const site = await a.store.write((tx) => tx.sites.create({ name: 'a' }));
    // Instance B creates a destination and holds its transaction open.
    let release = (): void => undefined;
    const gate = new Promise<void>((r) => (release = r));
    let created = false;
    const creating = b.store.write(async (tx) => {
      await tx.webhooks.createDestination({ siteId: site.id, url: 'https://hooks.example.com/in', secretEnc: null, events: ['pageview'] });
      await gate;
    }).then(() => (created = true));
    await new Promise((r) => setTimeout(r, 200));
    // Instance A records an event meanwhile: it asks under the lock the creation holds, so it waits for that commit.
    let recorded = false;
    const recording = event(a.svc, site.id, 'w1', 'pageview', 1).then(() => (recorded = true));
    await new Promise((r) => setTimeout(r, 300));
    const waited = !recorded;
    release();
    await Promise.all([creating, recording]);
    expect(waited).toBe(true);
    expect(created).toBe(true);
    // Its group committed after the destination: its row is there.
    expect(await rows(a.store, site.id)).toEqual([{ type: 'pageview', n: 1 }]);
  });

  it.skipIf(!onPg)('PostgreSQL: a destination change waits for the groups that asked before it, which commit without rows', async () => {
    const a = await open();
    const b = await open(a.dir);
    const site = await a.store.write((tx) => tx.sites.create({ name: 'a' }));
    let release = (): void => undefined;
    const gate = new Promise<void>((r) => (release = r));
    // Instance A asks (no destination yet) and holds its transaction open.
    const asking = a.store.write(async (tx) => {
      const yes = await tx.webhooks.receives(site.id, 'pageview');
      await gate;
      return yes;
    });
    await new Promise((r) => setTimeout(r, 200));
    let created = false;
    const creating = destination(b.store, site.id, ['pageview']).then(() => (created = true));
    await new Promise((r) => setTimeout(r, 300));
    const waited = !created; // it waits for A's commit: A's answer (no) stays true up to it
    release();
    expect(await asking).toBe(false);
    await creating;
    expect(waited).toBe(true);
    expect(await a.store.write((tx) => tx.webhooks.receives(site.id, 'pageview'))).toBe(true);
  });

  it.skipIf(!onPg)('PostgreSQL, two instances ingesting while a destination is created: every event asked after its creation has its row, once', async () => {
    const a = await open();
    const b = await open(a.dir);
    const site = await a.store.write((tx) => tx.sites.create({ name: 'a' }));
    let n = 0;
    let stop = false;
    /** Per event: its n, when it was asked and when it was acknowledged (performance.now()). */
    const log: { n: number; asked: number; acked: number }[] = [];
    const writer = async (svc: IngestionService, lane: number) => {
      while (!stop) {
        const batch = Array.from({ length: 16 }, (_, i) => {
          const k = ++n;
          const asked = performance.now();
          return event(svc, site.id, `c${lane}-${i}`, 'pageview', k).then(() => log.push({ n: k, asked, acked: performance.now() }));
        });
        await Promise.all(batch);
      }
    };
    const writers = [writer(a.svc, 0), writer(b.svc, 1), writer(a.svc, 2), writer(b.svc, 3)];
    // Until some events are acknowledged (however slow the host), then the creation, then until enough events asked after it are.
    const until = async (done: () => boolean) => {
      while (!done()) await new Promise((r) => setTimeout(r, 20));
    };
    await until(() => log.length >= 64);
    const createdAsked = performance.now();
    await destination(b.store, site.id, ['pageview']);
    const createdAt = performance.now();
    await until(() => log.filter((e) => e.asked > createdAt).length >= 64);
    stop = true;
    await Promise.all(writers);
    const got = (await rows(a.store, site.id)).map((r) => r.n);
    expect(new Set(got).size).toBe(got.length); // never two rows for one event
    const after = log.filter((e) => e.asked > createdAt);
    expect(after.length).toBeGreaterThan(0);
    const have = new Set(got);
    expect(after.filter((e) => !have.has(e.n)).map((e) => e.n)).toEqual([]);
    // And none for an event acknowledged before the creation was asked.
    const before = log.filter((e) => e.acked < createdAsked);
    expect(before.length).toBeGreaterThan(0);
    expect(before.filter((e) => have.has(e.n)).map((e) => e.n)).toEqual([]);
  });
});

import { afterEach, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import type { Store } from '../../src/store/store.js';
import { IngestionService } from '../../src/domain/ingestion/service.js';
import { SegmentMembership } from '../../src/domain/segments/membership.js';
import { WebhooksRepo } from '../../src/store/webhooks.js';
import { TriggersRepo } from '../../src/store/triggers.js';
import { PG_BASE_URL } from '../helpers/backend.js';
import { tempDir } from '../helpers/svc.js';
import { openTestStore } from '../helpers/store.js';

/**
 * recordEvent asks two things together and awaits them in turn (the session with the subscriptions, then the
 * insert with the triggers' read): a failure of the one awaited second, while the first is still pending, fails
 * the request with that error and is never an unhandled rejection (which would stop the process); nothing of the
 * event is stored. The pg project runs this file on PostgreSQL.
 */
const onPg = PG_BASE_URL !== undefined;
const dirs: string[] = [];
const stores: Store[] = [];
const unhandled: unknown[] = [];
const onUnhandled = (err: unknown) => unhandled.push(err);

let restore = () => {};

afterEach(async () => {
  restore();
  process.off('unhandledRejection', onUnhandled);
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function setUp(): Promise<{ store: Store; svc: IngestionService; siteId: string }> {
  const d = tempDir('svc-ingest-asks-');
  dirs.push(d);
  const store = await openTestStore(d, { poolSize: 4 });
  stores.push(store);
  const site = await store.write((tx) => tx.sites.create({ name: 'asks' }));
  return { store, svc: new IngestionService(store, new SegmentMembership(store)), siteId: site.id };
}

function event(svc: IngestionService, siteId: string, session: string) {
  const body = { site_id: siteId, session_id: session, type: 'pageview' };
  return svc.recordEvent(body as never, JSON.stringify(body), { ip: '203.0.113.7', userAgent: 'asks-test' });
}

const count = async (store: Store, siteId: string) =>
  Number((await store.sql.get<{ n: number }>('SELECT count(*) AS n FROM events WHERE site_id = ?', [siteId]))!.n);

describe(`recordEvent's asks awaited in turn (${onPg ? 'PostgreSQL' : 'SQLite'})`, () => {
  for (const which of ['subscriptions', 'triggers'] as const) {
    it(`the ${which} read failing at once while the ask before it is pending: the event fails with its error, no unhandled rejection, nothing stored`, async () => {
      const { store, svc, siteId } = await setUp();
      await event(svc, siteId, 'known'); // the session exists: the later events' first ask is the sessions read
      process.on('unhandledRejection', onUnhandled);
      const failure = new Error(`${which} read failed`);
      // Replaced by hand, not by vi.spyOn: a spy handles the promises its function returns (to record how they settled).
      const proto = (which === 'subscriptions' ? WebhooksRepo.prototype : TriggersRepo.prototype) as unknown as Record<string, unknown>;
      const name = which === 'subscriptions' ? 'receives' : 'listeningForEvent';
      const original = proto[name];
      restore = () => (proto[name] = original);
      proto[name] = () => Promise.reject(failure);
      const results = await Promise.allSettled([event(svc, siteId, 'known'), event(svc, siteId, 'new1'), event(svc, siteId, 'new2')]);
      // Unhandled rejections are reported after the microtasks of the turn that left them: give them turns.
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
      expect(results.map((r) => (r.status === 'rejected' ? (r.reason as Error).message : 'stored'))).toEqual([failure.message, failure.message, failure.message]);
      expect(unhandled).toEqual([]);
      expect(await count(store, siteId)).toBe(1);
      restore();
      expect((await event(svc, siteId, 'known')).profile_id).toMatch(/^prf_/);
      expect(await count(store, siteId)).toBe(2);
    });
  }
});

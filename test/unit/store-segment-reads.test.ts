import { afterEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/store.js';
import { IngestionService } from '../../src/domain/ingestion/service.js';
import { SegmentMembership } from '../../src/domain/segments/membership.js';
import { cleanup, tempDir } from '../helpers/svc.js';
import { openTestStore } from '../helpers/store.js';

/**
 * What an event's segment evaluation reads back (the profile's memberships, each rule's match, its primary segment;
 * on SQLite read as plain values, pluck mode) decides what it writes: a segment entered, one left, the primary moved
 * and its segment.changed row, or nothing. Three events of one session through three segments, every step checked.
 */
const dirs: string[] = [];
const stores: Store[] = [];

afterEach(async () => {
  for (const s of stores.splice(0).reverse()) await s.close();
  for (const d of dirs.splice(0)) cleanup(d);
});

describe('segment evaluation of an event', () => {
  it('enters, leaves and moves the primary segment exactly when the rules say, one segment.changed a move', async () => {
    const dir = tempDir('svc-segreads-');
    dirs.push(dir);
    const store = await openTestStore(dir);
    stores.push(store);
    const site = await store.write((tx) => tx.sites.create({ name: 'segreads' }));
    const rule = (op: string, value: number, event = 'pageview') => JSON.stringify({ event, count: { op, value } });
    const [first, repeat, never] = await store.write(async (tx) => [
      await tx.segments.create({ siteId: site.id, name: 'first visit', rule: rule('lte', 1), priority: 5 }),
      await tx.segments.create({ siteId: site.id, name: 'repeat', rule: rule('gte', 2), priority: 1 }),
      await tx.segments.create({ siteId: site.id, name: 'never', rule: rule('gte', 1, 'refund'), priority: 10 }),
    ]);
    const svc = new IngestionService(store, new SegmentMembership(store));
    const body = { site_id: site.id, session_id: 'seg-s1', type: 'pageview', url: 'https://shop.test/p' };
    const event = () => svc.recordEvent(body as never, JSON.stringify(body), { ip: '203.0.113.9', userAgent: 'segreads' });
    const state = async (profileId: string) => ({
      members: (await store.sql.all<{ segment_id: string }>('SELECT segment_id FROM segment_members WHERE profile_id = ? ORDER BY segment_id', [profileId])).map(
        (r) => r.segment_id,
      ),
      primary: (await store.sql.get<{ p: string | null }>('SELECT primary_segment AS p FROM profiles WHERE id = ?', [profileId]))!.p,
      changes: (await store.sql.all<{ payload: string }>("SELECT payload FROM outbox WHERE site_id = ? AND event_type = 'segment.changed' ORDER BY id", [site.id])).map((r) => {
        const p = JSON.parse(r.payload) as { previous_segment: string | null; segment: string | null };
        return [p.previous_segment, p.segment];
      }),
    });

    const { profile_id: profile } = await event();
    expect(await state(profile)).toEqual({ members: [first!.id], primary: first!.id, changes: [[null, first!.id]] });
    // Two pageviews: "first visit" left (its membership was read back), "repeat" entered and now the primary.
    expect((await event()).profile_id).toBe(profile);
    expect(await state(profile)).toEqual({ members: [repeat!.id], primary: repeat!.id, changes: [[null, first!.id], [first!.id, repeat!.id]] });
    // Three: nothing moves, and no segment.changed (the primary read back is the one computed).
    await event();
    expect(await state(profile)).toEqual({ members: [repeat!.id], primary: repeat!.id, changes: [[null, first!.id], [first!.id, repeat!.id]] });
    expect(never!.id).not.toBe(first!.id);
  });
});

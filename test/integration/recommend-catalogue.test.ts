import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/store/db.js';
import { openStore, type Store } from '../../src/store/store.js';
import { RecommendService } from '../../src/domain/recommend/service.js';
import { recommendQuerySchema } from '../../src/domain/recommend/schema.js';
import { cleanup, tempDir } from '../helpers/svc.js';
import { mulberry32 } from '../helpers/prng.js';

/**
 * A synthetic catalogue of 500 skus whose true companions are known, stored in
 * a real SQLite file through the same repository calls the ingestion service
 * makes (conversion row + co-purchase update in one transaction).
 *
 * - s000–s004 are blockbusters: each is in 70% of orders, independently of
 *   everything else, so they co-occur with every item by chance — more often
 *   than the planted companions do.
 * - Background: 1–4 items from s005–s499 with Zipf-like popularity.
 * - Ten anchors (s100, s110, ..., s190), each drawn into 3% of orders; when
 *   one is, each of its planted companions (1–3 skus from s400–s499) joins
 *   with probability 0.5.
 * - One one-off pair (solo-x, solo-y) bought together once.
 */
const ORDERS = 6000;
const BLOCKBUSTERS = ['s000', 's001', 's002', 's003', 's004'];
const PLANTED: Record<string, string[]> = {
  s100: ['s400'],
  s110: ['s410', 's411'],
  s120: ['s420', 's421', 's422'],
  s130: ['s430'],
  s140: ['s440', 's441'],
  s150: ['s450', 's451', 's452'],
  s160: ['s460'],
  s170: ['s470', 's471'],
  s180: ['s480', 's481', 's482'],
  s190: ['s490'],
};
const sku = (i: number) => `s${String(i).padStart(3, '0')}`;


function generate(seed: number): string[][] {
  const rnd = mulberry32(seed);
  const background = Array.from({ length: 495 }, (_, i) => 1 / (i + 1) ** 0.8);
  const cdf: number[] = [];
  let acc = 0;
  for (const w of background) cdf.push((acc += w));
  const pick = () => {
    const x = rnd() * acc;
    let lo = 0;
    let hi = cdf.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return sku(5 + lo);
  };
  const orders: string[][] = [];
  for (let o = 0; o < ORDERS; o++) {
    const items: string[] = [];
    for (const b of BLOCKBUSTERS) if (rnd() < 0.7) items.push(b);
    const n = 1 + Math.floor(rnd() * 4);
    for (let i = 0; i < n; i++) items.push(pick());
    for (const [anchor, companions] of Object.entries(PLANTED)) {
      if (rnd() >= 0.03) continue;
      items.push(anchor);
      for (const c of companions) if (rnd() < 0.5) items.push(c);
    }
    if (rnd() < 0.05) items.push(items[0]!); // the same sku on two lines of one order
    orders.push(items);
  }
  orders.push(['solo-x', 'solo-y']);
  orders.push([]); // a conversion without line items counts nowhere
  return orders;
}

let dir: string;
let store: Store;
let orders: string[][];
const SITE = 'site_catalogue';
const OTHER = 'site_other';

async function load(siteId: string, list: string[][]) {
  const write = (batch: string[][], base: number) =>
    store.write(async (tx) => {
      for (const [i, items] of batch.entries()) {
        await tx.activity.insertConversion({
          id: `cnv_${siteId}_${base + i}`,
          siteId,
          sessionId: `s-${base + i}`,
          profileId: `p-${base + i}`,
          revenue: null,
          currency: 'USD',
          lineItems: JSON.stringify(items.map((s) => ({ sku: s, qty: 2, price: 1 }))),
          now: 0,
        });
        await tx.copurchase.record(siteId, items);
      }
    });
  for (let i = 0; i < list.length; i += 500) await write(list.slice(i, i + 500), i);
}

const recommend = (skus: string[], extra: { k?: number; min_support?: number } = {}, siteId = SITE) =>
  new RecommendService(store.copurchase).recommend(siteId, recommendQuerySchema.parse({ skus, ...extra }));

beforeAll(async () => {
  dir = tempDir();
  store = openStore({ dataDir: dir, synchronous: 'normal' });
  orders = generate(20261123);
  await load(SITE, orders);
  await load(OTHER, [['s100', 's999'], ['s100', 's999'], ['s100', 's999']]);
});

afterAll(async () => {
  await store.close();
  cleanup(dir);
});

describe('co-purchase counts', () => {
  it('are exact per order: distinct skus, both directions, per site', async () => {
    const distinct = orders.map((o) => [...new Set(o)]).filter((o) => o.length > 0);
    expect(await store.copurchase.totalOrders(SITE)).toBe(distinct.length);
    const n = (s: string) => distinct.filter((o) => o.includes(s)).length;
    const nn = (a: string, b: string) => distinct.filter((o) => o.includes(a) && o.includes(b)).length;
    for (const s of ['s000', 's100', 's120', 's422', 's499', 'solo-x']) expect(await store.copurchase.itemOrders(SITE, s), s).toBe(n(s));
    for (const a of ['s100', 's120', 's422']) {
      const got = new Map((await store.copurchase.companions(SITE, a, 1)).map((c) => [c.sku, c]));
      const expected = new Set(distinct.filter((o) => o.includes(a)).flat().filter((s) => s !== a));
      expect(new Set(got.keys()), a).toEqual(expected);
      for (const [b, c] of got) expect([c.pair_orders, c.orders], `${a}-${b}`).toEqual([nn(a, b), n(b)]);
    }
    expect(await store.copurchase.totalOrders(OTHER)).toBe(3);
    expect(await store.copurchase.companions(OTHER, 's100', 1)).toEqual([{ sku: 's999', pair_orders: 3, orders: 3 }]);
    expect((await store.copurchase.companions(SITE, 's100', 1)).some((c) => c.sku === 's999')).toBe(false);
  });

  it('are rebuilt identically from stored conversions by the migration (backfill of older data)', () => {
    const db = store.db!;
    const dump = () => ({
      orders: db.prepare('SELECT * FROM copurchase_orders ORDER BY site_id').all(),
      items: db.prepare('SELECT site_id, sku, orders FROM copurchase_items ORDER BY site_id, sku').all(),
      pairs: db
        .prepare(
          `SELECT a.site_id, a.sku, b.sku AS other, p.orders FROM copurchase_pairs p
           JOIN copurchase_items a ON a.id = p.item JOIN copurchase_items b ON b.id = p.other ORDER BY a.site_id, a.sku, b.sku`,
        )
        .all(),
    });
    const before = dump();
    expect(before.pairs.length).toBeGreaterThan(10_000);
    db.exec(`DROP TABLE copurchase_orders; DROP TABLE copurchase_items; DROP TABLE copurchase_pairs;
      DELETE FROM schema_migrations WHERE version = 9;
      INSERT INTO conversions (id, site_id, session_id, profile_id, revenue, currency, line_items, created_at)
        VALUES ('cnv_bad1', 'site_junk', 's', 'p', NULL, 'USD', 'not json', 0),
               ('cnv_bad2', 'site_junk', 's', 'p', NULL, 'USD', '["a", 5, {"sku": 7}, {"sku": ""}]', 0);`);
    expect(migrate(db)).toEqual([9]);
    db.exec("DELETE FROM conversions WHERE site_id = 'site_junk'");
    expect(dump()).toEqual(before);
  });
});

describe('recommend on the synthetic catalogue', () => {
  it('ranks every anchor’s planted companions first, ahead of blockbusters that co-occur with it more often', async () => {
    for (const [anchor, companions] of Object.entries(PLANTED)) {
      const out = await recommend([anchor]);
      expect(out.basket).toEqual([{ sku: anchor, orders: await store.copurchase.itemOrders(SITE, anchor) }]);
      expect(out.items.length, anchor).toBe(10);
      const top = out.items.slice(0, companions.length).map((r) => r.sku);
      expect(new Set(top), anchor).toEqual(new Set(companions));
      expect(out.items.map((r) => r.sku)).not.toContain(anchor);
      for (const r of out.items.slice(0, companions.length)) expect(r.lift, `${anchor}-${r.sku}`).toBeGreaterThan(5);
      // The point of the measure: by raw co-occurrence the blockbusters would come first.
      const pairs = new Map((await store.copurchase.companions(SITE, anchor, 1)).map((c) => [c.sku, c.pair_orders]));
      const bestBlockbuster = Math.max(...BLOCKBUSTERS.map((b) => pairs.get(b) ?? 0));
      expect(bestBlockbuster, anchor).toBeGreaterThan(Math.max(...companions.map((c) => pairs.get(c)!)));
      const ranks = BLOCKBUSTERS.map((b) => out.items.findIndex((r) => r.sku === b));
      for (const r of ranks) expect(r === -1 || r >= companions.length, anchor).toBe(true);
    }
  });

  it('finds the anchor and the sibling companions from a companion', async () => {
    const out = await recommend(['s420'], { k: 3 });
    expect(new Set(out.items.map((r) => r.sku))).toEqual(new Set(['s120', 's421', 's422']));
  });

  it('recommends for a basket: the companions of every basket item first, never a basket item', async () => {
    const out = await recommend(['s120', 's150', 's190'], { k: 10 });
    const expected = [...PLANTED.s120!, ...PLANTED.s150!, ...PLANTED.s190!];
    expect(new Set(out.items.slice(0, expected.length).map((r) => r.sku))).toEqual(new Set(expected));
    const anchorOf = (c: string) => Object.keys(PLANTED).find((a) => PLANTED[a]!.includes(c));
    for (const r of out.items.slice(0, expected.length)) expect(r.anchor, r.sku).toBe(anchorOf(r.sku));
    expect(out.items.map((r) => r.sku)).not.toContain('s120');
    expect(out.basket.map((b) => b.sku)).toEqual(['s120', 's150', 's190']);
    // s420 and s422 go with both basket items (s120 and s421): they lead, matched twice.
    const both = await recommend(['s120', 's421'], { k: 5 });
    expect(new Set(both.items.slice(0, 2).map((r) => r.sku))).toEqual(new Set(['s420', 's422']));
    expect(both.items.slice(0, 2).map((r) => r.matched)).toEqual([2, 2]);
  });

  it('keeps one-off pairs out under the minimum support, and lets them in when asked', async () => {
    expect((await recommend(['solo-x'])).items).toEqual([]);
    expect((await recommend(['solo-x'], { min_support: 1 })).items.map((r) => [r.sku, r.support, r.lift, r.confidence])).toEqual([
      ['solo-y', 1, await store.copurchase.totalOrders(SITE), 1],
    ]);
    for (const r of (await recommend(['s000'], { k: 100 })).items) expect(r.support).toBeGreaterThanOrEqual(3);
  });

  it('answers an unknown sku with an empty list, and stays inside the site', async () => {
    expect(await recommend(['nope'])).toMatchObject({ total_orders: orders.length - 1, basket: [{ sku: 'nope', orders: 0 }], items: [] });
    expect((await recommend(['s100'], {}, OTHER)).items.map((r) => r.sku)).toEqual(['s999']);
    expect((await recommend(['s999'])).items).toEqual([]);
  });
});

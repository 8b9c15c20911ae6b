import { describe, expect, it } from 'vitest';
import { lift, measurePair, npmi, SHRINKAGE } from '../../src/domain/recommend/measure.js';
import { rankCompanions, type AnchorCounts } from '../../src/domain/recommend/rank.js';

/**
 * Ten orders, counted by hand:
 *   {A,B} {A,B} {A,B,C} {A,C} {B,C} {C} {C,D} {A,B} {D} {E}
 * N = 10; n_A = n_B = n_C = 5, n_D = 2, n_E = 1; n_AB = 4, n_AC = 2, n_BC = 2, n_CD = 1.
 */
const N = 10;
const ORDERS: Record<string, number> = { A: 5, B: 5, C: 5, D: 2, E: 1 };
const PAIRS: Record<string, Record<string, number>> = {
  A: { B: 4, C: 2 },
  B: { A: 4, C: 2 },
  C: { A: 2, B: 2, D: 1 },
  D: { C: 1 },
  E: {},
};

function anchor(sku: string): AnchorCounts {
  return {
    sku,
    orders: ORDERS[sku] ?? 0,
    companions: Object.entries(PAIRS[sku] ?? {}).map(([other, both]) => ({ sku: other, pair_orders: both, orders: ORDERS[other]! })),
  };
}

describe('the pair measure', () => {
  it('computes lift, NPMI, confidence and the shrunk score of a hand-counted pair', () => {
    const ab = { total: N, anchor: 5, other: 5, both: 4 };
    expect(lift(ab)).toBe(1.6); // 10·4 / (5·5)
    expect(npmi(ab)).toBeCloseTo(0.512942, 6); // ln 1.6 / −ln 0.4 = 0.470004 / 0.916291
    const m = measurePair(ab);
    expect(SHRINKAGE).toBe(5);
    expect(m.confidence).toBe(0.8); // 4 / 5
    expect(m.score).toBeCloseTo(0.227974, 6); // 0.512942 · 4/9

    const ac = measurePair({ total: N, anchor: 5, other: 5, both: 2 });
    expect(ac.lift).toBe(0.8); // bought together less often than chance
    expect(ac.npmi).toBeCloseTo(-0.138647, 6); // ln 0.8 / −ln 0.2
    expect(ac.score).toBeCloseTo(-0.039613, 6); // −0.138647 · 2/7
  });

  it('is 0 at independence, 1 for items always bought together and −1 for a pair never seen', () => {
    expect(npmi({ total: 100, anchor: 20, other: 50, both: 10 })).toBe(0); // 100·10 = 20·50
    expect(npmi({ total: 100, anchor: 7, other: 7, both: 7 })).toBeCloseTo(1, 12);
    expect(npmi({ total: 7, anchor: 7, other: 7, both: 7 })).toBe(1);
    expect(npmi({ total: 100, anchor: 7, other: 7, both: 0 })).toBe(-1);
    expect(measurePair({ total: 100, anchor: 7, other: 7, both: 0 }).score).toBe(0);
  });

  it('shrinks rare pairs: three orders of two otherwise unsold items score below a strong pair of best-sellers', () => {
    const rare = measurePair({ total: 10_000, anchor: 100, other: 3, both: 3 });
    const strong = measurePair({ total: 10_000, anchor: 100, other: 120, both: 60 });
    expect(rare.lift).toBe(100); // lift alone would rank the rare pair first (50 for the strong one)
    expect(strong.lift).toBe(50);
    expect(rare.score).toBeCloseTo(0.212894, 6); // NPMI ln 100 / −ln 0.0003 = 0.567718, · 3/8
    expect(strong.score).toBeCloseTo(0.705845, 6); // NPMI ln 50 / −ln 0.006 = 0.764665, · 60/65
  });
});

describe('ranking companions', () => {
  it('ranks one sku’s companions, excludes the sku itself and reports the pair figures', () => {
    const out = rankCompanions({ total: N, anchors: [anchor('A')], k: 10, minSupport: 2 });
    expect(out.map((r) => r.sku)).toEqual(['B', 'C']);
    expect(out[0]).toMatchObject({ sku: 'B', support: 4, orders: 5, anchor: 'A', lift: 1.6, confidence: 0.8, matched: 1 });
    expect(out[0]!.score).toBeCloseTo(0.227974, 6);
    expect(out[1]).toMatchObject({ sku: 'C', support: 2, lift: 0.8, confidence: 0.4 });
    expect(out[1]!.score).toBeCloseTo(-0.039613, 6);
  });

  it('drops pairs under the minimum support', () => {
    expect(rankCompanions({ total: N, anchors: [anchor('A')], k: 10, minSupport: 3 }).map((r) => r.sku)).toEqual(['B']);
    expect(rankCompanions({ total: N, anchors: [anchor('C')], k: 10, minSupport: 2 }).map((r) => r.sku)).toEqual(['A', 'B']);
    expect(rankCompanions({ total: N, anchors: [anchor('C')], k: 10, minSupport: 1 }).map((r) => r.sku)).toEqual(['D', 'A', 'B']);
    expect(rankCompanions({ total: N, anchors: [anchor('A')], k: 10, minSupport: 5 })).toEqual([]);
  });

  it('returns nothing for an unknown sku or a sku without companions', () => {
    expect(rankCompanions({ total: N, anchors: [{ sku: 'Z', orders: 0, companions: [] }], k: 10, minSupport: 1 })).toEqual([]);
    expect(rankCompanions({ total: N, anchors: [anchor('E')], k: 10, minSupport: 1 })).toEqual([]);
    expect(rankCompanions({ total: 0, anchors: [anchor('A')], k: 10, minSupport: 1 })).toEqual([]);
  });

  it('breaks full ties by sku', () => {
    // Every candidate is in every order (NPMI 1) with the same support: only the sku tells them apart.
    const a: AnchorCounts = {
      sku: 'X',
      orders: 10,
      companions: [
        { sku: 'q', pair_orders: 10, orders: 10 },
        { sku: 'p', pair_orders: 10, orders: 10 },
        { sku: 'r', pair_orders: 10, orders: 10 },
      ],
    };
    expect(rankCompanions({ total: 10, anchors: [a], k: 10, minSupport: 1 }).map((r) => r.sku)).toEqual(['p', 'q', 'r']);
  });

  it('orders equal scores by support before sku', () => {
    // Two pairs with lift exactly 1 score 0 whatever their support: the larger support comes first.
    const out = rankCompanions({
      total: 100,
      anchors: [
        {
          sku: 'X',
          orders: 50,
          companions: [
            { sku: 'a', pair_orders: 10, orders: 20 },
            { sku: 'b', pair_orders: 20, orders: 40 },
          ],
        },
      ],
      k: 10,
      minSupport: 1,
    });
    expect(out.map((r) => [r.sku, r.score, r.support])).toEqual([
      ['b', 0, 20],
      ['a', 0, 10],
    ]);
  });

  it('keeps the best k of many candidates in the same order a full sort gives', () => {
    const companions = Array.from({ length: 500 }, (_, i) => ({ sku: `s${String(i).padStart(3, '0')}`, pair_orders: 3 + (i % 37), orders: 40 + ((i * 7) % 101) }));
    const a: AnchorCounts = { sku: 'X', orders: 60, companions };
    const all = rankCompanions({ total: 5000, anchors: [a], k: 500, minSupport: 1 });
    expect(all).toHaveLength(500);
    expect(rankCompanions({ total: 5000, anchors: [a], k: 7, minSupport: 1 })).toEqual(all.slice(0, 7));
  });

  it('scores a basket by the mean pair score over its items, never recommends a basket item, and names the strongest anchor', () => {
    const out = rankCompanions({ total: N, anchors: [anchor('A'), anchor('B')], k: 10, minSupport: 1 });
    // C is a companion of both (n_AC = n_BC = 2); nothing else is a companion of A or B outside the basket.
    expect(out.map((r) => r.sku)).toEqual(['C']);
    const pair = measurePair({ total: N, anchor: 5, other: 5, both: 2 }).score;
    expect(out[0]).toMatchObject({ sku: 'C', support: 4, matched: 2, anchor: 'A', confidence: 0.4 });
    expect(out[0]!.score).toBeCloseTo((pair + pair) / 2, 12);

    // Basket {A, D}: B is a companion of A only, C of both A (2) and D (1). The mean counts 0 for a missing pair.
    const ad = rankCompanions({ total: N, anchors: [anchor('D'), anchor('A')], k: 10, minSupport: 1 });
    const sAB = measurePair({ total: N, anchor: 5, other: 5, both: 4 }).score;
    const sAC = measurePair({ total: N, anchor: 5, other: 5, both: 2 }).score;
    const sDC = measurePair({ total: N, anchor: 2, other: 5, both: 1 }).score;
    expect(sDC).toBeCloseTo(0, 12); // lift 10·1/(2·5) = 1
    expect(ad.map((r) => [r.sku, r.matched])).toEqual([
      ['B', 1],
      ['C', 2],
    ]);
    expect(ad[0]!.score).toBeCloseTo(sAB / 2, 12);
    expect(ad[1]!.score).toBeCloseTo((sAC + sDC) / 2, 12);
    expect(ad[1]!.anchor).toBe('D'); // 0 beats −0.0396: the strongest pair of C is with D
    // The order the basket is given in does not matter.
    expect(rankCompanions({ total: N, anchors: [anchor('A'), anchor('D')], k: 10, minSupport: 1 })).toEqual(ad);
  });
});

import { measurePair, SHRINKAGE } from './measure.js';

/** What the store knows about one basket sku: n_A and its companions at or above the minimum support. */
export interface AnchorCounts {
  sku: string;
  /** n_A (0 when the sku was never ordered). */
  orders: number;
  companions: readonly { sku: string; pair_orders: number; orders: number }[];
}

/** One recommended sku. */
export interface Recommendation {
  sku: string;
  /** Mean pair score over the basket items (a pair under the minimum support counts 0). */
  score: number;
  /** Orders shared with the basket: the sum of n_AB over the basket items it passed the minimum support with. */
  support: number;
  /** n_B: orders containing this sku. */
  orders: number;
  /** The basket item this sku has the strongest pair with (for one sku: that sku); lift, confidence and npmi are of that pair. */
  anchor: string;
  lift: number;
  confidence: number;
  npmi: number;
  /** How many basket items it is a companion of. */
  matched: number;
}

export interface RankInput {
  /** N: the site's orders with at least one sku. */
  total: number;
  anchors: readonly AnchorCounts[];
  k: number;
  minSupport: number;
  shrinkage?: number;
}

/** Deterministic order: score, then support (both descending), then sku (code-unit order). */
export function compareRecommendations(a: Recommendation, b: Recommendation): number {
  return b.score - a.score || b.support - a.support || (a.sku < b.sku ? -1 : a.sku > b.sku ? 1 : 0);
}

/**
 * Ranks the companions of a basket (one sku or several). Every candidate that
 * shares at least `minSupport` orders with some basket item is scored per pair
 * (see measure.ts); its basket score is the mean of its pair scores over the
 * basket items that have been ordered at all, with 0 for the items it is not a
 * companion of, so a sku that goes with several basket items outranks one that
 * goes equally well with only one. Basket items are never recommended.
 *
 * @example rankCompanions({ total: 100, anchors: [{ sku: 'tent', orders: 20, companions }], k: 10, minSupport: 3 })
 */
export function rankCompanions(input: RankInput): Recommendation[] {
  const shrinkage = input.shrinkage ?? SHRINKAGE;
  const basket = new Set(input.anchors.map((a) => a.sku));
  const anchors = [...input.anchors].filter((a) => a.orders > 0).sort((a, b) => (a.sku < b.sku ? -1 : a.sku > b.sku ? 1 : 0));
  if (anchors.length === 0 || input.total <= 0) return [];
  const byCandidate = new Map<string, Recommendation & { sum: number; best: number }>();
  for (const a of anchors) {
    for (const c of a.companions) {
      if (c.pair_orders < input.minSupport || basket.has(c.sku)) continue;
      const m = measurePair({ total: input.total, anchor: a.orders, other: c.orders, both: c.pair_orders }, shrinkage);
      const r = byCandidate.get(c.sku);
      if (r === undefined) {
        byCandidate.set(c.sku, {
          sku: c.sku,
          score: 0,
          sum: m.score,
          best: m.score,
          support: c.pair_orders,
          orders: c.orders,
          anchor: a.sku,
          lift: m.lift,
          confidence: m.confidence,
          npmi: m.npmi,
          matched: 1,
        });
        continue;
      }
      r.sum += m.score;
      r.support += c.pair_orders;
      r.matched++;
      if (m.score > r.best) Object.assign(r, { best: m.score, anchor: a.sku, lift: m.lift, confidence: m.confidence, npmi: m.npmi });
    }
  }
  const all: Recommendation[] = [];
  for (const r of byCandidate.values()) {
    all.push({
      sku: r.sku,
      score: r.sum / anchors.length,
      support: r.support,
      orders: r.orders,
      anchor: r.anchor,
      lift: r.lift,
      confidence: r.confidence,
      npmi: r.npmi,
      matched: r.matched,
    });
  }
  return topK(all, input.k);
}

/** The k best in order; a bounded selection so a best-seller's thousands of companions are not all sorted. */
function topK(items: Recommendation[], k: number): Recommendation[] {
  if (items.length <= k * 4) return items.sort(compareRecommendations).slice(0, k);
  const kept: Recommendation[] = [];
  for (const it of items) {
    if (kept.length === k && compareRecommendations(it, kept[k - 1]!) >= 0) continue;
    let i = kept.length;
    while (i > 0 && compareRecommendations(it, kept[i - 1]!) < 0) i--;
    kept.splice(i, 0, it);
    if (kept.length > k) kept.pop();
  }
  return kept;
}

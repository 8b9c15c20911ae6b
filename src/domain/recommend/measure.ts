/**
 * The co-purchase association measure. With N orders, n_A and n_B orders
 * containing each item and n_AB orders containing both:
 *
 *   lift       = N·n_AB / (n_A·n_B)            (1 = bought together as often as chance)
 *   NPMI       = ln(lift) / −ln(n_AB / N)       in [−1, 1]; 0 = independent, 1 = always together
 *   confidence = n_AB / n_A                     (share of A's orders that also hold B)
 *   score      = NPMI · n_AB / (n_AB + λ)       λ = {@link SHRINKAGE}
 *
 * Why NPMI: lift and PMI grow without bound as items get rarer (two items
 * bought once, together, have the highest lift of the catalogue), while
 * cosine and confidence favour best-sellers, which co-occur with everything by
 * chance. NPMI is PMI normalized to [−1, 1], so a blockbuster that appears with
 * an item only as often as chance scores 0 however often that is. The
 * shrinkage factor n_AB/(n_AB+λ) pulls pairs seen few times toward 0
 * (independence), and a minimum support (n_AB ≥ {@link DEFAULT_MIN_SUPPORT} by
 * default) drops one-off pairs entirely.
 */

/** Orders both items must share before a pair is considered at all (the default). */
export const DEFAULT_MIN_SUPPORT = 3;

/** λ of the shrinkage factor n_AB / (n_AB + λ): 3 shared orders keep 37.5% of the NPMI, 45 keep 90%. */
export const SHRINKAGE = 5;

/** The four counts of one pair (anchor A, candidate B). */
export interface PairCounts {
  /** N: orders with at least one sku. */
  total: number;
  /** n_A: orders containing the anchor. */
  anchor: number;
  /** n_B: orders containing the candidate. */
  other: number;
  /** n_AB: orders containing both. */
  both: number;
}

export interface PairMeasure {
  score: number;
  npmi: number;
  lift: number;
  confidence: number;
}

/** Lift N·n_AB/(n_A·n_B); 0 when a count is 0. */
export function lift(c: PairCounts): number {
  if (c.both <= 0 || c.anchor <= 0 || c.other <= 0 || c.total <= 0) return 0;
  return (c.total * c.both) / (c.anchor * c.other);
}

/**
 * Normalized PMI: ln(lift) / −ln(n_AB/N). −1 when the pair never occurs;
 * 1 when n_AB = N (both items in every order, the limit of perfect co-occurrence).
 */
export function npmi(c: PairCounts): number {
  if (c.both <= 0 || c.total <= 0) return -1;
  if (c.both >= c.total) return 1;
  return Math.log(lift(c)) / -Math.log(c.both / c.total);
}

/** All measures of one pair; `score` is the ranking key. */
export function measurePair(c: PairCounts, shrinkage = SHRINKAGE): PairMeasure {
  const n = npmi(c);
  return {
    score: c.both > 0 ? (n * c.both) / (c.both + shrinkage) : 0,
    npmi: n,
    lift: lift(c),
    confidence: c.anchor > 0 ? c.both / c.anchor : 0,
  };
}

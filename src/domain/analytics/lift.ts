/** Two-sided 95% normal quantile. */
export const Z95 = 1.959963984540054;

/** One visitor's outcome over the window. */
export interface VisitorOutcome {
  holdout: boolean;
  converted: boolean;
  revenue: number;
}

export interface GroupStats {
  visitors: number;
  converting_visitors: number;
  conversion_rate: number | null;
  revenue: number;
  revenue_per_visitor: number | null;
  /** Sample variance of revenue per visitor (n - 1 denominator); null under two visitors. */
  revenue_variance: number | null;
}

export interface RelativeLift {
  /** personalized / holdout - 1; null when the holdout's value is 0 or a group is empty. */
  relative: number | null;
  ci_low: number | null;
  ci_high: number | null;
  /** The interval excludes no lift (0). */
  significant: boolean;
}

export function groupStats(outcomes: readonly VisitorOutcome[]): GroupStats {
  const n = outcomes.length;
  let k = 0;
  let sum = 0;
  for (const o of outcomes) {
    if (o.converted) k++;
    sum += o.revenue;
  }
  const mean = n === 0 ? null : sum / n;
  let variance: number | null = null;
  if (n >= 2 && mean !== null) {
    let ss = 0;
    for (const o of outcomes) ss += (o.revenue - mean) ** 2;
    variance = ss / (n - 1);
  }
  return {
    visitors: n,
    converting_visitors: k,
    conversion_rate: n === 0 ? null : k / n,
    revenue: sum,
    revenue_per_visitor: mean,
    revenue_variance: variance,
  };
}

const NO_LIFT: RelativeLift = { relative: null, ci_low: null, ci_high: null, significant: false };

function ratioInterval(ratio: number, seLog: number, z: number): RelativeLift {
  const lo = Math.exp(Math.log(ratio) - z * seLog) - 1;
  const hi = Math.exp(Math.log(ratio) + z * seLog) - 1;
  return { relative: ratio - 1, ci_low: lo, ci_high: hi, significant: lo > 0 || hi < 0 };
}

/**
 * Relative lift of the conversion rate (personalized p1 against holdout p0)
 * with a confidence interval from the delta method on the log of the ratio:
 * se(ln(p1/p0)) = sqrt((1-p1)/k1 + (1-p0)/k0), k the converting visitors.
 * Undefined (nulls) when either group has no conversion.
 */
export function conversionLift(p: GroupStats, h: GroupStats, z = Z95): RelativeLift {
  if (p.conversion_rate === null || h.conversion_rate === null || p.converting_visitors === 0 || h.converting_visitors === 0) return NO_LIFT;
  const se = Math.sqrt((1 - p.conversion_rate) / p.converting_visitors + (1 - h.conversion_rate) / h.converting_visitors);
  return ratioInterval(p.conversion_rate / h.conversion_rate, se, z);
}

/**
 * Relative lift of revenue per visitor, delta method on the log ratio of the
 * means: se = sqrt(v1/(n1 m1^2) + v0/(n0 m0^2)). Undefined when a mean is 0 or
 * a group has fewer than two visitors.
 */
export function revenueLift(p: GroupStats, h: GroupStats, z = Z95): RelativeLift {
  const m1 = p.revenue_per_visitor;
  const m0 = h.revenue_per_visitor;
  if (m1 === null || m0 === null || m1 <= 0 || m0 <= 0 || p.revenue_variance === null || h.revenue_variance === null) return NO_LIFT;
  const se = Math.sqrt(p.revenue_variance / (p.visitors * m1 * m1) + h.revenue_variance / (h.visitors * m0 * m0));
  return ratioInterval(m1 / m0, se, z);
}

export interface LiftReport {
  personalized: GroupStats;
  holdout: GroupStats;
  conversion_rate_lift: RelativeLift;
  revenue_per_visitor_lift: RelativeLift;
}

/** The lift report of a window's visitors. */
export function liftOf(outcomes: readonly VisitorOutcome[], z = Z95): LiftReport {
  const personalized = groupStats(outcomes.filter((o) => !o.holdout));
  const holdout = groupStats(outcomes.filter((o) => o.holdout));
  return { personalized, holdout, conversion_rate_lift: conversionLift(personalized, holdout, z), revenue_per_visitor_lift: revenueLift(personalized, holdout, z) };
}

/**
 * The statistics of the stall pass: a one-sided two-proportion z-test and the
 * Benjamini–Hochberg step-up procedure.
 */

/** Complementary error function (Numerical Recipes' Chebyshev fit; fractional error below 1.2e-7 everywhere). */
export function erfc(x: number): number {
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  const r =
    t *
    Math.exp(
      -z * z -
        1.26551223 +
        t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))),
    );
  return x >= 0 ? r : 2 - r;
}

/** P(Z > z) for a standard normal Z. */
export function normalUpperTail(z: number): number {
  return 0.5 * erfc(z / Math.SQRT2);
}

export interface ZTest {
  /** Pass rate of the baseline and of this week. */
  baselineRate: number;
  rate: number;
  /** (baseline − this week) / pooled standard error: positive when this week is lower. */
  z: number;
  /** One-sided p-value of "this week's rate is lower than the baseline's". */
  p: number;
}

/**
 * One-sided two-proportion z-test with the pooled proportion: H0 p_week = p_baseline,
 * H1 p_week < p_baseline. `x` passes out of `n` trials each.
 */
export function twoProportionLower(xWeek: number, nWeek: number, xBase: number, nBase: number): ZTest {
  const rate = xWeek / nWeek;
  const baselineRate = xBase / nBase;
  const pooled = (xWeek + xBase) / (nWeek + nBase);
  const se = Math.sqrt(pooled * (1 - pooled) * (1 / nWeek + 1 / nBase));
  if (se === 0) return { baselineRate, rate, z: 0, p: 1 };
  const z = (baselineRate - rate) / se;
  return { baselineRate, rate, z, p: normalUpperTail(z) };
}

/** Minimum samples before a step is tested (Amplitude's funnel-comparison minimums). */
export const MIN_SESSIONS = 30;
export const MIN_PASSES = 5;
export const MIN_STALLS = 5;

/**
 * Whether a comparison has enough data: at least 30 sessions reaching the previous step
 * this week and in the baseline, and at least 5 passes and 5 stalls in each.
 */
export function enoughSamples(xWeek: number, nWeek: number, xBase: number, nBase: number): boolean {
  return (
    nWeek >= MIN_SESSIONS &&
    nBase >= MIN_SESSIONS &&
    xWeek >= MIN_PASSES &&
    nWeek - xWeek >= MIN_STALLS &&
    xBase >= MIN_PASSES &&
    nBase - xBase >= MIN_STALLS
  );
}

/**
 * Benjamini–Hochberg at false-discovery rate `q`: the indexes of the rejected
 * hypotheses. Sort the m p-values ascending, find the largest rank k with
 * p_(k) <= k/m * q, reject the k smallest.
 */
export function benjaminiHochberg(pValues: readonly number[], q = 0.05): Set<number> {
  const m = pValues.length;
  const order = pValues.map((p, i) => ({ p, i })).sort((a, b) => a.p - b.p || a.i - b.i);
  let k = 0;
  for (let r = 1; r <= m; r++) if (order[r - 1]!.p <= (r / m) * q) k = r;
  return new Set(order.slice(0, k).map((o) => o.i));
}

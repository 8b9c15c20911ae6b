/**
 * The statistics of layout tests, as pure functions (no I/O).
 *
 * Significance: an always-valid confidence sequence for the difference of the
 * arms' means (the asymptotic confidence sequence of Waudby-Smith et al. 2023,
 * eq. 9, tuned as GrowthBook does with a tuning parameter of 5000). Unlike a
 * fixed-horizon t-test, its coverage holds simultaneously at every sample
 * size, so the team may look at the results every day (and the worker may stop
 * a test early) without inflating the false-positive rate. A fixed horizon
 * would only be valid if nobody acted on interim looks, which a results tool
 * read daily cannot enforce; the price of the sequential interval is a wider
 * interval at the planned sample size.
 *
 * Sample-ratio mismatch: Pearson's chi-square of the visitors per arm against
 * the configured weights, flagged when p < 0.001, skipped while any arm has
 * fewer than 8 visitors.
 */
import { p75Rank } from '../../store/experiments.js';

/** GrowthBook's default tuning parameter of the confidence sequence (the sample size it is tightest at). */
export const SEQUENTIAL_TUNING = 5000;
/** Two-sided error rate of the results shown (split over the variant arms, Bonferroni). */
export const ALPHA = 0.05;
/** The extra-strong bar for stopping early (EXPERIMENTS.md: p < 0.001). */
export const EARLY_STOP_ALPHA = 0.001;
export const SRM_P_THRESHOLD = 0.001;
export const SRM_MIN_PER_ARM = 8;

// ---------------------------------------------------------------------------------------------
// Special functions

const LN_SQRT_2PI = 0.5 * Math.log(2 * Math.PI);

/** ln Γ(x) for x > 0 (Lanczos approximation, g = 7, n = 9; ~15 significant digits). */
export function logGamma(x: number): number {
  if (x < 0.5) return Math.log(Math.PI / Math.abs(Math.sin(Math.PI * x))) - logGamma(1 - x);
  const c = [
    0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059, 12.507343278686905,
    -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
  ];
  const z = x - 1;
  let a = c[0]!;
  const t = z + 7.5;
  for (let i = 1; i < 9; i++) a += c[i]! / (z + i);
  return LN_SQRT_2PI + (z + 0.5) * Math.log(t) - t + Math.log(a);
}

/**
 * Regularized upper incomplete gamma Q(s, x) = Γ(s, x) / Γ(s): by its power
 * series (P = 1 − Q) when x < s + 1, where the series converges fast, and by
 * the Lentz continued fraction otherwise, where the series would lose digits.
 */
export function gammaQ(s: number, x: number): number {
  if (!(s > 0) || !(x >= 0) || !Number.isFinite(s)) return Number.NaN;
  if (x === 0) return 1;
  if (!Number.isFinite(x)) return 0;
  const lnPrefix = s * Math.log(x) - x - logGamma(s);
  if (x < s + 1) {
    let term = 1 / s;
    let sum = term;
    for (let n = 1; n < 10_000; n++) {
      term *= x / (s + n);
      sum += term;
      if (Math.abs(term) < Math.abs(sum) * 1e-16) break;
    }
    return Math.max(0, 1 - sum * Math.exp(lnPrefix));
  }
  const tiny = 1e-300;
  let b = x + 1 - s;
  let c = 1 / tiny;
  let d = 1 / b;
  let h = d;
  for (let i = 1; i < 10_000; i++) {
    const an = -i * (i - s);
    b += 2;
    d = an * d + b;
    if (Math.abs(d) < tiny) d = tiny;
    c = b + an / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    const delta = d * c;
    h *= delta;
    if (Math.abs(delta - 1) < 1e-16) break;
  }
  return Math.min(1, Math.exp(lnPrefix) * h);
}

/** P(X ≥ x) for X ~ chi-square with `df` degrees of freedom. */
export function chiSquareSurvival(x: number, df: number): number {
  if (x <= 0) return 1;
  return gammaQ(df / 2, x / 2);
}

/** Standard normal CDF Φ(z), through Q(1/2, z²/2) = erfc(|z|/√2). */
export function normalCdf(z: number): number {
  if (Number.isNaN(z)) return Number.NaN;
  if (z === 0) return 0.5;
  const tail = 0.5 * gammaQ(0.5, (z * z) / 2);
  return z > 0 ? 1 - tail : tail;
}

// ---------------------------------------------------------------------------------------------
// Sample-ratio mismatch

export interface SrmResult {
  /** false while some arm has fewer than SRM_MIN_PER_ARM visitors (or fewer than two arms carry weight). */
  checked: boolean;
  chi_square: number | null;
  p_value: number | null;
  /** p < 0.001: the split of visitors does not match the weights, so assignment or exposure logging is broken. */
  mismatch: boolean;
}

/** Pearson's chi-square of observed visitors per arm against the weights (arms with weight 0 are left out). */
export function srmCheck(arms: readonly { visitors: number; weight: number }[]): SrmResult {
  const live = arms.filter((a) => a.weight > 0);
  const none: SrmResult = { checked: false, chi_square: null, p_value: null, mismatch: false };
  if (live.length < 2 || live.some((a) => a.visitors < SRM_MIN_PER_ARM)) return none;
  const total = live.reduce((s, a) => s + a.visitors, 0);
  const weights = live.reduce((s, a) => s + a.weight, 0);
  let chi = 0;
  for (const a of live) {
    const expected = (total * a.weight) / weights;
    chi += (a.visitors - expected) ** 2 / expected;
  }
  const p = chiSquareSurvival(chi, live.length - 1);
  return { checked: true, chi_square: chi, p_value: p, mismatch: p < SRM_P_THRESHOLD };
}

// ---------------------------------------------------------------------------------------------
// Arm comparison

/** The per-visitor metric of one arm as sufficient statistics. */
export interface MetricSample {
  /** Visitors (the unit of analysis). */
  n: number;
  /** Sum of the per-visitor values (successes for a 0/1 metric). */
  sum: number;
  /** Sum of their squares (equals `sum` for a 0/1 metric). */
  sumSq: number;
}

export function mean(s: MetricSample): number {
  return s.n > 0 ? s.sum / s.n : 0;
}

/** Sample variance of the per-visitor values (n − 1 denominator); 0 under two visitors. */
export function variance(s: MetricSample): number {
  if (s.n < 2) return 0;
  return Math.max(0, (s.sumSq - (s.sum * s.sum) / s.n) / (s.n - 1));
}

/** ρ of the confidence sequence for a tuning parameter (eq. 161 of arXiv 2103.06476v7, as GrowthBook). */
export function sequentialRho(alpha: number, tuning = SEQUENTIAL_TUNING): number {
  return Math.sqrt((-2 * Math.log(alpha) + Math.log(-2 * Math.log(alpha) + 1)) / tuning);
}

/**
 * Half-width of the asymptotic confidence sequence (eq. 9 of arXiv 2103.06476v7) for an
 * estimate with variance `estimateVariance` (already divided by the sample sizes) over N
 * observations in all.
 */
export function sequentialHalfWidth(estimateVariance: number, N: number, alpha: number, tuning = SEQUENTIAL_TUNING): number {
  const rho = sequentialRho(alpha, tuning);
  const r2 = rho * rho;
  const s2 = estimateVariance * N;
  const first = (2 * (N * r2 + 1)) / (N * N * r2);
  const second = Math.log(Math.sqrt(N * r2 + 1) / alpha);
  return Math.sqrt(s2) * Math.sqrt(first * second);
}

export type Verdict = 'better' | 'worse' | 'inconclusive';

export interface Comparison {
  /** Absolute difference of the means, variant − control. */
  difference: number;
  /** The confidence-sequence interval of the difference at level 1 − alpha; null under two visitors per arm. */
  ci_low: number | null;
  ci_high: number | null;
  /** (variant − control) / control; null when the control's mean is 0. */
  relative_lift: number | null;
  /** Normal approximation with a flat prior: P(variant mean > control mean). */
  chance_to_beat_control: number;
  verdict: Verdict;
}

/** Compares a variant arm with the control at level 1 − alpha with the confidence sequence. */
export function compare(control: MetricSample, variant: MetricSample, alpha: number): Comparison {
  const mc = mean(control);
  const mv = mean(variant);
  const difference = mv - mc;
  const relative = mc > 0 ? difference / mc : null;
  const v = (control.n > 0 ? variance(control) / control.n : 0) + (variant.n > 0 ? variance(variant) / variant.n : 0);
  const se = Math.sqrt(v);
  const chance = se > 0 ? normalCdf(difference / se) : difference > 0 ? 1 : difference < 0 ? 0 : 0.5;
  if (control.n < 2 || variant.n < 2) {
    return { difference, ci_low: null, ci_high: null, relative_lift: relative, chance_to_beat_control: chance, verdict: 'inconclusive' };
  }
  const half = sequentialHalfWidth(v, control.n + variant.n, alpha);
  const lo = difference - half;
  const hi = difference + half;
  const verdict: Verdict = v > 0 && lo > 0 ? 'better' : v > 0 && hi < 0 ? 'worse' : 'inconclusive';
  return { difference, ci_low: lo, ci_high: hi, relative_lift: relative, chance_to_beat_control: chance, verdict };
}

/** The 75th percentile by nearest rank (the store's vital statistics use the same rank). */
export { p75Rank };

export function p75(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[p75Rank(sorted.length) - 1]!;
}

/**
 * A small HDR-like latency histogram: values are integer microseconds, kept
 * exactly below 256 µs and in log-linear buckets above (128 buckets per power
 * of two, so a reported percentile is within 0.8% of the true value). Values
 * above one minute are clamped. Memory is fixed (a few thousand counters).
 */
const SUB_BITS = 8;
const SUB = 1 << SUB_BITS; // 256 exact buckets
const HALF = SUB >> 1; // 128 buckets per power of two above
const MAX_US = 60_000_000;

function indexOf(us: number): number {
  if (us < SUB) return us;
  const msb = 31 - Math.clz32(us);
  const shift = msb - (SUB_BITS - 1);
  return SUB + (shift - 1) * HALF + ((us >>> shift) - HALF);
}

/** Highest value that falls in bucket `i` (HDR's "highest equivalent value"). */
function highestOf(i: number): number {
  if (i < SUB) return i;
  const shift = Math.floor((i - SUB) / HALF) + 1;
  const m = ((i - SUB) % HALF) + HALF;
  return ((m + 1) << shift) - 1;
}

export interface HistogramSummary {
  count: number;
  minUs: number;
  maxUs: number;
  meanUs: number;
  p50Us: number;
  p90Us: number;
  p99Us: number;
  p999Us: number;
}

export class Histogram {
  private readonly counts = new Float64Array(indexOf(MAX_US) + 1);
  private n = 0;
  private sum = 0;
  private min = Number.POSITIVE_INFINITY;
  private max = 0;

  /** Records one value in microseconds (rounded, clamped to [0, 60 s]). */
  record(us: number): void {
    const v = Math.min(MAX_US, Math.max(0, Math.round(us)));
    this.counts[indexOf(v)]!++;
    this.n++;
    this.sum += v;
    if (v < this.min) this.min = v;
    if (v > this.max) this.max = v;
  }

  reset(): void {
    this.counts.fill(0);
    this.n = 0;
    this.sum = 0;
    this.min = Number.POSITIVE_INFINITY;
    this.max = 0;
  }

  get count(): number {
    return this.n;
  }

  /** Value at percentile `p` (0..100): the highest equivalent value of the bucket holding it, capped by the exact max. */
  percentile(p: number): number {
    if (this.n === 0) return 0;
    const rank = Math.max(1, Math.ceil((p / 100) * this.n));
    let seen = 0;
    for (let i = 0; i < this.counts.length; i++) {
      seen += this.counts[i]!;
      if (seen >= rank) return Math.min(highestOf(i), this.max);
    }
    return this.max;
  }

  summary(): HistogramSummary {
    return {
      count: this.n,
      minUs: this.n ? this.min : 0,
      maxUs: this.max,
      meanUs: this.n ? this.sum / this.n : 0,
      p50Us: this.percentile(50),
      p90Us: this.percentile(90),
      p99Us: this.percentile(99),
      p999Us: this.percentile(99.9),
    };
  }
}

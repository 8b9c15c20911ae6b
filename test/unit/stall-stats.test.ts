import { describe, expect, it } from 'vitest';
import { benjaminiHochberg, enoughSamples, erfc, normalUpperTail, twoProportionLower } from '../../src/domain/stall/stats.js';

describe('normal tail', () => {
  it('agrees with tabulated values', () => {
    expect(normalUpperTail(0)).toBeCloseTo(0.5, 7);
    expect(normalUpperTail(1.6448536)).toBeCloseTo(0.05, 6);
    expect(normalUpperTail(1.959964)).toBeCloseTo(0.025, 6);
    expect(normalUpperTail(-1.959964)).toBeCloseTo(0.975, 6);
    expect(erfc(1)).toBeCloseTo(0.157299207, 7);
  });
});

describe('one-sided two-proportion z-test (this week lower)', () => {
  it('matches hand-computed values (pooled standard error)', () => {
    // 12/60 this week against 144/240: pooled 0.52, se = sqrt(0.52*0.48*(1/60+1/240)) = 0.072111
    const a = twoProportionLower(12, 60, 144, 240);
    expect(a.rate).toBeCloseTo(0.2, 12);
    expect(a.baselineRate).toBeCloseTo(0.6, 12);
    expect(a.z).toBeCloseTo(5.547002, 5);
    expect(a.p).toBeLessThan(2e-8);
    expect(a.p).toBeGreaterThan(1e-8);
    // 40/100 against 50/100: z = 0.1 / sqrt(0.45*0.55*0.02) = 1.421338, p = 0.077609
    const b = twoProportionLower(40, 100, 50, 100);
    expect(b.z).toBeCloseTo(1.421338, 5);
    expect(b.p).toBeCloseTo(0.077609, 5);
    // 30/100 against 180/400: z = 2.718301, p = 0.003281
    const c = twoProportionLower(30, 100, 180, 400);
    expect(c.z).toBeCloseTo(2.718301, 5);
    expect(c.p).toBeCloseTo(0.003281, 5);
  });

  it('is one-sided: a week better than the baseline has p above one half', () => {
    const r = twoProportionLower(50, 100, 40, 100);
    expect(r.z).toBeCloseTo(-1.421338, 5);
    expect(r.p).toBeCloseTo(1 - 0.077609, 5);
  });

  it('gives p = 1 when there is no variance', () => {
    expect(twoProportionLower(30, 30, 40, 40).p).toBe(1);
  });
});

describe('minimum samples', () => {
  it('needs 30 sessions each side and 5 passes and 5 stalls each side', () => {
    expect(enoughSamples(5, 30, 5, 30)).toBe(true);
    expect(enoughSamples(25, 30, 25, 30)).toBe(true);
    expect(enoughSamples(5, 29, 5, 30)).toBe(false); // 29 sessions this week
    expect(enoughSamples(5, 30, 5, 29)).toBe(false); // 29 in the baseline
    expect(enoughSamples(4, 30, 5, 30)).toBe(false); // 4 passes this week
    expect(enoughSamples(26, 30, 5, 30)).toBe(false); // 4 stalls this week
    expect(enoughSamples(5, 30, 4, 30)).toBe(false); // 4 passes in the baseline
    expect(enoughSamples(5, 30, 26, 30)).toBe(false); // 4 stalls in the baseline
  });
});

describe('Benjamini-Hochberg', () => {
  it('rejects everything when every ordered p-value is under its rank threshold', () => {
    expect([...benjaminiHochberg([0.01, 0.04, 0.03, 0.005])].sort()).toEqual([0, 1, 2, 3]);
  });

  it('stops at the largest passing rank', () => {
    // thresholds 0.0125, 0.025, 0.0375, 0.05
    expect([...benjaminiHochberg([0.01, 0.02, 0.03, 0.2])].sort()).toEqual([0, 1, 2]);
  });

  it('steps up: a p-value over its own threshold is rejected when a larger rank passes', () => {
    // 0.03 > 0.025 (rank 2), but 0.035 <= 0.0375 (rank 3), so ranks 1..3 are rejected.
    expect([...benjaminiHochberg([0.5, 0.035, 0.001, 0.03])].sort()).toEqual([1, 2, 3]);
  });

  it('rejects nothing when even the smallest misses q/m, and handles no tests', () => {
    expect(benjaminiHochberg([0.02, 0.5, 0.6]).size).toBe(0); // 0.02 > 0.05/3
    expect(benjaminiHochberg([]).size).toBe(0);
  });

  it('corrects a p-value that alone would pass 5%', () => {
    expect(benjaminiHochberg([0.04]).size).toBe(1);
    expect(benjaminiHochberg([0.04, 0.9, 0.9, 0.9, 0.9]).size).toBe(0);
  });
});

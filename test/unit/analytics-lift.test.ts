import { describe, expect, it } from 'vitest';
import { conversionLift, groupStats, liftOf, revenueLift, Z95, type VisitorOutcome } from '../../src/domain/analytics/lift.js';

const visitors = (n: number, holdout: boolean, converted: number, revenueEach = 0): VisitorOutcome[] =>
  Array.from({ length: n }, (_, i) => ({ holdout, converted: i < converted, revenue: i < converted ? revenueEach : 0 }));

describe('lift against the holdout', () => {
  it('conversion rate lift and its interval match the hand-computed delta-method values', () => {
    // p1 = 60/500 = 0.12, p0 = 40/500 = 0.08: lift 0.5; se(ln ratio) = sqrt(0.88/60 + 0.92/40) = 0.1940790
    const r = liftOf([...visitors(500, false, 60), ...visitors(500, true, 40)]);
    expect(r.personalized.conversion_rate).toBeCloseTo(0.12, 12);
    expect(r.holdout.conversion_rate).toBeCloseTo(0.08, 12);
    expect(r.conversion_rate_lift.relative).toBeCloseTo(0.5, 12);
    const se = Math.sqrt(0.88 / 60 + 0.92 / 40);
    expect(se).toBeCloseTo(0.194079, 6);
    expect(r.conversion_rate_lift.ci_low).toBeCloseTo(1.5 * Math.exp(-Z95 * se) - 1, 10);
    expect(r.conversion_rate_lift.ci_low).toBeCloseTo(0.02539, 4);
    expect(r.conversion_rate_lift.ci_high).toBeCloseTo(1.19428, 4);
    expect(r.conversion_rate_lift.significant).toBe(true);
  });

  it('a small sample is not significant: 2/4 against 1/4', () => {
    // se = sqrt(0.5/2 + 0.75/1) = 1; interval 2*exp(±1.96) - 1
    const r = liftOf([...visitors(4, false, 2), ...visitors(4, true, 1)]);
    expect(r.conversion_rate_lift.relative).toBeCloseTo(1, 12);
    expect(r.conversion_rate_lift.ci_low).toBeCloseTo(2 * Math.exp(-Z95) - 1, 10);
    expect(r.conversion_rate_lift.ci_low).toBeCloseTo(-0.71827, 4);
    expect(r.conversion_rate_lift.ci_high).toBeCloseTo(13.19814, 4);
    expect(r.conversion_rate_lift.significant).toBe(false);
  });

  it('revenue per visitor lift uses the sample variances of each group', () => {
    const p = groupStats([
      { holdout: false, converted: true, revenue: 10 },
      { holdout: false, converted: true, revenue: 30 },
      { holdout: false, converted: false, revenue: 0 },
      { holdout: false, converted: true, revenue: 40 },
    ]);
    const h = groupStats([
      { holdout: true, converted: true, revenue: 20 },
      { holdout: true, converted: false, revenue: 0 },
      { holdout: true, converted: true, revenue: 20 },
    ]);
    expect(p.revenue_per_visitor).toBe(20);
    expect(p.revenue_variance).toBeCloseTo(((10 - 20) ** 2 + (30 - 20) ** 2 + 400 + 400) / 3, 10);
    expect(h.revenue_per_visitor).toBeCloseTo(40 / 3, 12);
    const r = revenueLift(p, h);
    expect(r.relative).toBeCloseTo(0.5, 12);
    const m0 = 40 / 3;
    const v0 = (2 * (20 - m0) ** 2 + m0 ** 2) / 2;
    const se = Math.sqrt(p.revenue_variance! / (4 * 400) + v0 / (3 * m0 * m0));
    expect(r.ci_low).toBeCloseTo(1.5 * Math.exp(-Z95 * se) - 1, 10);
    expect(r.ci_high).toBeCloseTo(1.5 * Math.exp(Z95 * se) - 1, 10);
  });

  it('is undefined at the edges: empty groups, no holdout conversions, fewer than two visitors', () => {
    expect(liftOf([]).conversion_rate_lift).toEqual({ relative: null, ci_low: null, ci_high: null, significant: false });
    expect(liftOf(visitors(10, false, 5)).holdout).toMatchObject({ visitors: 0, conversion_rate: null, revenue_per_visitor: null });
    const noHoldoutConv = liftOf([...visitors(10, false, 5, 10), ...visitors(10, true, 0)]);
    expect(noHoldoutConv.conversion_rate_lift.relative).toBeNull();
    expect(noHoldoutConv.revenue_per_visitor_lift.relative).toBeNull();
    expect(conversionLift(groupStats(visitors(1, false, 1)), groupStats(visitors(1, true, 1))).relative).toBeCloseTo(0, 12);
    expect(revenueLift(groupStats(visitors(1, false, 1, 5)), groupStats(visitors(1, true, 1, 5))).relative).toBeNull();
  });
});

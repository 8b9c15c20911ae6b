import { describe, expect, it } from 'vitest';
import {
  chiSquareSurvival,
  compare,
  gammaQ,
  logGamma,
  normalCdf,
  p75,
  p75Rank,
  sequentialHalfWidth,
  sequentialRho,
  srmCheck,
} from '../../src/domain/experiments/stats.js';

/*
 * Reference values: SciPy 1.17.1 on Python 3 (scipy.special.gammaincc, scipy.stats.chi2.sf,
 * scipy.stats.norm.cdf, scipy.stats.chisquare, math.lgamma), run by hand when these tests were
 * written; the confidence-sequence numbers from eq. 9 and eq. 161 of Waudby-Smith et al.,
 * arXiv 2103.06476v7, evaluated in Python with math.log/math.sqrt.
 */

describe('special functions', () => {
  it('ln Γ matches math.lgamma', () => {
    expect(logGamma(0.5)).toBeCloseTo(0.5723649429247004, 12);
    expect(logGamma(10)).toBeCloseTo(12.801827480081467, 12);
    expect(logGamma(123.4)).toBeCloseTo(469.3360974421906, 9);
  });

  it('the regularized upper incomplete gamma matches scipy.special.gammaincc (series and continued-fraction sides)', () => {
    expect(gammaQ(0.5, 0.1)).toBeCloseTo(0.6547208460185768, 12);
    expect(gammaQ(3, 2.5)).toBeCloseTo(0.5438131158833297, 12);
    expect(gammaQ(10, 25)).toBeCloseTo(0.0002214766382487835, 14);
    expect(gammaQ(100, 90)).toBeCloseTo(0.84177901081357, 10);
    expect(gammaQ(2.5, 0.0001)).toBeCloseTo(0.9999999999699121, 14);
    expect(gammaQ(2, 0)).toBe(1);
    expect(Number.isNaN(gammaQ(0, 1))).toBe(true);
  });

  it('chi-square survival matches scipy.stats.chi2.sf at the textbook critical values', () => {
    expect(chiSquareSurvival(3.841458820694124, 1)).toBeCloseTo(0.05, 12);
    expect(chiSquareSurvival(10.827566170662733, 1)).toBeCloseTo(0.001, 12);
    expect(chiSquareSurvival(5.991464547107979, 2)).toBeCloseTo(0.05, 12);
    expect(chiSquareSurvival(7.814727903251178, 3)).toBeCloseTo(0.05, 12);
    expect(chiSquareSurvival(0.5, 4)).toBeCloseTo(0.9735009788392561, 12);
    expect(chiSquareSurvival(50, 10) / 2.669083424904495e-7).toBeCloseTo(1, 9);
    expect(chiSquareSurvival(200, 3) / 4.218541107192018e-43).toBeCloseTo(1, 8);
    // df 2 has a closed form: exp(-x/2).
    for (const x of [0.3, 2, 9, 31]) expect(chiSquareSurvival(x, 2)).toBeCloseTo(Math.exp(-x / 2), 13);
  });

  it('the normal CDF matches scipy.stats.norm.cdf', () => {
    expect(normalCdf(1.959963984540054)).toBeCloseTo(0.975, 13);
    expect(normalCdf(-3)).toBeCloseTo(0.0013498980316300933, 14);
    expect(normalCdf(0.5)).toBeCloseTo(0.6914624612740131, 13);
    expect(normalCdf(-8) / 6.22096057427174e-16).toBeCloseTo(1, 8);
    expect(normalCdf(0)).toBe(0.5);
  });
});

describe('sample-ratio mismatch', () => {
  it('matches scipy.stats.chisquare for two and three arms', () => {
    const two = srmCheck([
      { visitors: 5000, weight: 50 },
      { visitors: 5200, weight: 50 },
    ]);
    expect(two.checked).toBe(true);
    expect(two.chi_square).toBeCloseTo(3.9215686274509802, 12);
    expect(two.p_value).toBeCloseTo(0.0476703806561615, 12);
    expect(two.mismatch).toBe(false);
    // Weights 25/25/50 with an even observed split: a broken assignment.
    const three = srmCheck([
      { visitors: 1000, weight: 1 },
      { visitors: 1000, weight: 1 },
      { visitors: 1130, weight: 2 },
    ]);
    expect(three.chi_square).toBeCloseTo(241.82108626198084, 9);
    expect(three.p_value! / 3.0847382190460317e-53).toBeCloseTo(1, 6);
    expect(three.mismatch).toBe(true);
  });

  it('flags at p < 0.001 and not at p just above it', () => {
    // scipy: chisquare([100, 152]).pvalue = 0.0010540..., chisquare([100, 153]).pvalue = 0.00086199...
    const at = (b: number) => srmCheck([{ visitors: 100, weight: 1 }, { visitors: b, weight: 1 }]);
    expect(at(152).p_value).toBeCloseTo(0.0010540340457847867, 12);
    expect(at(152).mismatch).toBe(false);
    expect(at(153).p_value).toBeCloseTo(0.0008619902360926809, 12);
    expect(at(153).mismatch).toBe(true);
  });

  it('is skipped under 8 visitors in an arm and checked from 8', () => {
    expect(srmCheck([{ visitors: 7, weight: 1 }, { visitors: 30, weight: 1 }])).toEqual({ checked: false, chi_square: null, p_value: null, mismatch: false });
    const eight = srmCheck([{ visitors: 8, weight: 1 }, { visitors: 30, weight: 1 }]);
    expect(eight.checked).toBe(true);
    expect(eight.chi_square).toBeCloseTo(12.736842105263158, 12);
    expect(eight.p_value).toBeCloseTo(0.00035852252875322714, 12);
    expect(eight.mismatch).toBe(true);
  });

  it('leaves arms with weight 0 out', () => {
    const r = srmCheck([{ visitors: 450, weight: 1 }, { visitors: 550, weight: 1 }, { visitors: 0, weight: 0 }]);
    expect(r.chi_square).toBeCloseTo(10, 12);
    expect(r.p_value).toBeCloseTo(0.001565402258002549, 12);
  });
});

describe('confidence sequence (always-valid interval)', () => {
  it('ρ for tuning parameter 5000 (eq. 161)', () => {
    expect(sequentialRho(0.05)).toBeCloseTo(0.03984006677137368, 14);
    expect(sequentialRho(0.001)).toBeCloseTo(0.05746509410177243, 14);
  });

  const bin = (n: number, x: number) => ({ n, sum: x, sumSq: x });

  it('matches eq. 9 evaluated in Python for conversion differences', () => {
    const small = compare(bin(1000, 100), bin(1000, 130), 0.05);
    expect(small.difference).toBeCloseTo(0.03, 14);
    expect(small.ci_low).toBeCloseTo(-0.014540237791478755, 12);
    expect(small.ci_high).toBeCloseTo(0.07454023779147875, 12);
    // A fixed-horizon z interval would already call this significant (lower end 0.00205); the sequential one does not.
    expect(small.verdict).toBe('inconclusive');
    expect(small.chance_to_beat_control).toBeCloseTo(0.9823114741261698, 10);
    expect(small.relative_lift).toBeCloseTo(0.3, 12);

    const large = compare(bin(10_000, 1000), bin(10_000, 1150), 0.05);
    expect(large.ci_low).toBeCloseTo(0.0013050186438294462, 12);
    expect(large.ci_high).toBeCloseTo(0.028694981356170553, 12);
    expect(large.verdict).toBe('better');
    expect(large.chance_to_beat_control).toBeCloseTo(0.9996927160183898, 10);

    const worse = compare(bin(10_000, 1150), bin(10_000, 1000), 0.05);
    expect(worse.verdict).toBe('worse');

    const same = compare(bin(20_000, 1000), bin(20_000, 1000), 0.05);
    expect(same.ci_low).toBeCloseTo(-0.00700091071062694, 12);
    expect(same.ci_high).toBeCloseTo(0.00700091071062694, 12);
    expect(same.chance_to_beat_control).toBe(0.5);
    expect(same.verdict).toBe('inconclusive');
  });

  it('is wider at a stricter alpha and shrinks as data grow', () => {
    const v = 0.0001;
    expect(sequentialHalfWidth(v, 1000, 0.001)).toBeGreaterThan(sequentialHalfWidth(v, 1000, 0.05));
    expect(sequentialHalfWidth(v / 10, 10_000, 0.05)).toBeLessThan(sequentialHalfWidth(v, 1000, 0.05));
  });

  it('has no interval under two visitors per arm and no lift when the control is 0', () => {
    const r = compare(bin(1, 0), bin(5, 2), 0.05);
    expect(r.ci_low).toBeNull();
    expect(r.verdict).toBe('inconclusive');
    expect(r.relative_lift).toBeNull();
  });

  it('keeps its error rate under daily peeking in an A/A simulation (seeded)', () => {
    // 200 A/A tests, each looked at 30 times as 300 visitors per arm arrive per look, true rate 10%.
    let seed = 12345;
    const rand = () => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed / 2 ** 32;
    };
    let falsePositives = 0;
    for (let t = 0; t < 200; t++) {
      const a = { n: 0, sum: 0, sumSq: 0 };
      const b = { n: 0, sum: 0, sumSq: 0 };
      let flagged = false;
      for (let look = 0; look < 30 && !flagged; look++) {
        for (let i = 0; i < 300; i++) {
          const xa = rand() < 0.1 ? 1 : 0;
          const xb = rand() < 0.1 ? 1 : 0;
          a.n++;
          a.sum += xa;
          a.sumSq += xa;
          b.n++;
          b.sum += xb;
          b.sumSq += xb;
        }
        if (compare(a, b, 0.05).verdict !== 'inconclusive') flagged = true;
      }
      if (flagged) falsePositives++;
    }
    // A fixed-horizon test peeked at 30 times flags roughly 25-30% of A/A tests; the sequence stays under 5%.
    expect(falsePositives / 200).toBeLessThanOrEqual(0.05);
  });
});

describe('p75', () => {
  it('is the nearest-rank 75th percentile', () => {
    expect(p75Rank(1)).toBe(1);
    expect(p75Rank(4)).toBe(3);
    expect(p75Rank(5)).toBe(4);
    expect(p75Rank(100)).toBe(75);
    expect(p75([4, 1, 3, 2])).toBe(3);
    expect(p75([10, 20, 30, 40, 50])).toBe(40);
    expect(p75([])).toBeNull();
  });
});

import { describe, expect, it } from 'vitest';
import { assignArm, bucket, fnv1a32 } from '../../src/domain/experiments/assign.js';
import {
  computeResults,
  EARLY_STOP_MIN_RUN_MS,
  earlyStop,
  editableFields,
  GUARDRAIL_MIN_SAMPLE,
  guardrailVerdict,
  transition,
  type ArmAggregate,
  type ArmInfo,
} from '../../src/domain/experiments/rules.js';
import { webVitalsOf } from '../../src/domain/experiments/vitals.js';

describe('assignment (GrowthBook v2 hash)', () => {
  it('matches the published test vectors', () => {
    // GrowthBook SDK test cases: hash v2 ("seed", "a") = 0.0505; FNV-1a 32 of "" is the offset basis.
    expect(bucket('seed', 'a')).toBe(0.0505);
    expect(fnv1a32('')).toBe(0x811c9dc5);
    expect(fnv1a32('a')).toBe(0xe40c292c);
  });

  const arms = (weights: number[]) => weights.map((w, i) => ({ id: `arm_${i}`, weight: w }));

  it('is stable: the same visitor always gets the same arm', () => {
    const a = arms([50, 50]);
    for (let i = 0; i < 1000; i++) {
      const v = `visitor-${i}`;
      expect(assignArm('exp_1', v, a)!.id).toBe(assignArm('exp_1', v, a)!.id);
    }
  });

  it('splits 100,000 synthetic visitors within a binomial bound of the weights', () => {
    const N = 100_000;
    for (const weights of [
      [50, 50],
      [20, 30, 50],
      [1, 9],
    ]) {
      const a = arms(weights);
      const total = weights.reduce((s, w) => s + w, 0);
      const counts = new Map<string, number>();
      for (let i = 0; i < N; i++) {
        const arm = assignArm('exp_prop', `v${i}-${(i * 2654435761) >>> 0}`, a)!;
        counts.set(arm.id, (counts.get(arm.id) ?? 0) + 1);
      }
      for (const [i, w] of weights.entries()) {
        const p = w / total;
        const sd = Math.sqrt(N * p * (1 - p));
        // 5 standard deviations: a false alarm once in ~3.5 million runs. The hash's 10,000 buckets
        // round each boundary by at most 1/10,000 of N, added to the bound.
        expect(Math.abs(counts.get(`arm_${i}`)! - N * p)).toBeLessThan(5 * sd + N / 10_000);
      }
    }
  });

  it('never sends anyone to an arm of weight 0, and other seeds reshuffle', () => {
    const a = arms([1, 0, 1]);
    let same = 0;
    for (let i = 0; i < 2000; i++) {
      expect(assignArm('s1', `v${i}`, a)!.id).not.toBe('arm_1');
      if (assignArm('s1', `v${i}`, a)!.id === assignArm('s2', `v${i}`, a)!.id) same++;
    }
    expect(same).toBeGreaterThan(800);
    expect(same).toBeLessThan(1200);
  });

  it('moves only the visitors between the old and the new boundary when weights change', () => {
    const before = arms([50, 50]);
    const after = arms([60, 40]);
    for (let i = 0; i < 5000; i++) {
      const v = `w${i}`;
      const n = bucket('exp_w', v);
      const b = assignArm('exp_w', v, before)!.id;
      const c = assignArm('exp_w', v, after)!.id;
      if (n < 0.5 || n >= 0.6) expect(c).toBe(b);
      else expect([b, c]).toEqual(['arm_1', 'arm_0']);
    }
  });
});

describe('lifecycle', () => {
  it('allows exactly the documented transitions', () => {
    expect(transition('draft', 'start')).toBe('running');
    expect(transition('running', 'pause')).toBe('paused');
    expect(transition('paused', 'resume')).toBe('running');
    expect(transition('running', 'end')).toBe('ended');
    expect(transition('paused', 'end')).toBe('ended');
    expect(transition('ended', 'ship')).toBe('shipped');
    const refused: [Parameters<typeof transition>[0], Parameters<typeof transition>[1]][] = [
      ['draft', 'pause'],
      ['draft', 'resume'],
      ['draft', 'end'],
      ['draft', 'ship'],
      ['running', 'start'],
      ['running', 'resume'],
      ['running', 'ship'],
      ['paused', 'pause'],
      ['paused', 'start'],
      ['paused', 'ship'],
      ['ended', 'start'],
      ['ended', 'end'],
      ['ended', 'resume'],
      ['shipped', 'ship'],
      ['shipped', 'end'],
      ['shipped', 'start'],
    ];
    for (const [s, a] of refused) expect(transition(s, a), `${a} from ${s}`).toBeNull();
  });

  it('lets drafts change everything, live tests some fields, finished tests nothing', () => {
    expect(editableFields('draft')).toBe('all');
    expect(editableFields('running')).toBe('live');
    expect(editableFields('paused')).toBe('live');
    expect(editableFields('ended')).toBe('none');
    expect(editableFields('shipped')).toBe('none');
  });
});

const ARMS: ArmInfo[] = [
  { id: 'b', label: 'B', isControl: false, variantId: 'var_b', weight: 1 },
  { id: 'a', label: 'A', isControl: true, variantId: null, weight: 1 },
];
const agg = (visitors: number, converters: number, revenue = converters * 10, revenueSq = converters * 100): ArmAggregate => ({
  visitors,
  converters,
  conversions: converters,
  revenue,
  revenueSq,
  eventVisitors: 0,
});

describe('results', () => {
  it('puts the control first and computes rates, revenue per visitor and the winner', () => {
    const r = computeResults('conversion', ARMS, new Map([['a', agg(10_000, 1000)], ['b', agg(10_000, 1150)]]));
    expect(r.arms.map((a) => a.arm_id)).toEqual(['a', 'b']);
    expect(r.arms[0]!.comparison).toBeNull();
    expect(r.arms[1]).toMatchObject({ conversion_rate: 0.115, revenue: 11_500, revenue_per_visitor: 1.15 });
    expect(r.arms[1]!.comparison!.verdict).toBe('better');
    expect(r.winning_arm_id).toBe('b');
    expect(r.srm.mismatch).toBe(false);
  });

  it('names the control the winner when every variant is significantly worse, and nobody when inconclusive', () => {
    expect(computeResults('conversion', ARMS, new Map([['a', agg(10_000, 1150)], ['b', agg(10_000, 1000)]])).winning_arm_id).toBe('a');
    expect(computeResults('conversion', ARMS, new Map([['a', agg(1000, 100)], ['b', agg(1000, 130)]])).winning_arm_id).toBeNull();
  });

  it('splits alpha over the variant arms (Bonferroni)', () => {
    const three: ArmInfo[] = [...ARMS, { id: 'c', label: 'C', isControl: false, variantId: 'var_c', weight: 1 }];
    const two = computeResults('conversion', ARMS, new Map([['a', agg(10_000, 1000)], ['b', agg(10_000, 1150)]]));
    const split = computeResults('conversion', three, new Map([['a', agg(10_000, 1000)], ['b', agg(10_000, 1150)], ['c', agg(10_000, 1000)]]));
    const w2 = two.arms[1]!.comparison!.ci_high! - two.arms[1]!.comparison!.ci_low!;
    const w3 = split.arms.find((x) => x.arm_id === 'b')!.comparison!.ci_high! - split.arms.find((x) => x.arm_id === 'b')!.comparison!.ci_low!;
    expect(w3).toBeGreaterThan(w2);
  });

  it('uses per-visitor revenue for revenue_per_visitor', () => {
    // Control: 100 visitors, 10 of them spent 50 each; variant: 100 visitors, 10 spent 80 each.
    const r = computeResults('revenue_per_visitor', ARMS, new Map([['a', agg(100, 10, 500, 10 * 2500)], ['b', agg(100, 10, 800, 10 * 6400)]]));
    expect(r.arms[0]!.metric_value).toBe(5);
    expect(r.arms[1]!.metric_value).toBe(8);
    expect(r.arms[1]!.comparison!.difference).toBe(3);
    expect(r.arms[1]!.comparison!.relative_lift).toBeCloseTo(0.6, 12);
  });

  it('flags a sample-ratio mismatch', () => {
    const r = computeResults('conversion', ARMS, new Map([['a', agg(100, 10)], ['b', agg(153, 10)]]));
    expect(r.srm.mismatch).toBe(true);
  });
});

describe('early stopping', () => {
  const strong = new Map([['a', agg(20_000, 2000)], ['b', agg(20_000, 2400)]]);

  it('waits 3 days', () => {
    expect(earlyStop('conversion', ARMS, strong, EARLY_STOP_MIN_RUN_MS - 1).reason).toBe('too_early');
    expect(earlyStop('conversion', ARMS, strong, EARLY_STOP_MIN_RUN_MS)).toEqual({ stop: true, reason: 'significant', winning_arm_id: 'b' });
  });

  it('waits for 150 successes per arm', () => {
    const few = new Map([['a', agg(2000, 149)], ['b', agg(2000, 400)]]);
    expect(earlyStop('conversion', ARMS, few, EARLY_STOP_MIN_RUN_MS).reason).toBe('too_few_conversions');
  });

  it('does not stop on a sample-ratio mismatch', () => {
    const srm = new Map([['a', agg(20_000, 2000)], ['b', agg(22_000, 2640)]]);
    expect(earlyStop('conversion', ARMS, srm, EARLY_STOP_MIN_RUN_MS).reason).toBe('sample_ratio_mismatch');
  });

  it('needs the extra-strong bar (alpha 0.001), not just 0.05', () => {
    // Significant at 0.05 (see the results test above) but not at 0.001.
    const moderate = new Map([['a', agg(10_000, 1000)], ['b', agg(10_000, 1150)]]);
    expect(computeResults('conversion', ARMS, moderate).winning_arm_id).toBe('b');
    expect(earlyStop('conversion', ARMS, moderate, EARLY_STOP_MIN_RUN_MS).reason).toBe('no_strong_signal');
  });
});

describe('Core Web Vitals guardrail', () => {
  const n = GUARDRAIL_MIN_SAMPLE;
  const s = (p75: number, size = n) => ({ p75, n: size });

  it('needs the minimum sample in both arms', () => {
    expect(GUARDRAIL_MIN_SAMPLE).toBe(100);
    expect(guardrailVerdict('lcp', s(2000, n - 1), s(9000))).toBe('insufficient_data');
    expect(guardrailVerdict('lcp', s(2000), s(9000, n - 1))).toBe('insufficient_data');
    expect(guardrailVerdict('lcp', s(2000), s(9000))).toBe('poor');
  });

  it('trips on worse than control by more than 10% (relative margin)', () => {
    expect(guardrailVerdict('lcp', s(2000), s(2200))).toBe('ok');
    expect(guardrailVerdict('lcp', s(2000), s(2200.5))).toBe('worse_than_control');
    expect(guardrailVerdict('inp', s(300), s(330))).toBe('ok');
    expect(guardrailVerdict('inp', s(300), s(331))).toBe('worse_than_control');
  });

  it('uses the absolute margin when 10% is smaller', () => {
    expect(guardrailVerdict('lcp', s(500), s(600))).toBe('ok');
    expect(guardrailVerdict('lcp', s(500), s(601))).toBe('worse_than_control');
    expect(guardrailVerdict('inp', s(100), s(120))).toBe('ok');
    expect(guardrailVerdict('inp', s(100), s(121))).toBe('worse_than_control');
    expect(guardrailVerdict('cls', s(0), s(0.02))).toBe('ok');
    expect(guardrailVerdict('cls', s(0), s(0.021))).toBe('worse_than_control');
  });

  it('trips past the poor thresholds (LCP 4000 ms, INP 500 ms, CLS 0.25) when the variant is also worse than control', () => {
    expect(guardrailVerdict('lcp', s(3950), s(4000))).toBe('ok');
    expect(guardrailVerdict('lcp', s(3950), s(4001))).toBe('poor');
    expect(guardrailVerdict('inp', s(480), s(500))).toBe('ok');
    expect(guardrailVerdict('inp', s(480), s(501))).toBe('poor');
    expect(guardrailVerdict('cls', s(0.24), s(0.25))).toBe('ok');
    expect(guardrailVerdict('cls', s(0.24), s(0.26))).toBe('poor');
    // A control that is just as poor does not blame the variant.
    expect(guardrailVerdict('lcp', s(4200), s(4100))).toBe('ok');
    expect(guardrailVerdict('lcp', s(4200), s(4200))).toBe('ok');
  });
});

describe('web_vitals event properties', () => {
  it('accepts lcp, inp, cls in range and ignores other event types', () => {
    expect(webVitalsOf({ type: 'pageview', lcp: 'x' })).toBeNull();
    expect(webVitalsOf({ type: 'web_vitals', lcp: 2400, inp: 180, cls: 0.05 })).toEqual({ lcp: 2400, inp: 180, cls: 0.05 });
    expect(webVitalsOf({ type: 'web_vitals', cls: 0 })).toEqual({ cls: 0 });
    expect(webVitalsOf({ type: 'web_vitals', lcp: 600_000 })).toEqual({ lcp: 600_000 });
  });

  it('refuses missing, negative, too large or non-numeric values with validation_failed', () => {
    for (const bad of [{}, { lcp: -1 }, { lcp: 600_001 }, { inp: '200' }, { cls: 101 }, { lcp: Number.NaN }]) {
      expect(() => webVitalsOf({ type: 'web_vitals', ...bad }), JSON.stringify(bad)).toThrow(expect.objectContaining({ code: 'validation_failed' }));
    }
  });
});

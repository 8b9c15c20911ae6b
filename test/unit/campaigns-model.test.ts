import { describe, expect, it } from 'vitest';
import { afterClose, afterLaunch, afterPause, buildOutcome, launchApplies, liveMs, refusal, stepOrder } from '../../src/domain/campaigns/model.js';
import type { CampaignRow, ExposureGroupStats } from '../../src/store/campaigns.js';

const DAY = 86_400_000;

function row(patch: Partial<CampaignRow>): CampaignRow {
  return {
    id: 'cmp_1',
    site_id: 'site_1',
    name: 'c',
    description: null,
    status: 'draft',
    created_by: 'token:t',
    first_launched_at: null,
    live_since: null,
    live_ms: 0,
    paused_at: null,
    closed_at: null,
    closed_by: null,
    outcome: null,
    created_at: 0,
    updated_at: 0,
    ...patch,
  };
}

const group = (patch: Partial<ExposureGroupStats>): ExposureGroupStats => ({
  visitors: 0,
  sessions: 0,
  profiles: 0,
  conversions: 0,
  revenue: 0,
  converters: 0,
  leads: 0,
  ...patch,
});

describe('launchApplies', () => {
  it('rolls back only for a failed required step', () => {
    expect(launchApplies([])).toBe(true);
    expect(launchApplies([{ required: true, outcome: 'succeeded' }, { required: true, outcome: 'skipped' }])).toBe(true);
    expect(launchApplies([{ required: false, outcome: 'failed' }, { required: true, outcome: 'succeeded' }])).toBe(true);
    expect(launchApplies([{ required: false, outcome: 'failed' }, { required: true, outcome: 'failed' }])).toBe(false);
    expect(launchApplies([{ required: true, outcome: 'failed' }])).toBe(false);
  });
});

describe('the lifecycle', () => {
  it('allows each action only from the states it leaves', () => {
    const table = (['draft', 'live', 'paused', 'closed'] as const).map((s) => [
      s,
      refusal('launch', s) === null,
      refusal('pause', s) === null,
      refusal('close', s) === null,
      refusal('edit', s) === null,
    ]);
    expect(table).toEqual([
      ['draft', true, false, true, true],
      ['live', false, true, true, false],
      ['paused', true, false, true, true],
      ['closed', false, false, false, false],
    ]);
    expect(refusal('edit', 'live')).toContain('pause it first');
  });

  it('counts live time over live periods only', () => {
    const launched = afterLaunch(row({}), 1000);
    expect(launched).toMatchObject({ status: 'live', first_launched_at: 1000, live_since: 1000, live_ms: 0 });
    const paused = afterPause(row(launched), 1000 + DAY);
    expect(paused).toMatchObject({ status: 'paused', live_since: null, live_ms: DAY, paused_at: 1000 + DAY, first_launched_at: 1000 });
    // Ten days paused, then live again for half a day: 1.5 days live in all.
    const relaunched = afterLaunch(row(paused), 1000 + 11 * DAY);
    expect(relaunched).toMatchObject({ first_launched_at: 1000, live_since: 1000 + 11 * DAY, live_ms: DAY, paused_at: null });
    expect(liveMs(row(relaunched), 1000 + 11.5 * DAY)).toBe(1.5 * DAY);
    const closed = afterClose(row(relaunched), 1000 + 11.5 * DAY, 'token:x', buildOutcome(group({}), group({}), 1.5 * DAY, 'USD'));
    expect(closed).toMatchObject({ status: 'closed', live_ms: 1.5 * DAY, live_since: null, closed_by: 'token:x' });
    expect(JSON.parse(closed.outcome!)).toMatchObject({ days_live: 1 });
    // A clock that went backwards never makes live time negative.
    expect(liveMs(row({ live_ms: 5, live_since: 100 }), 50)).toBe(5);
  });
});

describe('stepOrder', () => {
  it('launches dependencies first and undoes in reverse, keeping the added order within a kind', () => {
    const comps = [
      { kind: 'trigger' as const, id: 't1' },
      { kind: 'placement' as const, id: 'p1' },
      { kind: 'variant' as const, id: 'v1' },
      { kind: 'experiment' as const, id: 'e1' },
      { kind: 'variant' as const, id: 'v2' },
      { kind: 'segment' as const, id: 's1' },
    ];
    expect(stepOrder('launch', comps).map((c) => c.id)).toEqual(['s1', 'v1', 'v2', 'p1', 'e1', 't1']);
    expect(stepOrder('pause', comps).map((c) => c.id)).toEqual(['t1', 'e1', 'p1', 'v1', 'v2', 's1']);
    expect(stepOrder('close', comps).map((c) => c.id)).toEqual(['t1', 'e1', 'p1', 'v1', 'v2', 's1']);
  });
});

describe('buildOutcome', () => {
  it('is zero without sessions and null-lift without a holdout', () => {
    expect(buildOutcome(group({}), group({}), 0, 'EUR')).toEqual({
      days_live: 0,
      exposed_visitors: 0,
      holdout_visitors: 0,
      sessions: 0,
      profiles: 0,
      conversions: 0,
      conversion_rate: 0,
      revenue: 0,
      currency: 'EUR',
      leads: 0,
      lift: null,
    });
    expect(buildOutcome(group({ profiles: 10, sessions: 10, converters: 2 }), group({}), 0, 'EUR').lift).toBeNull();
  });

  it('rounds days down at the day boundary', () => {
    expect(buildOutcome(group({}), group({}), DAY - 1, 'USD').days_live).toBe(0);
    expect(buildOutcome(group({}), group({}), DAY, 'USD').days_live).toBe(1);
    expect(buildOutcome(group({}), group({}), 3 * DAY + 5, 'USD').days_live).toBe(3);
  });

  it('computes the rate per session (capped at 1) and the lift per visitor against the holdout', () => {
    const o = buildOutcome(
      group({ visitors: 210, sessions: 250, profiles: 200, conversions: 30, revenue: 1234.567, converters: 24, leads: 7 }),
      group({ visitors: 100, profiles: 100, converters: 8 }),
      0,
      'USD',
    );
    expect(o).toMatchObject({ exposed_visitors: 210, holdout_visitors: 100, sessions: 250, profiles: 200, conversions: 30, conversion_rate: 0.12, revenue: 1234.57, leads: 7 });
    // exposed 24/200 profiles = 0.12 against holdout 8/100 = 0.08: +50%.
    expect(o.lift).toBeCloseTo(0.5, 9);
    expect(buildOutcome(group({ profiles: 1, sessions: 1, conversions: 3, converters: 1 }), group({ profiles: 1 }), 0, 'USD')).toMatchObject({
      conversion_rate: 1,
      lift: null, // holdout rate 0: unmeasurable, not infinite
    });
    // Worse than the holdout: negative lift.
    expect(buildOutcome(group({ profiles: 100, converters: 5 }), group({ profiles: 100, converters: 10 }), 0, 'USD').lift).toBe(-0.5);
  });
});

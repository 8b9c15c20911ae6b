import { describe, expect, it } from 'vitest';
import { decide, decideUnplanned, orderPlacements, PLAN_BOUNDS, planSize, zoneAnswerJson, zonesAnswer, zonesAnswerJson, type SiteSnapshot, type SnapshotExperiment, type SnapshotOverride, type VisitorInput, type ZoneDecision } from '../../src/domain/decide/decide.js';
import { ArmRanges, assignArm, bucket, bucketAfter, fnv1a32, inHoldout } from '../../src/domain/experiments/assign.js';
import type { VariantStatus } from '../../src/store/variants.js';

/** A site with one page (/pricing), two zones (hero, banner) and variants v1..v4 of the hero, all published. */
function site(over: Partial<SiteSnapshot> = {}, statuses: Record<string, VariantStatus> = {}): SiteSnapshot {
  const contents = new Map(
    ['c_default', 'c1', 'c2', 'c3', 'c4', 'c_banner'].map((id) => [id, { id, kind: 'html' as const, body: `<p>${id}</p>` }]),
  );
  const variants = new Map(
    ['v1', 'v2', 'v3', 'v4'].map((id, i) => [id, { id, zone_id: 'z_hero', content_id: `c${i + 1}`, status: statuses[id] ?? ('published' as VariantStatus) }]),
  );
  return {
    siteId: 'site_1',
    holdoutShare: 0,
    pages: [
      { id: 'p_pricing', name: 'Pricing', match_type: 'exact', pattern: '/pricing' },
      { id: 'p_all', name: 'Everything', match_type: 'prefix', pattern: '/' },
      { id: 'p_blog', name: 'Blog', match_type: 'prefix', pattern: '/blog/' },
    ],
    zones: [
      { id: 'z_hero', page_id: 'p_pricing', name: 'hero', selector: '#hero', default_content_id: 'c_default' },
      { id: 'z_banner', page_id: 'p_all', name: 'banner', selector: '.banner', default_content_id: 'c_banner' },
      { id: 'z_blog', page_id: 'p_blog', name: 'side', selector: '#side', default_content_id: null },
    ],
    contents,
    variants,
    placements: [],
    experiments: [],
    overrides: [],
    ...over,
  };
}

const visitor = (over: Partial<VisitorInput> = {}): VisitorInput => ({
  visitorId: 'vis_1',
  segmentIds: new Set(),
  url: 'https://shop.example/pricing?utm=x',
  earlierArms: new Map(),
  ...over,
});

const hero = (snap: SiteSnapshot, v: VisitorInput = visitor()) => {
  const d = decide(snap, v)!;
  return d.zones.find((z) => z.zone_id === 'z_hero')!;
};

const running = (over: Partial<SnapshotExperiment> = {}): SnapshotExperiment => ({
  id: 'exp_run',
  page_id: 'p_pricing',
  zone_id: 'z_hero',
  status: 'running',
  seed: 'seed-run',
  shipped_arm_id: null,
  arms: [
    { id: 'arm_c', label: 'Control', is_control: true, variant_id: null, weight: 0 },
    { id: 'arm_b', label: 'B', is_control: false, variant_id: 'v2', weight: 1 },
  ],
  ...over,
});

const shipped = (over: Partial<SnapshotExperiment> = {}): SnapshotExperiment => ({
  id: 'exp_ship',
  page_id: 'p_pricing',
  zone_id: 'z_hero',
  status: 'shipped',
  seed: 'seed-ship',
  shipped_arm_id: 'arm_s',
  arms: [
    { id: 'arm_sc', label: 'Control', is_control: true, variant_id: null, weight: 1 },
    { id: 'arm_s', label: 'S', is_control: false, variant_id: 'v3', weight: 1 },
  ],
  ...over,
});

const ovr = (o: Partial<SnapshotOverride> & Pick<SnapshotOverride, 'kind'>): SnapshotOverride => ({
  id: `ovr_${o.kind}`,
  page_id: null,
  zone_id: null,
  variant_id: null,
  experiment_id: null,
  arm_id: null,
  visitor_id: null,
  set_by: 'token:t1',
  set_at: 1,
  ...o,
});

const placement = (id: string, variant: string, priority: number, segment: string | null = null) => ({ id, zone_id: 'z_hero', variant_id: variant, segment_id: segment, priority });

describe('pages and zones', () => {
  it('decides every zone of every page matching the URL, and none other', () => {
    const d = decide(site(), visitor())!;
    expect(d.pages.map((p) => p.id).sort()).toEqual(['p_all', 'p_pricing']);
    expect(d.zones.map((z) => z.zone_id).sort()).toEqual(['z_banner', 'z_hero']);
    expect(decide(site(), visitor({ url: '/blog/post' }))!.zones.map((z) => z.zone_id).sort()).toEqual(['z_banner', 'z_blog']);
  });
  it('refuses what is not a URL', () => {
    expect(decide(site(), visitor({ url: 'not a url' }))).toBeUndefined();
  });
  it('falls back to the zone default, or no content at all', () => {
    const z = hero(site());
    expect(z).toMatchObject({ reason: 'default', variant_id: null, content: { id: 'c_default', body: '<p>c_default</p>' } });
    expect(z.chain.map((s) => `${s.step}:${s.outcome}`)).toEqual(['override:none', 'holdout:none', 'shipped:none', 'experiment:none', 'placement:none', 'default:applied']);
    expect(decide(site(), visitor({ url: '/blog/x' }))!.zones.find((z) => z.zone_id === 'z_blog')).toMatchObject({ reason: 'default', content: null });
  });
});

describe('placements', () => {
  it('the highest priority whose segment the visitor is in, or with no segment', () => {
    const placements = orderPlacements([placement('plc_a', 'v1', 5, 'seg_vip'), placement('plc_b', 'v2', 3), placement('plc_c', 'v3', 9, 'seg_other')]);
    const snap = site({ placements });
    expect(hero(snap)).toMatchObject({ reason: 'placement', placement_id: 'plc_b', variant_id: 'v2', content: { id: 'c2' } });
    expect(hero(snap, visitor({ segmentIds: new Set(['seg_vip']) }))).toMatchObject({ placement_id: 'plc_a', variant_id: 'v1' });
    expect(hero(snap, visitor({ segmentIds: new Set(['seg_vip', 'seg_other']) }))).toMatchObject({ placement_id: 'plc_c', variant_id: 'v3' });
  });
  it('the reason chain names each higher-ranked placement whose segment the visitor is not in', () => {
    const placements = orderPlacements([placement('plc_a', 'v1', 5, 'seg_vip'), placement('plc_b', 'v2', 3), placement('plc_c', 'v3', 9, 'seg_other')]);
    const z = hero(site({ placements }));
    expect(z.chain.filter((s) => s.step === 'placement')).toEqual([
      { step: 'placement', outcome: 'not_matched', detail: 'placement plc_c (priority 9) is for segment seg_other, which the visitor is not in' },
      { step: 'placement', outcome: 'not_matched', detail: 'placement plc_a (priority 5) is for segment seg_vip, which the visitor is not in' },
      { step: 'placement', outcome: 'applied', detail: 'placement plc_b (priority 3) for everyone: variant v2' },
    ]);
    // Segments only: nothing applies, and the chain says which segments were wanted.
    const none = hero(site({ placements: [placement('plc_a', 'v1', 5, 'seg_vip')] }));
    expect(none.chain.slice(-3).map((s) => `${s.step}:${s.outcome}`)).toEqual(['placement:not_matched', 'placement:none', 'default:applied']);
  });
  it('ties go to the older (smaller) id; order of input does not matter', () => {
    const snap = site({ placements: orderPlacements([placement('plc_2', 'v2', 1), placement('plc_1', 'v1', 1)]) });
    expect(hero(snap).placement_id).toBe('plc_1');
  });
  it('a disabled or archived variant is never served: the next placement applies', () => {
    const placements = orderPlacements([placement('plc_a', 'v1', 9), placement('plc_b', 'v2', 1)]);
    for (const st of ['disabled', 'archived', 'draft', 'approved'] as const) {
      const z = hero(site({ placements }, { v1: st }));
      expect(z, st).toMatchObject({ reason: 'placement', placement_id: 'plc_b', variant_id: 'v2' });
      expect(z.chain.find((s) => s.outcome === 'skipped')?.detail).toContain(st);
    }
    expect(hero(site({ placements }, { v1: 'disabled', v2: 'disabled' }))).toMatchObject({ reason: 'default', variant_id: null });
  });
});

describe('experiments', () => {
  it('a running experiment beats placements; assignment follows assignArm', () => {
    const arms = [
      { id: 'arm_c', label: 'Control', is_control: true, variant_id: null, weight: 1 },
      { id: 'arm_b', label: 'B', is_control: false, variant_id: 'v2', weight: 1 },
    ];
    const snap = site({ experiments: [running({ arms })], placements: [placement('plc_a', 'v1', 100)] });
    let control = 0;
    for (let i = 0; i < 200; i++) {
      const v = visitor({ visitorId: `vis_${i}` });
      const z = hero(snap, v);
      const want = assignArm('seed-run', `vis_${i}`, arms)!;
      expect(z).toMatchObject({ reason: 'experiment_arm', experiment_id: 'exp_run', arm_id: want.id });
      if (want.id === 'arm_c') {
        control++;
        expect(z).toMatchObject({ variant_id: null, content: { id: 'c_default' } });
      } else expect(z).toMatchObject({ variant_id: 'v2', content: { id: 'c2' } });
    }
    expect(control).toBeGreaterThan(60);
    expect(control).toBeLessThan(140);
  });
  it('a visitor keeps its earlier arm, even when the hash now says otherwise', () => {
    const snap = site({ experiments: [running()] });
    expect(hero(snap).arm_id).toBe('arm_b'); // all the weight on B
    const z = hero(snap, visitor({ earlierArms: new Map([['exp_run', 'arm_c']]) }));
    expect(z).toMatchObject({ arm_id: 'arm_c', variant_id: null, reason: 'experiment_arm' });
    expect(z.chain.find((s) => s.step === 'experiment')!.detail).toContain('keeps its earlier arm');
    // An earlier arm that no longer exists is ignored.
    expect(hero(snap, visitor({ earlierArms: new Map([['exp_run', 'arm_gone']]) })).arm_id).toBe('arm_b');
  });
  it('a page-wide experiment covers every zone of the page', () => {
    const snap = site({ experiments: [running({ zone_id: null })] });
    expect(hero(snap)).toMatchObject({ reason: 'experiment_arm', arm_id: 'arm_b' });
  });
  it('paused, draft and ended experiments are not applied', () => {
    for (const status of ['paused', 'draft', 'ended'] as const) {
      expect(hero(site({ experiments: [running({ status })] })).reason, status).toBe('default');
    }
  });
  it('an arm whose variant is disabled is skipped, falling through to placements', () => {
    const snap = site({ experiments: [running()], placements: [placement('plc_a', 'v1', 1)] }, { v2: 'disabled' });
    const z = hero(snap);
    expect(z).toMatchObject({ reason: 'placement', variant_id: 'v1', experiment_id: null, arm_id: null });
    expect(z.chain.find((s) => s.step === 'experiment')).toMatchObject({ outcome: 'skipped' });
  });
  it('an approved (not yet published) arm variant is served by a running experiment', () => {
    expect(hero(site({ experiments: [running()] }, { v2: 'approved' }))).toMatchObject({ variant_id: 'v2' });
  });
  it('a shipped experiment beats a running one, for everyone; a shipped control shows the default', () => {
    const snap = site({ experiments: [shipped(), running()], placements: [placement('plc_a', 'v1', 100)] });
    for (let i = 0; i < 20; i++) expect(hero(snap, visitor({ visitorId: `x${i}` }))).toMatchObject({ reason: 'shipped_experiment', arm_id: 'arm_s', variant_id: 'v3' });
    const ctl = hero(site({ experiments: [shipped({ shipped_arm_id: 'arm_sc' })] }));
    expect(ctl).toMatchObject({ reason: 'shipped_experiment', arm_id: 'arm_sc', variant_id: null, content: { id: 'c_default' } });
  });
});

describe('overrides', () => {
  const all = () =>
    site({
      experiments: [shipped(), running()],
      placements: [placement('plc_a', 'v1', 100)],
      overrides: [
        ovr({ kind: 'force_arm', experiment_id: 'exp_run', arm_id: 'arm_c', visitor_id: 'vis_qa', zone_id: 'z_hero' }),
        ovr({ kind: 'pin_zone', zone_id: 'z_hero', variant_id: 'v4', page_id: 'p_pricing' }),
        ovr({ kind: 'personalization_off', page_id: 'p_pricing' }),
      ],
    });
  it('override > shipped > experiment > placement > default, step by step', () => {
    let snap = all();
    // The QA visitor: force_arm wins over everything.
    expect(hero(snap, visitor({ visitorId: 'vis_qa' }))).toMatchObject({ reason: 'override_force_arm', override_id: 'ovr_force_arm', arm_id: 'arm_c', variant_id: null });
    // Anyone else: the pin.
    expect(hero(snap)).toMatchObject({ reason: 'override_pin_zone', variant_id: 'v4', content: { id: 'c4' } });
    snap.overrides = snap.overrides.filter((o) => o.kind !== 'pin_zone');
    expect(hero(snap)).toMatchObject({ reason: 'override_personalization_off', variant_id: null, content: { id: 'c_default' } });
    snap.overrides = [];
    expect(hero(snap)).toMatchObject({ reason: 'shipped_experiment', variant_id: 'v3' });
    snap.experiments = snap.experiments.filter((e) => e.status !== 'shipped');
    expect(hero(snap)).toMatchObject({ reason: 'experiment_arm', variant_id: 'v2' });
    snap.experiments = [];
    expect(hero(snap)).toMatchObject({ reason: 'placement', variant_id: 'v1' });
    snap = { ...snap, placements: [] }; // a new snapshot, as every reload makes
    expect(hero(snap)).toMatchObject({ reason: 'default', variant_id: null });
  });
  it('personalization_off leaves other pages alone', () => {
    const snap = site({ placements: [{ id: 'plc_b', zone_id: 'z_banner', variant_id: 'v1', segment_id: null, priority: 0 }], overrides: [ovr({ kind: 'personalization_off', page_id: 'p_pricing' })] });
    const d = decide(snap, visitor())!;
    expect(d.zones.find((z) => z.zone_id === 'z_banner')).toMatchObject({ reason: 'placement' });
    expect(d.zones.find((z) => z.zone_id === 'z_hero')).toMatchObject({ reason: 'override_personalization_off' });
  });
  it('a pin to a variant that was disabled since is skipped', () => {
    const snap = site({ overrides: [ovr({ kind: 'pin_zone', zone_id: 'z_hero', variant_id: 'v4' })], placements: [placement('plc_a', 'v1', 1)] }, { v4: 'disabled' });
    const z = hero(snap);
    expect(z).toMatchObject({ reason: 'placement', variant_id: 'v1' });
    expect(z.chain[0]).toMatchObject({ step: 'override', outcome: 'skipped' });
  });
  it('force_arm applies even when the experiment is paused (QA before start)', () => {
    const snap = site({ experiments: [running({ status: 'paused' })], overrides: [ovr({ kind: 'force_arm', experiment_id: 'exp_run', arm_id: 'arm_b', visitor_id: 'vis_1' })] });
    // Paused experiments are not in a snapshot's running list but are still found for force_arm.
    expect(hero(snap)).toMatchObject({ reason: 'override_force_arm', variant_id: 'v2' });
  });
});

describe('holdout', () => {
  it('a visitor in the holdout sees every zone default; outside, personalization applies', () => {
    const snap = site({ holdoutShare: 0.5, experiments: [running()], placements: [placement('plc_a', 'v1', 1)] });
    let held = 0;
    for (let i = 0; i < 400; i++) {
      const id = `h_${i}`;
      const d = decide(snap, visitor({ visitorId: id }))!;
      const z = d.zones.find((x) => x.zone_id === 'z_hero')!;
      expect(d.holdout).toBe(inHoldout('site_1', id, 0.5));
      if (d.holdout) {
        held++;
        expect(z).toMatchObject({ reason: 'holdout', holdout: true, variant_id: null, experiment_id: null, content: { id: 'c_default' } });
        expect(d.zones.every((x) => x.reason === 'holdout')).toBe(true);
      } else expect(z).toMatchObject({ reason: 'experiment_arm', holdout: false });
    }
    expect(held).toBeGreaterThan(150);
    expect(held).toBeLessThan(250);
  });
  it('overrides still apply to held-out visitors', () => {
    const snap = site({ holdoutShare: 1, overrides: [ovr({ kind: 'pin_zone', zone_id: 'z_hero', variant_id: 'v4' })] });
    const d = decide(snap, visitor())!;
    expect(d.holdout).toBe(true);
    expect(d.zones.find((z) => z.zone_id === 'z_hero')).toMatchObject({ reason: 'override_pin_zone', variant_id: 'v4', holdout: true });
    expect(d.zones.find((z) => z.zone_id === 'z_banner')).toMatchObject({ reason: 'holdout' });
  });
  it('share 0 holds nobody out, share 1 everybody', () => {
    for (let i = 0; i < 50; i++) {
      expect(decide(site({ holdoutShare: 0 }), visitor({ visitorId: `a${i}` }))!.holdout).toBe(false);
      expect(decide(site({ holdoutShare: 1 }), visitor({ visitorId: `a${i}` }))!.holdout).toBe(true);
    }
  });
});

describe('determinism', () => {
  it('the same snapshot and visitor give the same decision', () => {
    const snap = site({ experiments: [running({ arms: [{ id: 'a', label: 'A', is_control: true, variant_id: null, weight: 1 }, { id: 'b', label: 'B', is_control: false, variant_id: 'v2', weight: 1 }] })] });
    for (let i = 0; i < 50; i++) expect(decide(snap, visitor({ visitorId: `d${i}` }))).toEqual(decide(snap, visitor({ visitorId: `d${i}` })));
  });
});

describe("GET /api/decide's zone texts (kept per snapshot)", () => {
  /** What handleDecide answered before the texts were kept: JSON.stringify of each zone's fields. */
  const plain = (zones: ZoneDecision[]) =>
    JSON.stringify(
      zones.map((z) => ({
        zone_id: z.zone_id,
        name: z.name,
        selector: z.selector,
        content: z.content === null ? null : { kind: z.content.kind, body: z.content.body },
        variant_id: z.variant_id,
        experiment_id: z.experiment_id,
        arm_id: z.arm_id,
        reason: z.reason,
      })),
    );

  it('are the bytes JSON.stringify gives, first made and then kept, over tests, overrides, holdout, no content and escaped text', () => {
    const snap = site({
      holdoutShare: 0.2,
      zones: [
        { id: 'z_hero', page_id: 'p_pricing', name: 'hé"ro\\', selector: '#hero > a[href="/x"]', default_content_id: 'c_default' },
        { id: 'z_banner', page_id: 'p_all', name: 'banner \u2028 </script>', selector: '.banner', default_content_id: 'c_banner' },
        { id: 'z_none', page_id: 'p_all', name: 'none', selector: '#none', default_content_id: null },
      ],
      contents: new Map([
        ['c_default', { id: 'c_default', kind: 'html' as const, body: '<p class="d">default \u{1F600} \n\t</p>' }],
        ['c_banner', { id: 'c_banner', kind: 'html' as const, body: '\u0000\u001f "quoted" \\ end' }],
        ...['c1', 'c2', 'c3', 'c4'].map((id) => [id, { id, kind: 'html' as const, body: `<p>${id}</p>` }] as const),
      ]),
      experiments: [running({ arms: [{ id: 'arm_a', label: 'A', is_control: true, variant_id: null, weight: 1 }, { id: 'arm_b', label: 'B', is_control: false, variant_id: 'v2', weight: 1 }] })],
      overrides: [ovr({ kind: 'force_arm', experiment_id: 'exp_run', arm_id: 'arm_b', visitor_id: 'forced' })],
      placements: [placement('pl1', 'v1', 5, 'seg_a')],
    });
    const reasons = new Set<string>();
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 200; i++) {
        const d = decide(snap, visitor({ visitorId: i === 0 ? 'forced' : `t${i}`, segmentIds: new Set(i % 3 === 0 ? ['seg_a'] : []) }))!;
        for (const z of d.zones) reasons.add(z.reason);
        expect(zonesAnswerJson(snap, d.zones)).toBe(plain(d.zones));
      }
    }
    expect([...reasons].sort()).toEqual(['default', 'experiment_arm', 'holdout', 'override_force_arm']);
    expect(zonesAnswerJson(snap, [])).toBe('[]');
  });

  it('follow a new snapshot: the same content id with another body, name or selector answers the new text', () => {
    const before = site();
    const d1 = decide(before, visitor())!;
    expect(zonesAnswerJson(before, d1.zones)).toContain('<p>c_default</p>');
    const after = site({
      contents: new Map([...before.contents].map(([id, c]) => [id, { ...c, body: `<p>${id} published</p>` }])),
      zones: before.zones.map((z) => ({ ...z, selector: `${z.selector}-2` })),
    });
    const d2 = decide(after, visitor())!;
    const text = zonesAnswerJson(after, d2.zones);
    expect(text).toBe(plain(d2.zones));
    expect(text).toContain('<p>c_default published</p>');
    expect(text).toContain('#hero-2');
    expect(zonesAnswerJson(before, d1.zones)).toBe(plain(d1.zones));
  });

  it('tell apart decisions whose ids would run together (variant, test and arm swapped or null)', () => {
    const snap = site();
    const base: ZoneDecision = decide(snap, visitor())!.zones.find((z) => z.zone_id === 'z_hero')!;
    const cases: Partial<ZoneDecision>[] = [
      { variant_id: 'ab', experiment_id: null, arm_id: 'c' },
      { variant_id: 'a', experiment_id: 'b', arm_id: 'c' },
      { variant_id: null, experiment_id: 'ab', arm_id: 'c' },
      { variant_id: 'a', experiment_id: 'bc', arm_id: null },
      { variant_id: '-', experiment_id: null, arm_id: null },
      { variant_id: null, experiment_id: '-', arm_id: null },
      { variant_id: '1:a', experiment_id: null, arm_id: null },
      { variant_id: 'a', experiment_id: null, arm_id: null, reason: 'placement' },
      { variant_id: 'a', experiment_id: null, arm_id: null, reason: 'default' },
      { content: null },
    ];
    const texts = new Set<string>();
    for (let round = 0; round < 2; round++) {
      for (const c of cases) {
        const z = { ...base, ...c };
        expect(zonesAnswerJson(snap, [z])).toBe(plain([z]));
        expect(zonesAnswerJson(snap, [z])).toBe(`[${zoneAnswerJson(z)}]`);
        texts.add(zonesAnswerJson(snap, [z]));
      }
    }
    expect(texts.size).toBe(cases.length);
  });
});

describe('the plan kept per snapshot (pages per URL, decisions per what of the visitor they depend on)', () => {
  /** A site where every step can apply or be skipped, on its hero zone and its banner. */
  function busy(statuses: Record<string, VariantStatus> = {}, over: Partial<SiteSnapshot> = {}): SiteSnapshot {
    return site(
      {
        holdoutShare: 0.2,
        pages: [
          { id: 'p_pricing', name: 'Pricing', match_type: 'exact', pattern: '/pricing' },
          { id: 'p_all', name: 'Everything', match_type: 'prefix', pattern: '/' },
          { id: 'p_items', name: 'Items', match_type: 'glob', pattern: '/items/*' },
          { id: 'p_plan', name: 'Pro plan', match_type: 'exact', pattern: '/pricing?plan=pro' },
        ],
        zones: [
          { id: 'z_hero', page_id: 'p_pricing', name: 'hero', selector: '#hero', default_content_id: 'c_default' },
          { id: 'z_banner', page_id: 'p_all', name: 'banner', selector: '.banner', default_content_id: 'c_banner' },
          { id: 'z_item', page_id: 'p_items', name: 'item', selector: '#item', default_content_id: null },
          { id: 'z_plan', page_id: 'p_plan', name: 'plan', selector: '#plan', default_content_id: 'c2' },
        ],
        experiments: [
          running({ id: 'exp_a', seed: 'a', arms: [
            { id: 'arm_a0', label: 'A0', is_control: true, variant_id: null, weight: 1 },
            { id: 'arm_a1', label: 'A1', is_control: false, variant_id: 'v1', weight: 2 },
            { id: 'arm_a2', label: 'A2', is_control: false, variant_id: 'v4', weight: 1 },
          ] }),
          running({ id: 'exp_b', seed: 'b', zone_id: null, arms: [
            { id: 'arm_b0', label: 'B0', is_control: true, variant_id: null, weight: 1 },
            { id: 'arm_b1', label: 'B1', is_control: false, variant_id: 'v2', weight: 1 },
          ] }),
          running({ id: 'exp_item', seed: 'i', page_id: 'p_items', zone_id: 'z_item', arms: [
            { id: 'arm_i0', label: 'I0', is_control: true, variant_id: null, weight: 0 },
            { id: 'arm_i1', label: 'I1', is_control: false, variant_id: 'v3', weight: 1 },
          ] }),
        ],
        placements: orderPlacements([
          placement('plc_1', 'v1', 9, 'seg_a'),
          placement('plc_2', 'v2', 8, 'seg_b'),
          placement('plc_3', 'v3', 7, null),
          { id: 'plc_b1', zone_id: 'z_banner', variant_id: 'v4', segment_id: 'seg_a', priority: 5 },
          { id: 'plc_b2', zone_id: 'z_banner', variant_id: 'v2', segment_id: 'seg_b', priority: 4 },
          { id: 'plc_b3', zone_id: 'z_banner', variant_id: 'v3', segment_id: null, priority: 1 },
        ]),
        overrides: [ovr({ kind: 'force_arm', experiment_id: 'exp_a', arm_id: 'arm_a2', visitor_id: 'vis_qa', zone_id: 'z_hero' })],
        ...over,
      },
      statuses,
    );
  }
  const urls = ['/pricing', 'https://shop.example/pricing?utm=x', '/pricing?plan=pro', '/items/shoe', '/items/a/b', '/other', 'not a url', 'https://shop.example/items/hat#top'];
  const segmentSets = [[], ['seg_a'], ['seg_b'], ['seg_a', 'seg_b']];
  const earlier = [new Map<string, string>(), new Map([['exp_a', 'arm_a0']]), new Map([['exp_a', 'arm_gone'], ['exp_b', 'arm_b1']]), new Map([['exp_item', 'arm_i0']])];
  const visitors = ['vis_qa', ...Array.from({ length: 24 }, (_, i) => `v${i}`)];
  /** Every (visitor, URL, segments, earlier arms) decided twice over one snapshot: both times as decideUnplanned, which makes every step each time. */
  function checkAll(snap: SiteSnapshot): void {
    for (let round = 0; round < 2; round++) {
      for (const visitorId of visitors) {
        for (const url of urls) {
          for (const [i, segs] of segmentSets.entries()) {
            const v = visitor({ visitorId, url, segmentIds: new Set(segs), earlierArms: earlier[(i + visitorId.length) % earlier.length]! });
            const planned = decide(snap, v);
            expect(planned).toEqual(decideUnplanned(snap, v));
            if (planned) expect(zonesAnswer(snap, planned.zones)).toEqual({ text: JSON.stringify(planned.zones.map((z) => JSON.parse(zoneAnswerJson(z)))), bytes: Buffer.byteLength(zonesAnswerJson(snap, planned.zones)) });
          }
        }
      }
    }
  }
  it('decides as every step made each time would, over holdout, tests (kept, assigned, skipped arms), segments, skipped placements and force_arm', () => {
    checkAll(busy());
    checkAll(busy({ v1: 'disabled', v2: 'archived' }));
    checkAll(busy({}, { holdoutShare: 0 }));
    checkAll(busy({ v3: 'disabled' }, { overrides: [ovr({ kind: 'pin_zone', zone_id: 'z_hero', variant_id: 'v4' }), ovr({ kind: 'personalization_off', page_id: 'p_all' })] }));
    checkAll(busy({}, { experiments: [shipped(), running()] }));
    // The plan kept decisions: the same key, the same decision object, for visitors alike.
    const snap = busy({}, { holdoutShare: 0 });
    const a = decide(snap, visitor({ visitorId: 'v1', segmentIds: new Set(['seg_a']) }))!;
    const b = decide(snap, visitor({ visitorId: 'v2', segmentIds: new Set(['seg_a']) }))!;
    expect(b.zones.find((z) => z.zone_id === 'z_banner')).toBe(a.zones.find((z) => z.zone_id === 'z_banner'));
    expect(planSize(snap)!.decisions).toBeGreaterThan(0);
  });
  it('never shares what is the visitor\u2019s: its segments, arms, holdout and force_arm decide its zones; kept decisions are frozen', () => {
    const snap = busy();
    const inSeg = decide(snap, visitor({ visitorId: 'v1', url: '/other', segmentIds: new Set(['seg_a']) }))!;
    const outSeg = decide(snap, visitor({ visitorId: 'v1', url: '/other', segmentIds: new Set() }))!;
    expect(inSeg.holdout).toBe(false);
    expect(inSeg.zones[0]).toMatchObject({ placement_id: 'plc_b1', variant_id: 'v4' });
    expect(outSeg.zones[0]).toMatchObject({ placement_id: 'plc_b3', variant_id: 'v3' });
    expect(outSeg.zones).not.toBe(inSeg.zones);
    // The QA visitor's forced arm, then another visitor on the same URL: not the forced arm.
    expect(hero(snap, visitor({ visitorId: 'vis_qa', url: '/pricing' }))).toMatchObject({ reason: 'override_force_arm', arm_id: 'arm_a2' });
    const others = visitors.slice(1).map((visitorId) => hero(snap, visitor({ visitorId, url: '/pricing' })));
    expect(others.some((z) => z.reason === 'override_force_arm')).toBe(false);
    expect(new Set(others.map((z) => z.reason))).toEqual(new Set(['holdout', 'experiment_arm']));
    others.forEach((z, i) => {
      const id = visitors[i + 1]!;
      expect(z.reason === 'holdout').toBe(inHoldout(snap.siteId, id, 0.2));
      if (z.reason === 'experiment_arm') expect(z.arm_id).toBe(assignArm('a', id, snap.experiments[0]!.arms)!.id);
    });
    // An earlier arm is kept for its visitor only.
    const kept = hero(snap, visitor({ visitorId: 'v5', url: '/pricing', earlierArms: new Map([['exp_a', 'arm_a0']]) }));
    const fresh = hero(snap, visitor({ visitorId: 'v5', url: '/pricing' }));
    if (!inHoldout(snap.siteId, 'v5', 0.2)) {
      expect(kept).toMatchObject({ arm_id: 'arm_a0', variant_id: null });
      expect(fresh.arm_id).toBe(assignArm('a', 'v5', busy().experiments[0]!.arms)!.id);
    }
    expect(Object.isFrozen(kept)).toBe(true);
    expect(Object.isFrozen(kept.chain)).toBe(true);
    expect(() => {
      (kept as { reason: string }).reason = 'default';
    }).toThrow(TypeError);
  });
  it('a snapshot changed (a new one, or a part of it replaced) answers its own plan', () => {
    const before = busy({}, { holdoutShare: 0 });
    const v = visitor({ visitorId: 'v1', url: '/other', segmentIds: new Set(['seg_a']) });
    expect(decide(before, v)!.zones[0]).toMatchObject({ placement_id: 'plc_b1', variant_id: 'v4' });
    expect(zonesAnswerJson(before, decide(before, v)!.zones)).toContain('"variant_id":"v4"');
    // A reload: a new snapshot where the placement is gone.
    const after = { ...before, placements: before.placements.filter((p) => p.id !== 'plc_b1') };
    expect(decide(after, v)!.zones[0]).toMatchObject({ placement_id: 'plc_b3', variant_id: 'v3' });
    expect(zonesAnswerJson(after, decide(after, v)!.zones)).toContain('"variant_id":"v3"');
    // A page's pattern changed: the URL kept before matches no more.
    expect(decide(before, visitor({ url: '/items/shoe' }))!.pages.map((p) => p.id)).toContain('p_items');
    before.pages = before.pages.map((p) => (p.id === 'p_items' ? { ...p, pattern: '/goods/*' } : p));
    expect(decide(before, visitor({ url: '/items/shoe' }))!.pages.map((p) => p.id)).not.toContain('p_items');
    // The holdout set: the same visitors now in it.
    before.holdoutShare = 1;
    expect(decide(before, v)!.holdout).toBe(true);
    expect(decide(before, v)!.zones[0]).toMatchObject({ reason: 'holdout', variant_id: null });
  });
  it('keeps at most PLAN_BOUNDS.urls URLs and PLAN_BOUNDS.urlChars characters of them a snapshot', () => {
    const snap = busy({}, { holdoutShare: 0 });
    for (let i = 0; i < PLAN_BOUNDS.urls + 100; i++) {
      decide(snap, visitor({ url: `/items/i${i}` }));
      expect(planSize(snap)!.urls).toBeLessThanOrEqual(PLAN_BOUNDS.urls);
    }
    const long = '/items/'.padEnd(2000, 'x');
    for (let i = 0; i < 600; i++) {
      const d = decide(snap, visitor({ url: `${long}${i}` }))!;
      expect(d.pages.map((p) => p.id)).toEqual(['p_all', 'p_items']);
      expect(planSize(snap)!.urlChars).toBeLessThanOrEqual(PLAN_BOUNDS.urlChars);
    }
    expect(planSize(snap)!.urls).toBeGreaterThan(0);
    // Decisions a zone are bounded too: as many keys as placements and arms, here far below the bound.
    expect(planSize(snap)!.decisions).toBeLessThanOrEqual(4 * PLAN_BOUNDS.decisionsPerZone);
  });
  it('ArmRanges and assignArm assign as the documented ranges, visitor by visitor', () => {
    // The rule of assign.ts written out again, from bucket(): arms with a positive weight own consecutive shares of [0, 1).
    const reference = (seed: string, visitor: string, arms: readonly { id: string; weight: number }[]) => {
      const positive = arms.filter((a) => a.weight > 0);
      const total = positive.reduce((sum, a) => sum + a.weight, 0);
      if (total <= 0) return undefined;
      const n = bucket(seed, visitor);
      let edge = 0;
      for (const a of positive) {
        edge += a.weight / total;
        if (n < edge) return a;
      }
      return positive[positive.length - 1];
    };
    const sets = [
      [1, 1],
      [0, 1, 2],
      [0.1, 0.2, 0.7],
      [3, 0, 0, 5, 1],
      [0, 0],
      [-1, 2, 1],
      [1 / 3, 1 / 3, 1 / 3],
    ];
    for (const weights of sets) {
      const arms = weights.map((weight, i) => ({ id: `a${i}`, weight }));
      const ranges = new ArmRanges('seed-x', arms);
      for (let i = 0; i < 2000; i++) {
        const want = reference('seed-x', `visitor-${i}`, arms);
        expect(ranges.assign(`visitor-${i}`)).toBe(want);
        expect(assignArm('seed-x', `visitor-${i}`, arms)).toBe(want);
      }
    }
    for (let i = 0; i < 200; i++) expect(bucketAfter(fnv1a32('holdout:site_1'), `v${i}\u00e9`)).toBe(bucket('holdout:site_1', `v${i}\u00e9`));
  });
});

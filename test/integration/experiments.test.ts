/**
 * Layout tests end to end: the MCP tools through the real endpoint with the SDK client, the
 * worker (scheduled end, Core Web Vitals guardrail) and POST /api/events web_vitals, with a
 * receiver subscribed to every event checking each payload against the catalogue. Zones,
 * variants and exposures (which the decision writes) are set up directly in the store.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/client';
import { cleanup, cli, createSite, post, startSvc, tempDir, type Svc } from '../helpers/svc.js';
import { execute, query } from '../helpers/db.js';
import { PG_BASE_URL } from '../helpers/backend.js';
import { startReceiver } from '../helpers/receiver.js';
import { call, callOk, errorOf, McpClients, mintToken } from '../helpers/mcp-client.js';
import { assignArm } from '../../src/domain/experiments/assign.js';
import { validatePayload } from '../../src/webhooks/catalogue.js';

let svc: Svc;
let dataDir: string;
let site: string;
let otherSite: string;
let rx: Awaited<ReturnType<typeof startReceiver>>;
const mcp = new McpClients(() => svc.url);
const c = {} as Record<'write' | 'propose' | 'readOnly' | 'writeRO' | 'other', Client>;

async function refused(client: Client, name: string, args: Record<string, unknown>, code: string): Promise<any> {
  const r = await call(client, name, args);
  expect(r.isError, `${name} should fail with ${code}`).toBe(true);
  expect(errorOf(r).code).toBe(code);
  return errorOf(r);
}

/** Webhook payloads of one type the receiver got, each checked against the catalogue. */
function received(type: string): any[] {
  const out = rx.received.map((r) => JSON.parse(r.body) as { event: string }).filter((p) => p.event === type);
  for (const p of out) {
    const v = validatePayload(type as Parameters<typeof validatePayload>[0], p);
    expect(v.success, `${type}: ${JSON.stringify(v.error?.issues ?? [])}`).toBe(true);
  }
  return out;
}

async function waitFor<T>(what: string, fn: () => T | undefined | Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Ends a throw-away test on its own zone by its scheduled end, and waits until the worker has ended it. The
 * end is moved into the past in the store once the test runs (the tools take only a future end), so the next
 * pass ends it instead of one a second later ("ends a test on its scheduled end" sets a future end through MCP).
 */
async function sentinelEnded(): Promise<void> {
  const t = await callOk(c.write, 'experiments_create', {
    name: 'Sentinel',
    zone_id: 'zone_sentinel',
    arms: [
      { label: 'Control', control: true, weight: 1 },
      { label: 'Sentinel', variant_id: 'var_sentinel', weight: 1 },
    ],
    primary_metric: 'conversion',
    guardrail_metrics: [],
  });
  await callOk(c.write, 'experiments_start', { id: t.id });
  execute(dataDir, 'UPDATE experiments SET scheduled_end_at = ? WHERE id = ?', Date.now() - 1, t.id);
  await waitFor('sentinel end', async () => ((await callOk(c.readOnly, 'experiments_get', { id: t.id })).status === 'ended' ? true : undefined));
}

/**
 * Resolves once a whole worker pass has run over what is stored now: a pass ends the first sentinel
 * (so it began after this call), and a later pass ends the second (so the first one had finished),
 * instead of sleeping and hoping the worker ran.
 */
async function afterAFullPass(): Promise<void> {
  await sentinelEnded();
  await sentinelEnded();
}

interface Exposure {
  visitor: string;
  zone: string;
  variant: string | null;
  experiment: string;
  arm: string;
  url: string;
  at: number;
  profile?: string;
}

/**
 * Exposures written straight into the database, with their first arms as svc's writers keep them (results read
 * first_arms): on SQLite the trigger on exposures does it; on PostgreSQL svc's exposure statement does, so here the
 * site's first arms are computed again from its exposures (as migration 21 does).
 */
function insertExposures(rows: Exposure[]): void {
  for (let i = 0; i < rows.length; i += 500) {
    const chunk = rows.slice(i, i + 500);
    execute(
      dataDir,
      `INSERT INTO exposures (site_id, visitor_id, profile_id, zone_id, variant_id, experiment_id, arm_id, holdout, url, created_at) VALUES ${chunk
        .map(() => '(?, ?, ?, ?, ?, ?, ?, 0, ?, ?)')
        .join(', ')}`,
      ...chunk.flatMap((r) => [site, r.visitor, r.profile ?? null, r.zone, r.variant, r.experiment, r.arm, r.url, r.at]),
    );
  }
  if (PG_BASE_URL !== undefined) {
    execute(
      dataDir,
      `INSERT INTO first_arms (site_id, visitor_id, experiment_id, arm_id, created_at, profile_id)
        SELECT DISTINCT ON (site_id, visitor_id, experiment_id) site_id, visitor_id, experiment_id, arm_id, created_at,
          max(profile_id) OVER (PARTITION BY site_id, visitor_id, experiment_id)
          FROM exposures WHERE site_id = ? AND experiment_id IS NOT NULL AND arm_id IS NOT NULL AND holdout = 0
         ORDER BY site_id, visitor_id, experiment_id, created_at, arm_id
        ON CONFLICT (site_id, visitor_id, experiment_id) DO UPDATE SET arm_id = excluded.arm_id, created_at = excluded.created_at, profile_id = excluded.profile_id`,
      site,
    );
  }
}

const count = (table: string) => Number(query<{ n: number }>(dataDir, `SELECT count(*) AS n FROM ${table}`)[0]!.n);

beforeAll(async () => {
  dataDir = tempDir();
  site = createSite(dataDir);
  otherSite = createSite(dataDir, 'Other');
  const now = Date.now();
  execute(dataDir, "INSERT INTO pages (id, site_id, name, match_type, pattern, source, created_at, updated_at) VALUES ('pg_pricing', ?, 'Pricing', 'exact', '/pricing', 'manual', ?, ?)", site, now, now);
  execute(
    dataDir,
    `INSERT INTO content_blocks (id, site_id, name, kind, body, created_at, updated_at) VALUES
      ('cb_default', ?, 'Default', 'html', '<h1>Plans</h1>', ?, ?), ('cb_b', ?, 'Short hero', 'html', '<h1>Save</h1>', ?, ?)`,
    site, now, now, site, now, now,
  );
  execute(
    dataDir,
    `INSERT INTO zones (id, site_id, page_id, name, selector, default_content_id, created_at, updated_at) VALUES
      ('zone_hero', ?, 'pg_pricing', 'hero', '#hero', 'cb_default', ?, ?),
      ('zone_cta', ?, 'pg_pricing', 'cta', '#cta', 'cb_default', ?, ?),
      ('zone_side', ?, 'pg_pricing', 'side', '#side', 'cb_default', ?, ?),
      ('zone_sentinel', ?, 'pg_pricing', 'sentinel', '#sentinel', 'cb_default', ?, ?)`,
    site, now, now, site, now, now, site, now, now, site, now, now,
  );
  execute(
    dataDir,
    `INSERT INTO variants (id, site_id, zone_id, content_id, segment_id, name, status, created_by, created_at, updated_at) VALUES
      ('var_b', ?, 'zone_hero', 'cb_b', NULL, 'Short hero', 'approved', 'token:t', ?, ?),
      ('var_cta', ?, 'zone_cta', 'cb_b', NULL, 'Heavy CTA', 'approved', 'token:t', ?, ?),
      ('var_side', ?, 'zone_side', 'cb_b', NULL, 'Side', 'approved', 'token:t', ?, ?),
      ('var_off', ?, 'zone_hero', 'cb_b', NULL, 'Off', 'disabled', 'token:t', ?, ?),
      ('var_draft', ?, 'zone_hero', 'cb_b', NULL, 'Unapproved', 'draft', 'token:t', ?, ?),
      ('var_sentinel', ?, 'zone_sentinel', 'cb_b', NULL, 'Sentinel', 'approved', 'token:t', ?, ?)`,
    site, now, now, site, now, now, site, now, now, site, now, now, site, now, now, site, now, now,
  );
  svc = await startSvc({
    dataDir,
    args: ['--allow-private-destinations'],
    env: { SVC_EXPERIMENTS_INTERVAL_MS: '150', SVC_WEBHOOK_POLL_MS: '50' },
  });
  rx = await startReceiver();
  expect(cli(['webhooks', 'add', '--site', site, '--url', `${rx.url}/hook`, '--events', 'all', '--data', dataDir, '--allow-private-destinations', '--json']).code).toBe(0);
  c.write = await mcp.connect(mintToken(dataDir, site, ['--scope', 'write']));
  c.propose = await mcp.connect(mintToken(dataDir, site, ['--scope', 'write', '--propose-only']));
  c.readOnly = await mcp.connect(mintToken(dataDir, site, ['--scope', 'read', '--read-only']));
  c.writeRO = await mcp.connect(mintToken(dataDir, site, ['--scope', 'write', '--read-only']));
  c.other = await mcp.connect(mintToken(dataDir, otherSite, ['--scope', 'write']));
});

afterAll(async () => {
  await mcp.closeAll();
  await svc?.stop();
  await rx?.close();
  cleanup(dataDir);
});

describe('layout tests through MCP', () => {
  let exp: any;

  it('lists every experiments tool with read-only flags on reads and approve/publish on ship', async () => {
    const { tools } = await c.write.listTools();
    const names = tools.map((t) => t.name).filter((n) => n.startsWith('experiments_')).sort();
    expect(names).toEqual(
      [
        'experiments_assignment_for_visitor',
        'experiments_create',
        'experiments_end',
        'experiments_get',
        'experiments_guardrail_status',
        'experiments_list',
        'experiments_pause',
        'experiments_results',
        'experiments_resume',
        'experiments_ship',
        'experiments_start',
        'experiments_update',
      ].sort(),
    );
    for (const n of ['experiments_list', 'experiments_get', 'experiments_results', 'experiments_assignment_for_visitor', 'experiments_guardrail_status']) {
      expect(tools.find((t) => t.name === n)!.annotations?.readOnlyHint, n).toBe(true);
    }
  });

  it('refuses writes to read-only tokens and bad input, storing nothing', async () => {
    const args = {
      name: 'Hero test',
      zone_id: 'zone_hero',
      arms: [
        { label: 'Control', control: true, weight: 50 },
        { label: 'Short hero', variant_id: 'var_b', weight: 50 },
      ],
      primary_metric: 'conversion',
    };
    await refused(c.readOnly, 'experiments_create', args, 'insufficient_scope');
    await refused(c.writeRO, 'experiments_create', args, 'insufficient_scope');
    await refused(c.write, 'experiments_create', { ...args, arms: args.arms.map((a) => ({ ...a, control: true, variant_id: undefined })) }, 'validation_failed');
    await refused(c.write, 'experiments_create', { ...args, arms: [args.arms[0], { label: 'Off', variant_id: 'var_off', weight: 1 }] }, 'validation_failed');
    await refused(c.write, 'experiments_create', { ...args, arms: [args.arms[0], { label: 'CTA', variant_id: 'var_cta', weight: 1 }] }, 'validation_failed');
    await refused(c.write, 'experiments_create', { ...args, primary_metric: 'custom_event' }, 'validation_failed');
    await refused(c.write, 'experiments_create', { ...args, zone_id: undefined }, 'validation_failed');
    await refused(c.write, 'experiments_create', { ...args, scheduled_end: '2001-01-01T00:00:00Z' }, 'validation_failed');
    await refused(c.other, 'experiments_create', args, 'not_found');
    expect(count('experiments')).toBe(0);
    expect(count('experiment_arms')).toBe(0);

    exp = await callOk(c.write, 'experiments_create', args);
    expect(exp).toMatchObject({ status: 'draft', seed: exp.id, zone_id: 'zone_hero', primary_metric: 'conversion', stop_early: false, guardrail_metrics: ['lcp', 'inp', 'cls'] });
    expect(exp.id).toMatch(/^exp_/);
    expect(exp.arms.map((a: any) => [a.label, a.control, a.variant_id, a.weight])).toEqual([
      ['Control', true, null, 50],
      ['Short hero', false, 'var_b', 50],
    ]);
    expect(exp.created_by).toMatch(/^token:/);
    const renamed = await callOk(c.write, 'experiments_update', { id: exp.id, name: 'Pricing hero' });
    expect(renamed.name).toBe('Pricing hero');
    await refused(c.other, 'experiments_get', { id: exp.id }, 'not_found');
    // A draft variant may be planned into a test, but the test starts only once it is approved.
    const unapproved = await callOk(c.write, 'experiments_create', { ...args, name: 'Unapproved', arms: [args.arms[0], { label: 'Draft', variant_id: 'var_draft', weight: 1 }] });
    await refused(c.write, 'experiments_start', { id: unapproved.id }, 'conflict');
    expect((await callOk(c.readOnly, 'experiments_get', { id: unapproved.id })).status).toBe('draft');
    expect((await callOk(c.readOnly, 'experiments_list', { status: 'draft' })).experiments.map((e: any) => e.id)).toEqual([unapproved.id, exp.id]);
  });

  let control: string;
  let variant: string;
  const expected = new Map<string, { visitors: number; converters: number; revenue: number }>();

  it('starts, measures exposed visitors and their conversions after exposure, and checks the sample ratio', async () => {
    await refused(c.write, 'experiments_pause', { id: exp.id }, 'conflict');
    const started = await callOk(c.write, 'experiments_start', { id: exp.id });
    expect(started.status).toBe('running');
    expect(started.started_at).not.toBeNull();
    await refused(c.write, 'experiments_start', { id: exp.id }, 'conflict');
    control = exp.arms[0].id;
    variant = exp.arms[1].id;
    const arms = [
      { id: control, weight: 50 },
      { id: variant, weight: 50 },
    ];
    for (const a of arms) expected.set(a.id, { visitors: 0, converters: 0, revenue: 0 });
    const exposedAt = Date.now() - 60_000;
    const rows: Exposure[] = [];
    for (let i = 0; i < 40; i++) {
      const visitor = `hv-${i}`;
      await post(`${svc.url}/api/events`, { site_id: site, session_id: `hs-${i}`, visitor_id: visitor, type: 'pageview', url: 'https://shop.example/pricing' });
      const arm = assignArm(exp.seed, visitor, arms)!.id;
      // Two exposures per visitor (two page views); it counts once.
      rows.push({ visitor, zone: 'zone_hero', variant: arm === variant ? 'var_b' : null, experiment: exp.id, arm, url: 'https://shop.example/pricing', at: exposedAt });
      rows.push({ visitor, zone: 'zone_hero', variant: arm === variant ? 'var_b' : null, experiment: exp.id, arm, url: 'https://shop.example/pricing', at: exposedAt + 1000 });
      expected.get(arm)!.visitors++;
    }
    insertExposures(rows);
    for (let i = 0; i < 40; i += 3) {
      const arm = assignArm(exp.seed, `hv-${i}`, arms)!.id;
      const revenue = arm === variant ? 30 : 20;
      expect((await post(`${svc.url}/api/convert`, { site_id: site, session_id: `hs-${i}`, revenue })).status).toBe(201);
      expected.get(arm)!.converters++;
      expected.get(arm)!.revenue += revenue;
    }
    // A conversion before the visitor's first exposure does not count for the test.
    const profile = query<{ profile_id: string }>(dataDir, "SELECT profile_id FROM identities WHERE kind = 'visitor' AND value = 'hv-1'")[0]!.profile_id;
    execute(
      dataDir,
      "INSERT INTO conversions (id, site_id, session_id, profile_id, revenue, currency, line_items, created_at) VALUES ('cnv_before', ?, 'hs-1', ?, 999, 'USD', '[]', ?)",
      site,
      profile,
      exposedAt - 5000,
    );

    const r = await callOk(c.readOnly, 'experiments_results', { id: exp.id });
    expect(r.method).toContain('confidence sequence');
    expect(r.arms.map((a: any) => a.arm_id)).toEqual([control, variant]);
    for (const a of r.arms) {
      const e = expected.get(a.arm_id)!;
      expect(a.visitors, a.label).toBe(e.visitors);
      expect(a.converters, a.label).toBe(e.converters);
      expect(a.conversions, a.label).toBe(e.converters);
      expect(a.revenue, a.label).toBe(e.revenue);
      expect(a.conversion_rate).toBeCloseTo(e.converters / e.visitors, 12);
      expect(a.revenue_per_visitor).toBeCloseTo(e.revenue / e.visitors, 12);
    }
    const [rc, rv] = r.arms;
    expect(rc.verdict).toBe('control');
    expect(rv.difference).toBeCloseTo(rv.conversion_rate - rc.conversion_rate, 12);
    expect(rv.ci_low).toBeLessThan(rv.difference);
    expect(rv.ci_high).toBeGreaterThan(rv.difference);
    expect(rv.verdict).toBe('inconclusive');
    expect(r.winning_arm_id).toBeNull();
    const both8 = [...expected.values()].every((e) => e.visitors >= 8);
    expect(r.srm.checked).toBe(both8);
    expect(r.srm.mismatch).toBe(false);
  });

  it("answers a visitor's arm: the earlier exposure's, or the hash", async () => {
    const exposed = await callOk(c.readOnly, 'experiments_assignment_for_visitor', { id: exp.id, visitor_id: 'hv-3' });
    expect(exposed).toMatchObject({ source: 'exposure', from_earlier_exposure: true });
    expect(exposed.first_exposed_at).not.toBeNull();
    const fresh = await callOk(c.readOnly, 'experiments_assignment_for_visitor', { id: exp.id, visitor_id: 'never-seen' });
    const arms = exp.arms.map((a: any) => ({ id: a.id, weight: a.weight }));
    expect(fresh).toMatchObject({ source: 'hash', from_earlier_exposure: false, arm_id: assignArm(exp.seed, 'never-seen', arms)!.id, first_exposed_at: null });
  });

  it('lets a running test change weights but not its definition; visitors keep their arm', async () => {
    const before = await callOk(c.readOnly, 'experiments_assignment_for_visitor', { id: exp.id, visitor_id: 'hv-3' });
    const updated = await callOk(c.write, 'experiments_update', { id: exp.id, weights: [{ arm_id: control, weight: 0 }] });
    expect(updated.arms.map((a: any) => a.weight)).toEqual([0, 50]);
    const after = await callOk(c.readOnly, 'experiments_assignment_for_visitor', { id: exp.id, visitor_id: 'hv-3' });
    expect(after.arm_id).toBe(before.arm_id);
    expect((await callOk(c.readOnly, 'experiments_assignment_for_visitor', { id: exp.id, visitor_id: 'brand-new' })).arm_id).toBe(variant);
    await callOk(c.write, 'experiments_update', { id: exp.id, weights: [{ arm_id: control, weight: 50 }] });
    const err = await refused(c.write, 'experiments_update', { id: exp.id, name: 'Renamed' }, 'conflict');
    expect(err.details.fields).toEqual(['name']);
  });

  it('pauses, resumes, ends by hand with experiment.ended, and ships with experiment.shipped', async () => {
    await refused(c.readOnly, 'experiments_pause', { id: exp.id }, 'insufficient_scope');
    expect((await callOk(c.write, 'experiments_pause', { id: exp.id })).status).toBe('paused');
    await refused(c.write, 'experiments_pause', { id: exp.id }, 'conflict');
    await refused(c.write, 'experiments_ship', { id: exp.id, arm_id: variant }, 'conflict');
    expect((await callOk(c.write, 'experiments_resume', { id: exp.id })).status).toBe('running');
    const ended = await callOk(c.write, 'experiments_end', { id: exp.id });
    expect(ended).toMatchObject({ status: 'ended', end_reason: 'manual', winning_arm_id: null });
    expect(ended.ended_by).toMatch(/^token:/);
    await refused(c.write, 'experiments_end', { id: exp.id }, 'conflict');
    await refused(c.write, 'experiments_resume', { id: exp.id }, 'conflict');
    await refused(c.write, 'experiments_update', { id: exp.id, stop_early: true }, 'conflict');

    const [event] = await waitFor('experiment.ended', () => {
      const got = received('experiment.ended').filter((p) => p.experiment_id === exp.id);
      return got.length > 0 ? got : undefined;
    });
    expect(event).toMatchObject({ reason: 'manual', winning_arm_id: null, currency: 'USD' });
    expect(event.arms.map((a: any) => [a.arm_id, a.control, a.sessions, a.conversions])).toEqual(
      [control, variant].map((id) => [id, id === control, expected.get(id)!.visitors, expected.get(id)!.converters]),
    );
    expect(event.arms[0].lift).toBeNull();
    expect(typeof event.arms[1].probability_to_beat_control).toBe('number');

    // No winner was recorded: shipping needs the arm; propose-only and read-only tokens are refused.
    await refused(c.write, 'experiments_ship', { id: exp.id }, 'conflict');
    await refused(c.propose, 'experiments_ship', { id: exp.id, arm_id: variant }, 'insufficient_scope');
    await refused(c.readOnly, 'experiments_ship', { id: exp.id, arm_id: variant }, 'insufficient_scope');
    await refused(c.write, 'experiments_ship', { id: exp.id, arm_id: 'arm_nope' }, 'not_found');
    expect(query<{ status: string }>(dataDir, "SELECT status FROM variants WHERE id = 'var_b'")[0]!.status).toBe('approved');
    const shipped = await callOk(c.write, 'experiments_ship', { id: exp.id, arm_id: variant });
    expect(shipped).toMatchObject({ status: 'shipped', shipped_arm_id: variant });
    const v = query<{ status: string; published_by: string }>(dataDir, "SELECT status, published_by FROM variants WHERE id = 'var_b'")[0]!;
    expect(v.status).toBe('published');
    expect(v.published_by).toMatch(/^token:/);
    await refused(c.write, 'experiments_ship', { id: exp.id, arm_id: variant }, 'conflict');
    const [ship] = await waitFor('experiment.shipped', () => {
      const got = received('experiment.shipped').filter((p) => p.experiment_id === exp.id);
      return got.length > 0 ? got : undefined;
    });
    expect(ship).toMatchObject({ arm_id: variant, arm_label: 'Short hero', shipped_by: 'user' });
    expect((await callOk(c.readOnly, 'experiments_assignment_for_visitor', { id: exp.id, visitor_id: 'anyone' })).source).toBe('shipped');
  });

  it('ends a test on its scheduled end (worker)', async () => {
    const t = await callOk(c.write, 'experiments_create', {
      name: 'Side test',
      zone_id: 'zone_side',
      arms: [
        { label: 'Control', control: true, weight: 1 },
        { label: 'Side', variant_id: 'var_side', weight: 1 },
      ],
      primary_metric: 'custom_event',
      metric_event: 'signup_started',
      guardrail_metrics: [],
      scheduled_end: new Date(Date.now() + 1500).toISOString(),
    });
    await callOk(c.write, 'experiments_start', { id: t.id });
    const ended = await waitFor('scheduled end', async () => {
      const g = await callOk(c.readOnly, 'experiments_get', { id: t.id });
      return g.status === 'ended' ? g : undefined;
    });
    expect(ended).toMatchObject({ end_reason: 'scheduled_end', ended_by: 'worker' });
    const ev = await waitFor('experiment.ended (scheduled)', () => received('experiment.ended').find((p) => p.experiment_id === t.id));
    expect(ev.reason).toBe('scheduled_end');
    expect(ev.arms.map((a: any) => a.sessions)).toEqual([0, 0]);
  });

  it('ends a stop_early test on an extra-strong significant result (worker)', async () => {
    const t = await callOk(c.write, 'experiments_create', {
      name: 'Side test, early stop',
      zone_id: 'zone_side',
      arms: [
        { label: 'Control', control: true, weight: 1 },
        { label: 'Side', variant_id: 'var_side', weight: 1 },
      ],
      primary_metric: 'conversion',
      guardrail_metrics: [],
      stop_early: true,
    });
    await callOk(c.write, 'experiments_start', { id: t.id });
    const [control, variant] = [t.arms[0].id, t.arms[1].id];
    const day = 86_400_000;
    const now = Date.now();
    const rows: Exposure[] = [];
    const conversions: unknown[][] = [];
    // 1000 visitors per arm; 15% convert in the control, 30% in the variant (the sequential interval at
    // alpha 0.001 has a half-width of 0.078 there, so the 0.15 difference clears the early-stopping bar).
    for (let i = 0; i < 1000; i++) {
      for (const [arm, rate] of [
        [control, 150],
        [variant, 300],
      ] as const) {
        const visitor = `es-${arm}-${i}`;
        rows.push({ visitor, zone: 'zone_side', variant: arm === variant ? 'var_side' : null, experiment: t.id, arm, url: 'https://shop.example/pricing', at: now - 3.5 * day, profile: `prof-${visitor}` });
        if (i < rate) conversions.push([`cnv_es_${arm}_${i}`, site, `ess-${i}`, `prof-${visitor}`, 10, 'USD', '[]', now - day]);
      }
    }
    insertExposures(rows);
    for (let i = 0; i < conversions.length; i += 500) {
      const chunk = conversions.slice(i, i + 500);
      execute(
        dataDir,
        `INSERT INTO conversions (id, site_id, session_id, profile_id, revenue, currency, line_items, created_at) VALUES ${chunk.map(() => '(?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`,
        ...chunk.flat(),
      );
    }
    // Under 3 days of running the worker leaves it running, however strong the signal.
    await afterAFullPass();
    expect((await callOk(c.readOnly, 'experiments_get', { id: t.id })).status).toBe('running');
    execute(dataDir, 'UPDATE experiments SET started_at = ? WHERE id = ?', now - 4 * day, t.id);
    const ended = await waitFor('early stop', async () => {
      const g = await callOk(c.readOnly, 'experiments_get', { id: t.id });
      return g.status === 'ended' ? g : undefined;
    });
    expect(ended).toMatchObject({ end_reason: 'significance', ended_by: 'worker', winning_arm_id: variant });
    const ev = await waitFor('experiment.ended (significance)', () => received('experiment.ended').find((p) => p.experiment_id === t.id));
    expect(ev).toMatchObject({ reason: 'significance', winning_arm_id: variant });
    expect(ev.arms.map((a: any) => [a.sessions, a.conversions, a.conversion_rate])).toEqual([
      [1000, 150, 0.15],
      [1000, 300, 0.3],
    ]);
    expect(ev.arms[1].lift).toBeCloseTo(1, 12);
    expect(ev.arms[1].probability_to_beat_control).toBeGreaterThan(0.999);
  });
});

describe('Core Web Vitals guardrail', () => {
  it('refuses a malformed web_vitals event and stores nothing', async () => {
    const before = count('events');
    for (const bad of [{ lcp: -5 }, { lcp: 'fast' }, {}, { cls: 1000 }]) {
      const r = await post(`${svc.url}/api/events`, { site_id: site, session_id: 'bad-s', visitor_id: 'bad-v', type: 'web_vitals', ...bad });
      expect(r.status, JSON.stringify(bad)).toBe(400);
      expect(r.body.error.code).toBe('validation_failed');
    }
    expect(count('events')).toBe(before);
  });

  it('pauses a running test whose variant arm has a worse LCP p75 and emits experiment.guardrail_paused', async () => {
    const t = await callOk(c.write, 'experiments_create', {
      name: 'CTA test',
      zone_id: 'zone_cta',
      arms: [
        { label: 'Control', control: true, weight: 1 },
        { label: 'Heavy CTA', variant_id: 'var_cta', weight: 1 },
      ],
      primary_metric: 'conversion',
    });
    await callOk(c.write, 'experiments_start', { id: t.id });
    const [control, variant] = [t.arms[0].id, t.arms[1].id];
    const rows: Exposure[] = [];
    for (let i = 0; i < 100; i++) {
      rows.push({ visitor: `gc-${i}`, zone: 'zone_cta', variant: null, experiment: t.id, arm: control, url: 'https://shop.example/pricing?ref=a', at: Date.now() - 1000 });
      rows.push({ visitor: `gv-${i}`, zone: 'zone_cta', variant: 'var_cta', experiment: t.id, arm: variant, url: 'https://shop.example/pricing', at: Date.now() - 1000 });
    }
    insertExposures(rows);
    const vitals = (visitor: string, url: string, lcp: number) =>
      post(`${svc.url}/api/events`, { site_id: site, session_id: `s-${visitor}`, visitor_id: visitor, type: 'web_vitals', url, lcp, inp: 120, cls: 0.01 });
    // Vitals of another page say nothing about the test and are not counted.
    for (let i = 0; i < 5; i++) expect((await vitals(`gc-${i}`, 'https://shop.example/blog', 9000)).status).toBe(201);
    for (let i = 0; i < 99; i++) {
      expect((await vitals(`gc-${i}`, 'https://shop.example/pricing', 1900 + i * 2)).status).toBe(201);
      expect((await vitals(`gv-${i}`, 'https://shop.example/pricing', 2900 + i * 2)).status).toBe(201);
    }
    // 99 page views per arm: under the minimum sample, nothing happens.
    const under = await callOk(c.readOnly, 'experiments_guardrail_status', { id: t.id });
    const lcp = under.metrics.find((m: any) => m.metric === 'lcp');
    expect(lcp).toMatchObject({ poor_threshold: 4000, relative_margin: 0.1, absolute_margin: 100, min_sample: 100 });
    expect(lcp.arms.map((a: any) => [a.n, a.verdict])).toEqual([
      [99, null],
      [99, 'insufficient_data'],
    ]);
    await afterAFullPass();
    expect((await callOk(c.readOnly, 'experiments_get', { id: t.id })).status).toBe('running');

    expect((await vitals('gc-99', 'https://shop.example/pricing', 2098)).status).toBe(201);
    expect((await vitals('gv-99', 'https://shop.example/pricing', 3098)).status).toBe(201);
    const paused = await waitFor('guardrail pause', async () => {
      const g = await callOk(c.readOnly, 'experiments_get', { id: t.id });
      return g.status === 'paused' ? g : undefined;
    });
    expect(paused.pause_reason).toBe(`guardrail:lcp:${variant}`);
    // Nearest-rank p75 of 1900, 1902, ..., 2098: the 75th value, 1900 + 74·2 = 2048; of the variant 2900 + 148 = 3048.
    const ev = await waitFor('experiment.guardrail_paused', () => received('experiment.guardrail_paused').find((p) => p.experiment_id === t.id));
    expect(ev).toMatchObject({ metric: 'lcp', arm_id: variant, arm_p75: 3048, control_p75: 2048 });
    const status = await callOk(c.readOnly, 'experiments_guardrail_status', { id: t.id });
    const m = status.metrics.find((x: any) => x.metric === 'lcp');
    expect(m.arms.map((a: any) => [a.arm_id, a.p75, a.n, a.verdict])).toEqual([
      [control, 2048, 100, null],
      [variant, 3048, 100, 'worse_than_control'],
    ]);
    expect(status.metrics.find((x: any) => x.metric === 'inp').arms[1].verdict).toBe('ok');

    // Resuming after a guardrail pause restarts the guardrail's window: the old vitals no longer count.
    const resumed = await callOk(c.write, 'experiments_resume', { id: t.id });
    expect(resumed.status).toBe('running');
    const fresh = await callOk(c.readOnly, 'experiments_guardrail_status', { id: t.id });
    expect(fresh.metrics.find((x: any) => x.metric === 'lcp').arms.map((a: any) => a.n)).toEqual([0, 0]);
    await afterAFullPass();
    expect((await callOk(c.readOnly, 'experiments_get', { id: t.id })).status).toBe('running');
    expect(received('experiment.guardrail_paused').filter((p) => p.experiment_id === t.id)).toHaveLength(1);
  });
});

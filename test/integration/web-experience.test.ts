import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/client';
import { cleanup, createSite, post, startSvc, tempDir, type Svc } from '../helpers/svc.js';
import { startReceiver } from '../helpers/receiver.js';
import { execute, query } from '../helpers/db.js';
import { PG_BASE_URL } from '../helpers/backend.js';
import { call, callOk, errorOf, mcpClient, mintToken } from '../helpers/mcp-client.js';
import { validatePayload, type EventType } from '../../src/webhooks/catalogue.js';
import { assignArm } from '../../src/domain/experiments/assign.js';

let svc: Svc;
let dataDir: string;
let site: string;
let rx: Awaited<ReturnType<typeof startReceiver>>;
const tok = { admin: '', write: '', propose: '', readOnly: '', read: '', noDestroy: '', adminPropose: '' };
const c = {} as Record<keyof typeof tok, Client>;
const ids: Record<string, string> = {};

async function fails(client: Client, name: string, args: Record<string, unknown>, code: string): Promise<any> {
  const r = await call(client, name, args);
  expect(r.isError, `${name} should fail with ${code}`).toBe(true);
  expect(errorOf(r).code).toBe(code);
  return errorOf(r);
}

async function decide(params: Record<string, string>, method = 'GET', base = svc.url): Promise<{ status: number; body: any; headers: Headers }> {
  const u = new URL(`${base}/api/decide`);
  for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
  const res = await fetch(u, { method });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
}

/** Polls /api/decide until `until` holds (changes made by another process reach the cache through the store). */
async function decideUntil(params: Record<string, string>, until: (b: any) => boolean, base = svc.url): Promise<any> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const r = await decide(params, 'GET', base);
    expect(r.status).toBe(200);
    if (until(r.body)) return r.body;
    if (Date.now() > deadline) throw new Error(`decide never satisfied the condition: ${JSON.stringify(r.body)}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

const PRICING = 'https://shop.example/pricing?utm_source=news';
const hero = (b: any) => b.zones.find((z: any) => z.name === 'hero');

beforeAll(async () => {
  dataDir = tempDir();
  site = createSite(dataDir);
  tok.admin = mintToken(dataDir, site, ['--scope', 'admin']);
  tok.write = mintToken(dataDir, site, ['--scope', 'write']);
  tok.propose = mintToken(dataDir, site, ['--scope', 'write', '--propose-only']);
  tok.readOnly = mintToken(dataDir, site, ['--scope', 'write', '--read-only']);
  tok.read = mintToken(dataDir, site, ['--scope', 'read']);
  tok.noDestroy = mintToken(dataDir, site, ['--scope', 'admin', '--block-destructive']);
  tok.adminPropose = mintToken(dataDir, site, ['--scope', 'admin', '--propose-only']);
  svc = await startSvc({ dataDir, args: ['--allow-private-destinations'], env: { SVC_WEBHOOK_POLL_MS: '50' } });
  for (const k of Object.keys(tok) as (keyof typeof tok)[]) c[k] = await mcpClient(svc.url, tok[k]);
  rx = await startReceiver();
  await callOk(c.admin, 'webhooks_create', { url: `${rx.url}/hook`, events: ['all'], secret: 'a-long-enough-secret' });
});

afterAll(async () => {
  for (const client of Object.values(c)) await client?.close().catch(() => undefined);
  await svc?.stop();
  await rx?.close();
  cleanup(dataDir);
});

describe('content, pages, zones', () => {
  it('stores sanitized HTML and compact JSON, and refuses oversize bodies', async () => {
    const html = await callOk(c.write, 'content_create', {
      name: 'Default hero',
      kind: 'html',
      body: '<h1 onclick="x()">Welcome</h1><script>steal()</script><a href="javascript:alert(1)">x</a>',
    });
    expect(html).toMatchObject({ kind: 'html', body: '<h1>Welcome</h1><a>x</a>', sanitized: true });
    ids.cDefault = html.id;
    ids.cA = (await callOk(c.write, 'content_create', { name: 'Hero A', kind: 'html', body: '<h1>Spring sale</h1>' })).id;
    ids.cB = (await callOk(c.write, 'content_create', { name: 'Hero B', kind: 'html', body: '<h1>VIP offer</h1>' })).id;
    const json = await callOk(c.write, 'content_create', { name: 'Config', kind: 'json', body: '{ "cta": "Buy" }' });
    expect(json).toMatchObject({ body: '{"cta":"Buy"}', sanitized: false });
    await fails(c.write, 'content_create', { name: 'Big', kind: 'html', body: 'a'.repeat(65537) }, 'validation_failed');
    await fails(c.write, 'content_create', { name: 'Bad', kind: 'json', body: '{nope' }, 'validation_failed');
    expect(query(dataDir, 'SELECT count(*) AS n FROM content_blocks')[0]).toMatchObject({ n: 4 });
  });

  it('creates pages with checked patterns and zones on them', async () => {
    const page = await callOk(c.write, 'pages_create', { name: 'Pricing', match_type: 'exact', pattern: '/pricing' });
    ids.page = page.id;
    await fails(c.write, 'pages_create', { name: 'Dup', match_type: 'exact', pattern: '/pricing' }, 'conflict');
    await fails(c.write, 'pages_create', { name: 'Bad', match_type: 'prefix', pattern: 'pricing' }, 'validation_failed');
    ids.products = (await callOk(c.write, 'pages_create', { name: 'Products', match_type: 'glob', pattern: '/products/*' })).id;
    const zone = await callOk(c.write, 'zones_create', { page_id: ids.page, name: 'hero', selector: '#hero', default_content_id: ids.cDefault });
    ids.zone = zone.id;
    expect(zone).toMatchObject({ page_id: ids.page, selector: '#hero', default_content_id: ids.cDefault });
    await fails(c.write, 'zones_create', { page_id: ids.page, name: 'hero', selector: '#x' }, 'conflict');
    const got = await callOk(c.read, 'pages_get', { id: ids.page });
    expect(got.zones.map((z: any) => z.id)).toEqual([ids.zone]);
  });

  it('refuses writes to read-only tokens and the read scope, storing nothing', async () => {
    const e = await fails(c.readOnly, 'pages_create', { name: 'X', match_type: 'exact', pattern: '/x' }, 'insufficient_scope');
    expect(e.details.reason).toBe('read_only');
    const e2 = await fails(c.read, 'content_create', { name: 'X', kind: 'html', body: 'x' }, 'insufficient_scope');
    expect(e2.details.reason).toBe('scope');
    expect(query(dataDir, "SELECT count(*) AS n FROM pages WHERE pattern = '/x'")[0]).toMatchObject({ n: 0 });
    // Reads work for both.
    expect((await callOk(c.readOnly, 'pages_list')).pages).toHaveLength(2);
  });
});

describe('variants and placements', () => {
  it('moves a draft through approve and publish; propose-only may draft but not approve or publish', async () => {
    const draft = await callOk(c.propose, 'variants_create_draft', { zone_id: ids.zone, content_id: ids.cA, name: 'Spring' });
    ids.vA = draft.id;
    expect(draft).toMatchObject({ status: 'draft', created_by: expect.stringMatching(/^token:/) });
    expect((await callOk(c.propose, 'variants_update_draft', { id: ids.vA, name: 'Spring sale' })).name).toBe('Spring sale');
    const refused = await fails(c.propose, 'variants_approve', { id: ids.vA }, 'insufficient_scope');
    expect(refused.details.reason).toBe('propose_only');
    expect((await fails(c.propose, 'variants_publish', { id: ids.vA }, 'insufficient_scope')).details.reason).toBe('propose_only');
    await fails(c.write, 'variants_publish', { id: ids.vA }, 'conflict'); // a draft is approved first
    const approved = await callOk(c.write, 'variants_approve', { id: ids.vA });
    expect(approved).toMatchObject({ status: 'approved', approved_by: `token:${approved.approved_by.slice(6)}` });
    await fails(c.write, 'variants_update_draft', { id: ids.vA, name: 'late edit' }, 'conflict');
    await fails(c.write, 'variants_approve', { id: ids.vA }, 'conflict');
    expect(await callOk(c.write, 'variants_publish', { id: ids.vA })).toMatchObject({ status: 'published', published_at: expect.any(String) });

    ids.vB = (await callOk(c.write, 'variants_create_draft', { zone_id: ids.zone, content_id: ids.cB, name: 'VIP' })).id;
    await callOk(c.write, 'variants_approve', { id: ids.vB });
    await callOk(c.write, 'variants_publish', { id: ids.vB });
  });

  it('places published variants only, by segment and priority', async () => {
    await fails(c.write, 'placements_create', { variant_id: ids.vA, segment_id: 'seg_missing' }, 'validation_failed');
    const everyone = await callOk(c.write, 'placements_create', { variant_id: ids.vA, segment_id: null, priority: 1 });
    expect(everyone).toMatchObject({ zone_id: ids.zone, segment_id: null, priority: 1, enabled: true });
    const seg = await callOk(c.write, 'segments_create', { name: 'Engaged', rule: { score: { agg: 'latest', op: 'gte', value: 50 } } });
    ids.seg = seg.id;
    ids.plcVip = (await callOk(c.write, 'placements_create', { variant_id: ids.vB, segment_id: seg.id, priority: 5 })).id;
    const draft = await callOk(c.write, 'variants_create_draft', { zone_id: ids.zone, content_id: ids.cB, name: 'not yet' });
    await fails(c.write, 'placements_create', { variant_id: draft.id }, 'conflict');
    expect((await callOk(c.read, 'placements_list', { zone_id: ids.zone })).placements.map((p: any) => p.priority)).toEqual([5, 1]);
  });

  it('previews and explains without recording exposures', async () => {
    await post(`${svc.url}/api/events`, { site_id: site, session_id: 's-vip', visitor_id: 'vip-1', type: 'pageview' });
    await post(`${svc.url}/api/score`, { site_id: site, session_id: 's-vip', score: 80 });
    const anon = await callOk(c.read, 'placements_preview_for_visitor', { visitor_id: 'anon-1', url: PRICING });
    expect(anon.pages.map((p: any) => p.id)).toEqual([ids.page]);
    expect(anon.zones).toEqual([
      expect.objectContaining({ zone_id: ids.zone, reason: 'placement', variant_id: ids.vA, content: expect.objectContaining({ body: '<h1>Spring sale</h1>' }) }),
    ]);
    const vip = await callOk(c.read, 'placements_explain_decision', { visitor_id: 'vip-1', url: PRICING });
    expect(vip.visitor).toMatchObject({ visitor_id: 'vip-1', profile_id: expect.any(String), segment_ids: [ids.seg], holdout: false });
    const z = vip.zones[0];
    expect(z).toMatchObject({ reason: 'placement', variant_id: ids.vB, placement_id: ids.plcVip });
    expect(z.chain.map((s: any) => `${s.step}:${s.outcome}`)).toEqual(['override:none', 'holdout:none', 'shipped:none', 'experiment:none', 'placement:applied']);
    // A visitor outside the segment is told which placement wanted which segment.
    const anonWhy = await callOk(c.read, 'placements_explain_decision', { visitor_id: 'anon-1', url: PRICING });
    expect(anonWhy.zones[0].chain.filter((s: any) => s.step === 'placement')).toEqual([
      { step: 'placement', outcome: 'not_matched', detail: `placement ${ids.plcVip} (priority 5) is for segment ${ids.seg}, which the visitor is not in` },
      expect.objectContaining({ step: 'placement', outcome: 'applied' }),
    ]);
    // The same by profile reference.
    const byProfile = await callOk(c.read, 'placements_explain_decision', { profile: { by: 'profile_id', value: vip.visitor.profile_id }, url: PRICING });
    expect(byProfile.zones[0].variant_id).toBe(ids.vB);
    await fails(c.read, 'placements_preview_for_visitor', { url: PRICING }, 'validation_failed');
    await fails(c.read, 'placements_preview_for_visitor', { visitor_id: 'x', url: 'pricing' }, 'validation_failed');
    expect(query(dataDir, 'SELECT count(*) AS n FROM exposures')[0]).toMatchObject({ n: 0 });
  });
});

describe('GET /api/decide', () => {
  it('answers the browser tag and records one exposure per zone', async () => {
    const r = await decide({ site_id: site, visitor_id: 'vip-1', url: PRICING });
    expect(r.status).toBe(200);
    expect(r.headers.get('access-control-allow-origin')).toBe('*');
    expect(r.body).toEqual({
      site_id: site,
      visitor_id: 'vip-1',
      holdout: false,
      zones: [
        { zone_id: ids.zone, name: 'hero', selector: '#hero', content: { kind: 'html', body: '<h1>VIP offer</h1>' }, variant_id: ids.vB, experiment_id: null, arm_id: null, reason: 'placement' },
      ],
    });
    const rows = query<any>(dataDir, 'SELECT * FROM exposures');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ site_id: site, visitor_id: 'vip-1', zone_id: ids.zone, variant_id: ids.vB, experiment_id: null, arm_id: null, url: PRICING });
    expect(Number(rows[0].holdout)).toBe(0);
    expect(rows[0].profile_id).toMatch(/^\w+/);
    // A URL no page matches: no zones, nothing recorded.
    expect((await decide({ site_id: site, visitor_id: 'vip-1', url: '/nowhere' })).body.zones).toEqual([]);
    expect(query(dataDir, 'SELECT count(*) AS n FROM exposures')[0]).toMatchObject({ n: 1 });
  });

  it('refuses bad requests with clear 4xx codes and stores nothing', async () => {
    const unknown = await decide({ site_id: 'site_nope', visitor_id: 'v', url: '/pricing' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.code).toBe('unknown_site');
    const missing = await decide({ site_id: site, url: '/pricing' });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatchObject({ code: 'validation_failed', details: { field: 'visitor_id' } });
    const badUrl = await decide({ site_id: site, visitor_id: 'v', url: 'javascript:alert(1)' });
    expect(badUrl.status).toBe(400);
    expect(badUrl.body.error.details.field).toBe('url');
    const wrongMethod = await decide({ site_id: site, visitor_id: 'v', url: '/pricing' }, 'POST');
    expect(wrongMethod.status).toBe(405);
    const twice = await fetch(`${svc.url}/api/decide?site_id=${site}&site_id=${site}&visitor_id=v&url=/pricing`);
    expect(twice.status).toBe(400);
    expect(query(dataDir, 'SELECT count(*) AS n FROM exposures')[0]).toMatchObject({ n: 1 });
  });

  it('applies running experiments (sticky arms), then shipped ones, seen through the cache after another process changes them', async () => {
    const now = Date.now();
    execute(
      dataDir,
      "INSERT INTO experiments (id, site_id, name, zone_id, page_id, status, seed, primary_metric, created_by, created_at, updated_at, started_at) VALUES (?, ?, 'Hero test', ?, ?, 'running', 'seed-1', 'conversion', 'test', ?, ?, ?)",
      'exp_hero',
      site,
      ids.zone,
      ids.page,
      now,
      now,
      now,
    );
    execute(dataDir, "INSERT INTO experiment_arms (id, site_id, experiment_id, label, is_control, variant_id, weight, position) VALUES ('arm_ctl', ?, 'exp_hero', 'Control', 1, NULL, 1, 0)", site);
    execute(dataDir, "INSERT INTO experiment_arms (id, site_id, experiment_id, label, is_control, variant_id, weight, position) VALUES ('arm_a', ?, 'exp_hero', 'Spring', 0, ?, 1, 1)", site, ids.vA);
    const arms = [
      { id: 'arm_ctl', weight: 1 },
      { id: 'arm_a', weight: 1 },
    ];
    // A visitor the hash puts in arm_a, and one it puts in the control.
    let inA = '';
    let inCtl = '';
    for (let i = 0; (!inA || !inCtl) && i < 1000; i++) {
      const id = `exp-v${i}`;
      if (assignArm('seed-1', id, arms)!.id === 'arm_a') inA ||= id;
      else inCtl ||= id;
    }
    const a = await decideUntil({ site_id: site, visitor_id: inA, url: PRICING }, (b) => hero(b).reason === 'experiment_arm');
    expect(hero(a)).toMatchObject({ experiment_id: 'exp_hero', arm_id: 'arm_a', variant_id: ids.vA, content: { kind: 'html', body: '<h1>Spring sale</h1>' } });
    const ctl = (await decide({ site_id: site, visitor_id: inCtl, url: PRICING })).body;
    expect(hero(ctl)).toMatchObject({ experiment_id: 'exp_hero', arm_id: 'arm_ctl', variant_id: null, content: { body: '<h1>Welcome</h1><a>x</a>' } });
    expect(query(dataDir, 'SELECT arm_id FROM exposures WHERE visitor_id = ?', inA)).toEqual([{ arm_id: 'arm_a' }]);
    // All the weight moves to the control: the visitor already in arm_a keeps it.
    execute(dataDir, "UPDATE experiment_arms SET weight = 0 WHERE id = 'arm_a'");
    const fresh = `fresh-${Date.now()}`;
    await decideUntil({ site_id: site, visitor_id: fresh, url: PRICING }, (b) => hero(b).arm_id === 'arm_ctl');
    expect(hero((await decide({ site_id: site, visitor_id: inA, url: PRICING })).body).arm_id).toBe('arm_a');
    // Shipped: the shipped arm for everyone.
    execute(dataDir, "UPDATE experiments SET status = 'shipped', shipped_arm_id = 'arm_a', shipped_at = ? WHERE id = 'exp_hero'", Date.now());
    const shipped = await decideUntil({ site_id: site, visitor_id: inCtl, url: PRICING }, (b) => hero(b).reason === 'shipped_experiment');
    expect(hero(shipped)).toMatchObject({ arm_id: 'arm_a', variant_id: ids.vA });
    execute(dataDir, "UPDATE experiments SET status = 'ended', shipped_arm_id = NULL WHERE id = 'exp_hero'");
    await decideUntil({ site_id: site, visitor_id: inCtl, url: PRICING }, (b) => hero(b).reason === 'placement');
  });
});

describe('overrides', () => {
  it('publishes, forces and lifts overrides with who and when; admin only for publish and force', async () => {
    await fails(c.write, 'overrides_publish', { kind: 'pin_zone', zone_id: ids.zone, variant_id: ids.vB }, 'insufficient_scope');
    // Publishing an override is destructive and publishes: refused to admin tokens that block destructive tools or only propose.
    expect((await fails(c.noDestroy, 'overrides_publish', { kind: 'pin_zone', zone_id: ids.zone, variant_id: ids.vB }, 'insufficient_scope')).details.reason).toBe('block_destructive');
    expect((await fails(c.noDestroy, 'overrides_force_arm', { experiment_id: 'exp_hero', arm_id: 'arm_ctl', visitor_id: 'qa-1' }, 'insufficient_scope')).details.reason).toBe('block_destructive');
    expect((await fails(c.adminPropose, 'overrides_publish', { kind: 'pin_zone', zone_id: ids.zone, variant_id: ids.vB }, 'insufficient_scope')).details.reason).toBe('propose_only');
    expect(query(dataDir, 'SELECT count(*) AS n FROM overrides')[0]).toMatchObject({ n: 0 });
    const pin = await callOk(c.admin, 'overrides_publish', { kind: 'pin_zone', zone_id: ids.zone, variant_id: ids.vB, note: 'launch day' });
    expect(pin).toMatchObject({ kind: 'pin_zone', active: true, set_by: expect.stringMatching(/^token:/), set_at: expect.any(String), lifted_by: null });
    await fails(c.admin, 'overrides_publish', { kind: 'pin_zone', zone_id: ids.zone, variant_id: ids.vA }, 'conflict');
    await fails(c.admin, 'overrides_publish', { kind: 'pin_zone', zone_id: ids.zone }, 'validation_failed');
    expect(hero((await decide({ site_id: site, visitor_id: 'anon-2', url: PRICING })).body)).toMatchObject({ reason: 'override_pin_zone', variant_id: ids.vB });

    // Force a QA visitor into the control of a paused test.
    execute(dataDir, "UPDATE experiments SET status = 'paused' WHERE id = 'exp_hero'");
    await fails(c.write, 'overrides_force_arm', { experiment_id: 'exp_hero', arm_id: 'arm_ctl', visitor_id: 'qa-1' }, 'insufficient_scope');
    await fails(c.admin, 'overrides_force_arm', { experiment_id: 'exp_hero', arm_id: 'arm_nope', visitor_id: 'qa-1' }, 'validation_failed');
    const force = await callOk(c.admin, 'overrides_force_arm', { experiment_id: 'exp_hero', arm_id: 'arm_ctl', visitor_id: 'qa-1' });
    const qa = await callOk(c.read, 'placements_explain_decision', { visitor_id: 'qa-1', url: PRICING });
    expect(qa.zones[0]).toMatchObject({ reason: 'override_force_arm', override_id: force.id, arm_id: 'arm_ctl', variant_id: null });
    expect(qa.zones[0].chain[0].detail).toContain('force_arm');

    const lifted = await callOk(c.write, 'overrides_lift', { id: pin.id });
    expect(lifted).toMatchObject({ active: false, lifted_by: expect.stringMatching(/^token:/), lifted_at: expect.any(String) });
    await fails(c.write, 'overrides_lift', { id: pin.id }, 'conflict');
    expect(hero((await decide({ site_id: site, visitor_id: 'anon-2', url: PRICING })).body)).toMatchObject({ reason: 'placement', variant_id: ids.vA });

    const off = await callOk(c.admin, 'overrides_publish', { kind: 'personalization_off', page_id: ids.page });
    expect(hero((await decide({ site_id: site, visitor_id: 'vip-1', url: PRICING })).body)).toMatchObject({ reason: 'override_personalization_off', variant_id: null });
    await callOk(c.write, 'overrides_lift', { id: off.id });
    await callOk(c.write, 'overrides_lift', { id: force.id });

    const all = (await callOk(c.read, 'overrides_list', { active_only: false })).overrides;
    expect(all).toHaveLength(3);
    expect(all.every((o: any) => o.set_by.startsWith('token:') && o.lifted_by.startsWith('token:'))).toBe(true);
    expect((await callOk(c.read, 'overrides_list', {})).overrides).toEqual([]);
  });
});

describe('cache across instances', () => {
  it.runIf(PG_BASE_URL !== undefined)('on PostgreSQL, a change made through one instance reaches the other instance\u2019s cache by NOTIFY (the time fallback is set out of reach)', async () => {
    // With a one-hour fallback only the svc_web notification can drop the second instance's snapshot.
    const second = await startSvc({ dataDir, env: { SVC_DECIDE_CACHE_FALLBACK_MS: '3600000' } });
    try {
      const params = { site_id: site, visitor_id: 'anon-9', url: PRICING };
      const q = `/api/decide?${new URLSearchParams(params).toString()}`;
      const warm = await (await fetch(`${second.url}${q}`)).json();
      expect(hero(warm).selector).toBe('#hero');
      await callOk(c.write, 'zones_update', { id: ids.zone, selector: '#hero-2' });
      await decideUntil(params, (b) => hero(b).selector === '#hero-2', second.url);
      await callOk(c.write, 'zones_update', { id: ids.zone, selector: '#hero' });
      await decideUntil(params, (b) => hero(b).selector === '#hero', second.url);
    } finally {
      await second.stop();
    }
  });
});

describe('content in use', () => {
  it('lists usage and refuses to delete used content unless forced', async () => {
    const usage = await callOk(c.read, 'content_usage', { id: ids.cDefault });
    expect(usage.zones.map((z: any) => z.zone_id)).toEqual([ids.zone]);
    // Deleting content is an admin tool (SPEC), and destructive: refused to write tokens and to admin tokens blocking destructive tools.
    expect((await fails(c.write, 'content_delete', { id: ids.cDefault, force: true }, 'insufficient_scope')).details).toMatchObject({ reason: 'scope', missing: 'scope:admin' });
    expect((await fails(c.noDestroy, 'content_delete', { id: ids.cDefault, force: true }, 'insufficient_scope')).details.reason).toBe('block_destructive');
    expect((await callOk(c.read, 'zones_get', { id: ids.zone })).default_content_id).toBe(ids.cDefault);
    const refused = await fails(c.admin, 'content_delete', { id: ids.cDefault }, 'conflict');
    expect(refused.details.zones).toEqual([ids.zone]);
    const unused = await callOk(c.write, 'content_create', { name: 'Tmp', kind: 'html', body: '<p>tmp</p>' });
    await callOk(c.admin, 'content_delete', { id: unused.id });
    const forced = await callOk(c.admin, 'content_delete', { id: ids.cDefault, force: true });
    expect(forced.was_used_by.zones).toHaveLength(1);
    expect((await callOk(c.read, 'zones_get', { id: ids.zone })).default_content_id).toBeNull();
    // A variant that is an experiment arm is never deleted with its content.
    await fails(c.admin, 'content_delete', { id: ids.cA, force: true }, 'conflict');
  });
});

describe('variant watchdog', () => {
  const render = (variant: string | undefined, okFlag: boolean, i: number) =>
    post(`${svc.url}/api/events`, { site_id: site, session_id: `wd-${i}`, visitor_id: `wd-v${i}`, type: 'variant_render', variant_id: variant, ok: okFlag, ...(okFlag ? {} : { error: 'selector #hero not found' }) });

  it('refuses malformed renders and unknown variants, storing nothing', async () => {
    const before = Number(query<any>(dataDir, 'SELECT count(*) AS n FROM events')[0].n);
    const bad = await post(`${svc.url}/api/events`, { site_id: site, session_id: 'wd', type: 'variant_render', variant_id: ids.vB, ok: 'yes' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.field).toBe('ok');
    const unknown = await post(`${svc.url}/api/events`, { site_id: site, session_id: 'wd', type: 'variant_render', variant_id: 'var_nope', ok: true });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.details.field).toBe('variant_id');
    expect(Number(query<any>(dataDir, 'SELECT count(*) AS n FROM events')[0].n)).toBe(before);
    expect(query(dataDir, 'SELECT count(*) AS n FROM variant_renders')[0]).toMatchObject({ n: 0 });
  });

  it('disables a variant at 20% failures over 50 renders, stops serving it and emits variant.watchdog_disabled', async () => {
    // 10 failures first, then ok renders: 49 renders (20.4%) is below the minimum, the 50th (exactly 20%) trips.
    for (let i = 0; i < 10; i++) expect((await render(ids.vB, false, i)).status).toBe(201);
    for (let i = 10; i < 49; i++) await render(ids.vB, true, i);
    const mid = await callOk(c.read, 'variants_render_stats', { id: ids.vB });
    expect(mid).toMatchObject({ status: 'published', renders: 49, failures: 10, would_trip: false, min_renders: 50, failure_rate_threshold: 0.2, window_minutes: 15 });
    expect(mid.recent_errors[0].error).toBe('selector #hero not found');
    expect(hero((await decide({ site_id: site, visitor_id: 'vip-1', url: PRICING })).body).variant_id).toBe(ids.vB);
    await render(ids.vB, true, 49);
    const v = await callOk(c.read, 'variants_get', { id: ids.vB });
    expect(v).toMatchObject({ status: 'disabled', disabled_reason: 'watchdog: 10 of 50 renders failed in the last 15 minutes' });
    // Served no more, at once: the VIP falls back to the everyone placement.
    expect(hero((await decide({ site_id: site, visitor_id: 'vip-1', url: PRICING })).body)).toMatchObject({ reason: 'placement', variant_id: ids.vA });
    const got = await rx.waitFor(1, 20_000, (r) => JSON.parse(r.body).event === 'variant.watchdog_disabled');
    const payload = JSON.parse(got[0]!.body);
    expect(validatePayload('variant.watchdog_disabled', payload).success).toBe(true);
    expect(payload).toMatchObject({ site_id: site, variant_id: ids.vB, zone_id: ids.zone, experiment_id: null, render_attempts: 50, render_failures: 10, window_minutes: 15 });
    // More failures do not emit again.
    await render(ids.vB, false, 50);
    expect((await callOk(c.read, 'variants_render_stats', { id: ids.vB })).status).toBe('disabled');
    // Re-publishing starts a fresh window.
    await callOk(c.write, 'variants_publish', { id: ids.vB });
    expect(await callOk(c.read, 'variants_render_stats', { id: ids.vB })).toMatchObject({ renders: 0, failures: 0 });
    // Exactly one event was ever written (the outbox row is committed with the render that tripped the watchdog).
    expect(Number(query<any>(dataDir, "SELECT count(*) AS n FROM outbox WHERE event_type = 'variant.watchdog_disabled'")[0].n)).toBe(1);
  });

  it('every event the receiver got validates against the catalogue', () => {
    expect(rx.received.length).toBeGreaterThan(0);
    for (const r of rx.received) {
      const p = JSON.parse(r.body);
      expect(validatePayload(p.event as EventType, p).success, p.event).toBe(true);
    }
  });
});

describe('deleting', () => {
  it('archives, then deletes zones and pages in order; tools list the web areas', async () => {
    await fails(c.write, 'pages_delete', { id: ids.page }, 'conflict');
    await callOk(c.write, 'variants_disable', { id: ids.vB, reason: 'campaign over' });
    expect((await callOk(c.read, 'variants_get', { id: ids.vB })).disabled_reason).toBe('campaign over');
    await callOk(c.write, 'variants_archive', { id: ids.vB });
    await fails(c.write, 'variants_publish', { id: ids.vB }, 'conflict');
    await callOk(c.write, 'pages_delete', { id: ids.products });
    expect((await callOk(c.read, 'pages_list')).pages.map((p: any) => p.id)).toEqual([ids.page]);
    const tools = (await c.read.listTools()).tools;
    const byName = new Map(tools.map((t) => [t.name, t]));
    for (const n of ['pages_list', 'zones_get', 'content_usage', 'variants_render_stats', 'placements_preview_for_visitor', 'placements_explain_decision', 'overrides_list']) {
      expect(byName.get(n)?.annotations?.readOnlyHint, n).toBe(true);
    }
    for (const n of ['content_delete', 'overrides_publish', 'overrides_force_arm', 'pages_delete', 'zones_delete', 'placements_delete']) {
      expect(byName.get(n)?.annotations?.destructiveHint, n).toBe(true);
    }
  });
});

describe('the other read and change tools of pages, zones, content, variants and placements', () => {
  it('lists, reads, changes and removes, and /api/decide follows every change', async () => {
    const page = await callOk(c.write, 'pages_create', { name: 'Help', match_type: 'exact', pattern: '/help' });
    const moved = await callOk(c.write, 'pages_update', { id: page.id, match_type: 'glob', pattern: '/help/**' });
    expect(moved).toMatchObject({ id: page.id, name: 'Help', match_type: 'glob', pattern: '/help/**' });
    await fails(c.write, 'pages_update', { id: page.id, pattern: 'help' }, 'validation_failed');
    await fails(c.write, 'pages_update', { id: 'page_nope', name: 'x' }, 'not_found');

    const dflt = await callOk(c.write, 'content_create', { name: 'Help default', kind: 'html', body: '<p>Ask us</p>' });
    const tip = await callOk(c.write, 'content_create', { name: 'Help tip', kind: 'html', body: '<p>Tip</p>' });
    const cfg = await callOk(c.write, 'content_create', { name: 'Help config', kind: 'json', body: '{"a":1}' });
    expect((await callOk(c.read, 'content_list', { kind: 'json' })).content.map((x: any) => x.id)).toContain(cfg.id);
    expect((await callOk(c.read, 'content_list', { kind: 'json' })).content.every((x: any) => x.kind === 'json')).toBe(true);
    expect(await callOk(c.read, 'content_get', { id: tip.id })).toMatchObject({ id: tip.id, name: 'Help tip', kind: 'html', body: '<p>Tip</p>', bytes: 10 });
    await fails(c.read, 'content_get', { id: 'cnt_nope' }, 'not_found');

    const zone = await callOk(c.write, 'zones_create', { page_id: page.id, name: 'aside', selector: 'aside', default_content_id: dflt.id });
    expect((await callOk(c.read, 'zones_list', { page_id: page.id })).zones.map((z: any) => [z.id, z.name, z.selector])).toEqual([[zone.id, 'aside', 'aside']]);
    expect((await callOk(c.write, 'zones_update', { id: zone.id, selector: 'aside.help' })).selector).toBe('aside.help');
    const url = 'https://shop.example/help/billing/refunds';
    const aside = (b: any) => b.zones.find((z: any) => z.zone_id === zone.id);
    const first = await decideUntil({ site_id: site, visitor_id: 'help-1', url }, (b) => aside(b) !== undefined);
    expect(aside(first)).toMatchObject({ selector: 'aside.help', reason: 'default', content: { body: '<p>Ask us</p>' } });

    const v = await callOk(c.write, 'variants_create_draft', { zone_id: zone.id, content_id: tip.id, name: 'Tip' });
    await callOk(c.write, 'variants_approve', { id: v.id });
    await callOk(c.write, 'variants_publish', { id: v.id });
    expect((await callOk(c.read, 'variants_list', { zone_id: zone.id })).variants.map((x: any) => [x.id, x.status])).toEqual([[v.id, 'published']]);
    expect((await callOk(c.read, 'variants_list', { zone_id: zone.id, status: 'draft' })).variants).toEqual([]);
    const plc = await callOk(c.write, 'placements_create', { variant_id: v.id, priority: 2 });
    expect(aside((await decide({ site_id: site, visitor_id: 'help-1', url })).body)).toMatchObject({ reason: 'placement', variant_id: v.id });

    // A content change reaches what visitors see, sanitized.
    const changed = await callOk(c.write, 'content_update', { id: tip.id, body: '<p onmouseover="x()">Better tip</p>' });
    expect(changed).toMatchObject({ body: '<p>Better tip</p>', sanitized: true });
    expect(aside((await decide({ site_id: site, visitor_id: 'help-1', url })).body).content.body).toBe('<p>Better tip</p>');
    // A propose-only token cannot change what an approved variant or a zone default shows; it edits its drafts' content.
    const sneaky = await fails(c.propose, 'content_update', { id: tip.id, body: '<p>Unapproved words</p>' }, 'insufficient_scope');
    expect(sneaky.details).toMatchObject({ reason: 'propose_only', variants: [v.id], zones: [] });
    expect((await fails(c.propose, 'content_update', { id: dflt.id, body: '<p>x</p>' }, 'insufficient_scope')).details.zones).toEqual([zone.id]);
    expect((await callOk(c.read, 'content_get', { id: tip.id })).body).toBe('<p>Better tip</p>');
    expect((await callOk(c.propose, 'content_update', { id: tip.id, name: 'Help tip, renamed' })).name).toBe('Help tip, renamed');
    const proposal = await callOk(c.propose, 'content_create', { name: 'Proposal', kind: 'html', body: '<p>Draft words</p>' });
    await callOk(c.propose, 'variants_create_draft', { zone_id: zone.id, content_id: proposal.id, name: 'Proposal' });
    expect((await callOk(c.propose, 'content_update', { id: proposal.id, body: '<p>Better draft words</p>' })).body).toBe('<p>Better draft words</p>');

    const off = await callOk(c.write, 'placements_update', { id: plc.id, priority: 7, enabled: false });
    expect(off).toMatchObject({ id: plc.id, priority: 7, enabled: false });
    expect(aside((await decide({ site_id: site, visitor_id: 'help-1', url })).body)).toMatchObject({ reason: 'default', variant_id: null });
    await callOk(c.write, 'placements_update', { id: plc.id, enabled: true });
    expect(aside((await decide({ site_id: site, visitor_id: 'help-1', url })).body).reason).toBe('placement');
    await fails(c.readOnly, 'placements_delete', { id: plc.id }, 'insufficient_scope');
    expect(await callOk(c.write, 'placements_delete', { id: plc.id })).toEqual({ removed: plc.id });
    expect((await callOk(c.read, 'placements_list', { zone_id: zone.id })).placements).toEqual([]);
    expect(aside((await decide({ site_id: site, visitor_id: 'help-1', url })).body).reason).toBe('default');

    // A zone goes only once its variants are archived; then its page can go.
    const blocking = (await fails(c.write, 'zones_delete', { id: zone.id }, 'conflict')).details.variants;
    expect(blocking).toHaveLength(2);
    expect(blocking).toContain(v.id);
    for (const id of blocking) await callOk(c.write, 'variants_archive', { id });
    expect(await callOk(c.write, 'zones_delete', { id: zone.id })).toEqual({ removed: zone.id });
    expect((await callOk(c.read, 'zones_list', { page_id: page.id })).zones).toEqual([]);
    expect(Number(query<any>(dataDir, 'SELECT count(*) AS n FROM variants WHERE zone_id = ?', zone.id)[0].n)).toBe(0);
    expect(await callOk(c.write, 'pages_delete', { id: page.id })).toEqual({ removed: page.id });
    expect((await decide({ site_id: site, visitor_id: 'help-1', url })).body.zones).toEqual([]);
  });
});

describe('a layout test end to end: MCP tools, /api/events, /api/decide, /api/convert', () => {
  it('assigns through /api/decide (sticky), counts conversions per arm, ends with experiment.ended and ships for everyone with experiment.shipped', async () => {
    const plain = await callOk(c.write, 'content_create', { name: 'Checkout default', kind: 'html', body: '<p>Pay now</p>' });
    const alt = await callOk(c.write, 'content_create', { name: 'Checkout alt', kind: 'html', body: '<p>Complete your order</p>' });
    const page = await callOk(c.write, 'pages_create', { name: 'Checkout', match_type: 'prefix', pattern: '/checkout' });
    const zone = await callOk(c.write, 'zones_create', { page_id: page.id, name: 'cta', selector: '#cta', default_content_id: plain.id });
    const v = await callOk(c.propose, 'variants_create_draft', { zone_id: zone.id, content_id: alt.id, name: 'Alt CTA' });
    await callOk(c.write, 'variants_approve', { id: v.id });
    const exp = await callOk(c.write, 'experiments_create', {
      name: 'Checkout CTA',
      zone_id: zone.id,
      primary_metric: 'conversion',
      arms: [
        { label: 'Control', control: true, weight: 50 },
        { label: 'Alt', variant_id: v.id, weight: 50 },
      ],
    });
    expect((await callOk(c.write, 'experiments_start', { id: exp.id })).status).toBe('running');
    const [ctlArm, altArm] = [exp.arms[0].id as string, exp.arms[1].id as string];
    const weights = [
      { id: ctlArm, weight: 50 },
      { id: altArm, weight: 50 },
    ];
    // Three visitors the hash puts in each arm.
    const visitors = { [ctlArm]: [] as string[], [altArm]: [] as string[] };
    for (let i = 0; visitors[ctlArm]!.length < 3 || visitors[altArm]!.length < 3; i++) {
      const id = `co-${i}`;
      const arm = assignArm(exp.seed, id, weights)!.id;
      if (visitors[arm]!.length < 3) visitors[arm]!.push(id);
    }
    const url = 'https://shop.example/checkout/step-1';
    const cta = (b: any) => b.zones.find((z: any) => z.zone_id === zone.id);
    for (const [arm, ids_] of Object.entries(visitors)) {
      for (const visitor of ids_) {
        expect((await post(`${svc.url}/api/events`, { site_id: site, session_id: `s-${visitor}`, visitor_id: visitor, type: 'pageview', url })).status).toBe(201);
        const b = await decideUntil({ site_id: site, visitor_id: visitor, url }, (x) => cta(x)?.reason === 'experiment_arm');
        expect(cta(b)).toMatchObject({ experiment_id: exp.id, arm_id: arm, variant_id: arm === altArm ? v.id : null, content: { body: arm === altArm ? '<p>Complete your order</p>' : '<p>Pay now</p>' } });
      }
    }
    const exposed = query<any>(dataDir, 'SELECT DISTINCT visitor_id, arm_id FROM exposures WHERE experiment_id = ? ORDER BY visitor_id', exp.id);
    expect(exposed).toEqual([...visitors[ctlArm]!.map((x) => ({ visitor_id: x, arm_id: ctlArm })), ...visitors[altArm]!.map((x) => ({ visitor_id: x, arm_id: altArm }))].sort((p, q) => (p.visitor_id < q.visitor_id ? -1 : 1)));

    // Two of the Alt visitors and one control visitor convert.
    for (const visitor of [visitors[altArm]![0]!, visitors[altArm]![1]!, visitors[ctlArm]![0]!]) {
      expect((await post(`${svc.url}/api/convert`, { site_id: site, session_id: `s-${visitor}`, revenue: 40 })).status).toBe(201);
    }
    const results = await callOk(c.read, 'experiments_results', { id: exp.id });
    expect(results.arms.map((x: any) => [x.arm_id, x.visitors, x.converters, x.revenue])).toEqual([
      [ctlArm, 3, 1, 40],
      [altArm, 3, 2, 80],
    ]);

    // Weights change: a visitor already in Alt keeps it, a new one follows the new weights.
    await callOk(c.write, 'experiments_update', { id: exp.id, weights: [{ arm_id: altArm, weight: 0 }] });
    const kept = await decideUntil({ site_id: site, visitor_id: visitors[altArm]![2]!, url }, (x) => cta(x)?.reason === 'experiment_arm');
    expect(cta(kept).arm_id).toBe(altArm);
    expect(cta((await decide({ site_id: site, visitor_id: `co-new-${Date.now()}`, url })).body).arm_id).toBe(ctlArm);

    const ended = await callOk(c.write, 'experiments_end', { id: exp.id });
    expect(ended).toMatchObject({ status: 'ended', end_reason: 'manual' });
    const shipped = await callOk(c.write, 'experiments_ship', { id: exp.id, arm_id: altArm });
    expect(shipped).toMatchObject({ status: 'shipped', shipped_arm_id: altArm });
    expect((await callOk(c.read, 'variants_get', { id: v.id })).status).toBe('published');
    // Everyone now sees the shipped arm, including a control visitor.
    const after = await decideUntil({ site_id: site, visitor_id: visitors[ctlArm]![0]!, url }, (x) => cta(x)?.reason === 'shipped_experiment');
    expect(cta(after)).toMatchObject({ arm_id: altArm, variant_id: v.id, content: { body: '<p>Complete your order</p>' } });

    const events = async (type: string) => {
      const got = await rx.waitFor(1, 20_000, (r) => {
        const p = JSON.parse(r.body);
        return p.event === type && p.experiment_id === exp.id;
      });
      const p = JSON.parse(got[0]!.body);
      expect(validatePayload(type as EventType, p).success, type).toBe(true);
      return p;
    };
    const endEv = await events('experiment.ended');
    expect(endEv).toMatchObject({ reason: 'manual' });
    // The control also holds the visitor who arrived after the weights changed.
    expect(endEv.arms.map((x: any) => [x.arm_id, x.sessions, x.conversions])).toEqual([
      [ctlArm, 4, 1],
      [altArm, 3, 2],
    ]);
    expect(await events('experiment.shipped')).toMatchObject({ arm_id: altArm });
  });
});

describe('rate limits of /api/decide', () => {
  it('answers 429 with Retry-After past the per-site burst, stores nothing for refused requests', async () => {
    const dir = tempDir();
    const other = createSite(dir, 'Limited');
    const limited = await startSvc({ dataDir: dir, env: { SVC_INGEST_SITE_RATE: '1', SVC_INGEST_SITE_BURST: '2' } });
    try {
      const u = `${limited.url}/api/decide?site_id=${other}&visitor_id=v1&url=%2Fpricing`;
      const statuses: number[] = [];
      let refused: Response | undefined;
      for (let i = 0; i < 4; i++) {
        const r = await fetch(u);
        statuses.push(r.status);
        if (r.status === 429) refused = r;
        else await r.text();
      }
      expect(statuses.slice(0, 2)).toEqual([200, 200]);
      expect(statuses).toContain(429);
      expect(refused!.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(((await refused!.json()) as { error: unknown }).error).toMatchObject({ code: 'rate_limited', details: { scope: 'site' } });
    } finally {
      await limited.stop();
      cleanup(dir);
    }
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, cli, cliJson, createSite, post, startSvc, tempDir, type Svc } from '../helpers/svc.js';
import { startReceiver } from '../helpers/receiver.js';
import { execute, query } from '../helpers/db.js';
import { call, callOk, errorOf, McpClients, mintToken } from '../helpers/mcp-client.js';
import { validatePayload, type EventType } from '../../src/webhooks/catalogue.js';

/**
 * Campaigns end to end through the MCP endpoint with the SDK client: components made in the store, a
 * campaign bundling them, a launch rolled back by a required draft variant, a propose-only token refused,
 * launch, pause and close, and a receiver subscribed to all events getting campaign.launched,
 * campaign.paused and campaign.closed with payloads the catalogue validates and no personal data.
 */
let svc: Svc;
let dataDir: string;
let site: string;
let rx: Awaited<ReturnType<typeof startReceiver>>;
const tok = { write: '', propose: '', read: '', admin: '' };
const mcp = new McpClients(() => svc.url);
const EMAIL = 'grace.hopper@example.com';
const PHONE = '+1 555 0100 777';
const NAME = 'Grace Hopper';

const now = Date.now();
function seedComponents() {
  execute(dataDir, 'INSERT INTO content_blocks (id, site_id, name, kind, body, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)', 'cb_hero', site, 'Hero', 'html', '<p>Hi</p>', now, now);
  execute(dataDir, 'INSERT INTO pages (id, site_id, name, match_type, pattern, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)', 'pg_home', site, 'Home', 'exact', '/', now, now);
  execute(dataDir, 'INSERT INTO zones (id, site_id, page_id, name, selector, default_content_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)', 'zn_hero', site, 'pg_home', 'hero', '#hero', 'cb_hero', now, now);
  for (const [id, status] of [
    ['var_sale', 'approved'],
    ['var_draft', 'draft'],
  ]) {
    execute(
      dataDir,
      'INSERT INTO variants (id, site_id, zone_id, content_id, name, status, created_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
      id, site, 'zn_hero', 'cb_hero', id, status, 'token:seed', now, now,
    );
  }
  execute(dataDir, 'INSERT INTO placements (id, site_id, zone_id, variant_id, priority, enabled, created_at, updated_at) VALUES (?, ?, ?, ?, 5, 0, ?, ?)', 'plc_sale', site, 'zn_hero', 'var_sale', now, now);
  execute(
    dataDir,
    `INSERT INTO experiments (id, site_id, name, zone_id, status, seed, primary_metric, created_by, created_at, updated_at)
     VALUES ('exp_layout', ?, 'Layout', 'zn_hero', 'draft', 'seed', 'conversion', 'token:seed', ?, ?)`,
    site, now, now,
  );
  execute(dataDir, "INSERT INTO experiment_arms (id, site_id, experiment_id, label, is_control, variant_id, weight, position) VALUES ('arm_c', ?, 'exp_layout', 'Control', 1, NULL, 0.5, 0)", site);
  execute(dataDir, "INSERT INTO experiment_arms (id, site_id, experiment_id, label, is_control, variant_id, weight, position) VALUES ('arm_b', ?, 'exp_layout', 'Sale', 0, 'var_sale', 0.5, 1)", site);
}

/** What /api/decide shows an anonymous probe visitor in the hero zone (decisions are cached per site; every change must show at once). */
async function heroFor(): Promise<{ reason: string; variant_id: string | null; experiment_id: string | null }> {
  const u = new URL(`${svc.url}/api/decide`);
  u.searchParams.set('site_id', site);
  u.searchParams.set('visitor_id', 'cv-probe');
  u.searchParams.set('url', 'https://shop.example/');
  const res = await fetch(u);
  expect(res.status).toBe(200);
  const body = (await res.json()) as { zones: { zone_id: string; reason: string; variant_id: string | null; experiment_id: string | null }[] };
  return body.zones.find((z) => z.zone_id === 'zn_hero')!;
}

const variantStatus = (id: string) => query<{ status: string }>(dataDir, 'SELECT status FROM variants WHERE id = ?', id)[0]!.status;
const placementEnabled = (id: string) => Number(query<{ enabled: number }>(dataDir, 'SELECT enabled FROM placements WHERE id = ?', id)[0]!.enabled);
const triggerEnabled = (id: string) => Number(query<{ enabled: number }>(dataDir, 'SELECT enabled FROM triggers WHERE id = ?', id)[0]!.enabled);
const experimentStatus = (id: string) => query<{ status: string }>(dataDir, 'SELECT status FROM experiments WHERE id = ?', id)[0]!.status;

beforeAll(async () => {
  dataDir = tempDir();
  site = createSite(dataDir);
  rx = await startReceiver();
  const added = cli(['webhooks', 'add', '--site', site, '--url', `${rx.url}/hooks`, '--events', 'all', '--secret', 'campaign-secret', '--allow-private-destinations', '--data', dataDir]);
  if (added.code !== 0) throw new Error(added.stderr);
  tok.write = mintToken(dataDir, site, ['--scope', 'write']);
  tok.propose = mintToken(dataDir, site, ['--scope', 'write', '--propose-only']);
  tok.read = mintToken(dataDir, site, ['--scope', 'read']);
  tok.admin = mintToken(dataDir, site, ['--scope', 'admin']);
  seedComponents();
  svc = await startSvc({ dataDir, args: ['--allow-private-destinations'], env: { SVC_WEBHOOK_POLL_MS: '50' } });
  // A known visitor with personal data the campaign events must never carry.
  await post(`${svc.url}/api/identify`, { site_id: site, session_id: 'cs-1', visitor_id: 'cv-1', traits: { email: EMAIL, phone: PHONE, name: NAME } });
});

afterAll(async () => {
  await mcp.closeAll();
  await svc.stop();
  await rx.close();
  cleanup(dataDir);
});

describe('campaigns through MCP', () => {
  it('lists the nine tools with their flags', async () => {
    const w = await mcp.connect(tok.write);
    const tools = (await w.listTools()).tools.filter((t) => t.name.startsWith('campaigns_'));
    expect(tools.map((t) => t.name).sort()).toEqual([
      'campaigns_add_component',
      'campaigns_close',
      'campaigns_create',
      'campaigns_get',
      'campaigns_launch',
      'campaigns_list',
      'campaigns_pause',
      'campaigns_remove_component',
      'campaigns_update',
    ]);
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect(byName.get('campaigns_list')!.annotations?.readOnlyHint).toBe(true);
    expect(byName.get('campaigns_get')!.annotations?.readOnlyHint).toBe(true);
    expect(byName.get('campaigns_launch')!.annotations?.readOnlyHint).toBe(false);
    expect(byName.get('campaigns_launch')!.description).toContain('Refused to propose-only tokens.');
    expect(byName.get('campaigns_close')!.description).toContain('Refused to propose-only tokens.');
    expect(byName.get('campaigns_pause')!.description).not.toContain('propose-only');
  });

  it('creates, launches (after a rolled-back attempt), pauses and closes a campaign, emitting its events', async () => {
    const w = await mcp.connect(tok.write);
    const seg = await callOk(w, 'segments_create', { name: 'Sale shoppers', rule: { trait: 'plan', op: 'eq', value: 'gold' } });
    // A triggered message, made with the pipeline area's tools (its live endpoint needs the admin scope).
    await callOk(await mcp.connect(tok.admin), 'triggers_endpoint_set', { url: `${rx.url}/messages` });
    const trg = await callOk(w, 'triggers_create', { name: 'Sale welcome', on_kind: 'event', event_type: 'sale_signup', message_id: 'tpl_sale' });
    expect(trg.enabled).toBe(false);
    const c = await callOk(w, 'campaigns_create', { name: 'Summer sale', description: 'Hero banner and layout test' });
    expect(c).toMatchObject({ status: 'draft', components: [], first_launched_at: null, outcome: null });
    for (const [kind, ref_id] of [
      ['segment', seg.id],
      ['variant', 'var_sale'],
      ['placement', 'plc_sale'],
      ['experiment', 'exp_layout'],
      ['variant', 'var_draft'],
      ['trigger', trg.id],
    ]) {
      await callOk(w, 'campaigns_add_component', { id: c.id, kind, ref_id });
    }
    const missing = await call(w, 'campaigns_add_component', { id: c.id, kind: 'placement', ref_id: 'plc_nope' });
    expect(errorOf(missing)).toMatchObject({ code: 'not_found' });
    const badKind = await call(w, 'campaigns_add_component', { id: c.id, kind: 'coupon', ref_id: 'x' });
    expect(errorOf(badKind).code).toBe('validation_failed');

    // The draft variant is required: the launch is rolled back, nothing of it stays applied.
    const failed = await call(w, 'campaigns_launch', { id: c.id });
    expect(failed.isError).toBe(true);
    expect(errorOf(failed)).toMatchObject({ code: 'conflict', details: { result: 'rolled_back' } });
    expect(errorOf(failed).details.steps).toContainEqual(
      expect.objectContaining({ kind: 'variant', ref_id: 'var_draft', step: 'publish', outcome: 'failed', error_code: 'not_approved' }),
    );
    expect([variantStatus('var_sale'), placementEnabled('plc_sale'), experimentStatus('exp_layout'), triggerEnabled(trg.id)]).toEqual(['approved', 0, 'draft', 0]);
    expect(await heroFor()).toMatchObject({ reason: 'default', variant_id: null });
    const afterFail = await callOk(w, 'campaigns_get', { id: c.id });
    expect(afterFail.status).toBe('draft');
    expect(afterFail.runs).toHaveLength(1);
    expect(afterFail.runs[0]).toMatchObject({ action: 'launch', result: 'rolled_back', id: errorOf(failed).details.run_id });

    // Made optional, the draft's failure is recorded but the launch goes ahead.
    const opt = await callOk(w, 'campaigns_add_component', { id: c.id, kind: 'variant', ref_id: 'var_draft', required: false });
    expect(opt).toMatchObject({ added: false, component: { required: false } });

    // A propose-only token may not launch (it publishes) or close; it may not change anything either way.
    const p = await mcp.connect(tok.propose);
    const refused = await call(p, 'campaigns_launch', { id: c.id });
    expect(errorOf(refused)).toMatchObject({ code: 'insufficient_scope', details: { reason: 'propose_only' } });
    expect(errorOf(await call(p, 'campaigns_close', { id: c.id })).details.reason).toBe('propose_only');
    expect(variantStatus('var_sale')).toBe('approved');
    const r = await mcp.connect(tok.read);
    expect(errorOf(await call(r, 'campaigns_create', { name: 'nope' })).code).toBe('insufficient_scope');

    const launched = await callOk(w, 'campaigns_launch', { id: c.id });
    expect(launched.campaign.status).toBe('live');
    expect(launched.run.result).toBe('applied');
    expect(launched.run.steps.map((s: any) => [s.kind, s.ref_id, s.step, s.outcome])).toEqual([
      ['segment', seg.id, 'verify', 'succeeded'],
      ['variant', 'var_sale', 'publish', 'succeeded'],
      ['variant', 'var_draft', 'publish', 'failed'],
      ['placement', 'plc_sale', 'enable', 'succeeded'],
      ['experiment', 'exp_layout', 'start', 'succeeded'],
      ['trigger', trg.id, 'enable', 'succeeded'],
    ]);
    expect([variantStatus('var_sale'), variantStatus('var_draft'), placementEnabled('plc_sale'), experimentStatus('exp_layout'), triggerEnabled(trg.id)]).toEqual([
      'published',
      'draft',
      1,
      'running',
      1,
    ]);
    // The browser tag sees it at once: the running test (its arm) or the placement now decides the hero zone.
    const live = await heroFor();
    expect(live.reason === 'experiment_arm' ? live.experiment_id : live.variant_id).toBe(live.reason === 'experiment_arm' ? 'exp_layout' : 'var_sale');
    expect(['experiment_arm', 'placement']).toContain(live.reason);
    // The other areas' own tools see the result.
    expect((await callOk(w, 'triggers_get', { id: trg.id })).enabled).toBe(true);
    expect((await callOk(w, 'experiments_get', { id: 'exp_layout' })).status).toBe('running');
    const editLive = await call(w, 'campaigns_remove_component', { id: c.id, kind: 'variant', ref_id: 'var_draft' });
    expect(errorOf(editLive).code).toBe('conflict');

    // Traffic while live: the known visitor sees the sale variant, then converts; another visitor is in the holdout.
    execute(dataDir, 'INSERT INTO exposures (site_id, visitor_id, zone_id, variant_id, holdout, url, created_at) VALUES (?, ?, ?, ?, 0, ?, ?)', site, 'cv-1', 'zn_hero', 'var_sale', '/', Date.now());
    execute(dataDir, 'INSERT INTO exposures (site_id, visitor_id, zone_id, holdout, url, created_at) VALUES (?, ?, ?, 1, ?, ?)', site, 'cv-2', 'zn_hero', '/', Date.now());
    await new Promise((res) => setTimeout(res, 5));
    expect((await post(`${svc.url}/api/events`, { site_id: site, session_id: 'cs-1', visitor_id: 'cv-1', type: 'pageview', url: 'https://shop.example/' })).status).toBeLessThan(300);
    expect((await post(`${svc.url}/api/events`, { site_id: site, session_id: 'cs-2', visitor_id: 'cv-2', type: 'pageview', url: 'https://shop.example/' })).status).toBeLessThan(300);
    expect((await post(`${svc.url}/api/convert`, { site_id: site, session_id: 'cs-1', revenue: 49.9, line_items: [{ sku: 'S1', qty: 1, price: 49.9 }] })).status).toBeLessThan(300);

    const paused = await callOk(w, 'campaigns_pause', { id: c.id });
    expect(paused.campaign.status).toBe('paused');
    expect(paused.run.steps.map((s: any) => [s.kind, s.step, s.outcome])).toEqual([
      ['trigger', 'disable', 'succeeded'],
      ['experiment', 'pause', 'succeeded'],
      ['placement', 'disable', 'succeeded'],
      ['variant', 'keep', 'skipped'],
      ['variant', 'keep', 'skipped'],
      ['segment', 'none', 'skipped'],
    ]);
    expect([placementEnabled('plc_sale'), experimentStatus('exp_layout'), variantStatus('var_sale'), triggerEnabled(trg.id)]).toEqual([0, 'paused', 'published', 0]);
    expect(await heroFor()).toMatchObject({ reason: 'default', variant_id: null });

    const closed = await callOk(w, 'campaigns_close', { id: c.id });
    expect(closed.campaign).toMatchObject({ status: 'closed', live_since: null });
    expect(closed.outcome).toEqual({
      days_live: 0,
      exposed_visitors: 2, // cv-1 and the anonymous /api/decide probe (a visitor without a profile: not in `profiles`)
      holdout_visitors: 1,
      sessions: 1,
      profiles: 1,
      conversions: 1,
      conversion_rate: 1,
      revenue: 49.9,
      currency: 'USD',
      leads: 0,
      lift: null,
    });
    expect(closed.campaign.outcome).toEqual(closed.outcome);
    expect(closed.run.steps.map((s: any) => [s.kind, s.step, s.outcome])).toEqual([
      ['trigger', 'disable', 'skipped'],
      ['experiment', 'end', 'succeeded'],
      ['placement', 'disable', 'skipped'],
      ['variant', 'disable', 'succeeded'],
      ['variant', 'disable', 'skipped'],
      ['segment', 'none', 'skipped'],
    ]);
    expect([variantStatus('var_sale'), experimentStatus('exp_layout')]).toEqual(['disabled', 'ended']);
    expect(errorOf(await call(w, 'campaigns_launch', { id: c.id })).code).toBe('conflict');

    const list = await callOk(w, 'campaigns_list', { status: 'closed' });
    expect(list.campaigns).toEqual([expect.objectContaining({ id: c.id, name: 'Summer sale', components: 6, status: 'closed' })]);
    expect((await callOk(w, 'campaigns_list', { status: 'live' })).campaigns).toEqual([]);
    const got = await callOk(r, 'campaigns_get', { id: c.id });
    expect(got.runs.map((x: any) => [x.action, x.result])).toEqual([
      ['close', 'applied'],
      ['pause', 'applied'],
      ['launch', 'applied'],
      ['launch', 'rolled_back'],
    ]);

    // The receiver, subscribed to all events, gets the three campaign events; each validates and holds no personal data.
    // Delivery is at least once: a retry (same x-svc-delivery id) can repeat an event under load, so count deliveries.
    const isCampaign = (x: { headers: Record<string, unknown> }) => String(x.headers['x-svc-event']).startsWith('campaign.');
    const deliveries = (all: typeof rx.received) => [...new Map(all.map((x) => [String(x.headers['x-svc-delivery']), x])).values()];
    const deadline = Date.now() + 30_000;
    while (deliveries(rx.received.filter(isCampaign)).length < 3 && Date.now() < deadline) await new Promise((res) => setTimeout(res, 50));
    const got3 = deliveries(rx.received.filter(isCampaign));
    expect(got3.map((x) => x.headers['x-svc-event'])).toEqual(['campaign.launched', 'campaign.paused', 'campaign.closed']);
    for (const x of got3) {
      const payload = JSON.parse(x.body) as { event: EventType; campaign_id: string };
      const check = validatePayload(payload.event, payload);
      expect(check.success, JSON.stringify(check.error?.issues)).toBe(true);
      expect(payload.campaign_id).toBe(c.id);
      for (const pii of [EMAIL, PHONE, NAME, 'grace', 'Hopper']) expect(x.body.toLowerCase()).not.toContain(pii.toLowerCase());
      expect(x.body).not.toMatch(/"(email|phone|name)"/);
    }
    const [l, pz, cl] = got3.map((x) => JSON.parse(x.body));
    expect(l.steps).toContainEqual({ component_id: 'var_draft', component: 'variant', step: 'publish', outcome: 'failed', error_code: 'not_approved' });
    expect(pz).toMatchObject({ reason: 'manual' });
    expect(cl.outcome).toEqual(closed.outcome);
    expect(cl.launched_at).toBe(launched.campaign.first_launched_at);
    // One launched event only: the rolled-back attempt emitted none (the outbox holds every event ever enqueued).
    const enqueued = query<{ event_type: string }>(dataDir, "SELECT event_type FROM outbox WHERE site_id = ? AND event_type LIKE 'campaign.%' ORDER BY id", site);
    expect(enqueued.map((x) => x.event_type)).toEqual(['campaign.launched', 'campaign.paused', 'campaign.closed']);
  });

  it('keeps other sites out', async () => {
    const other = createSite(dataDir, 'Other');
    const theirs = cliJson<{ token: string }>(['token', 'mint', '--site', other, '--scope', 'write', '--data', dataDir]).token;
    const o = await mcp.connect(theirs);
    const mine = (await callOk(await mcp.connect(tok.read), 'campaigns_list', {})).campaigns[0];
    expect(errorOf(await call(o, 'campaigns_get', { id: mine.id })).code).toBe('not_found');
    const c = await callOk(o, 'campaigns_create', { name: 'Theirs' });
    const r = await call(o, 'campaigns_add_component', { id: c.id, kind: 'variant', ref_id: 'var_sale' });
    expect(errorOf(r).code).toBe('not_found');
  });

  it('renames, pages the list newest first, and refuses changes to a closed campaign', async () => {
    const w = await mcp.connect(tok.write);
    const made: string[] = [];
    for (const name of ['A', 'B', 'C']) made.push((await callOk(w, 'campaigns_create', { name: `Page ${name}` })).id);
    const renamed = await callOk(w, 'campaigns_update', { id: made[0], name: 'Page A2', description: 'x' });
    expect(renamed).toMatchObject({ name: 'Page A2', description: 'x', status: 'draft' });
    expect((await callOk(w, 'campaigns_update', { id: made[0], description: null })).description).toBeNull();
    const first = await callOk(w, 'campaigns_list', { status: 'draft', limit: 2 });
    expect(first.campaigns.map((x: any) => x.id)).toEqual([made[2], made[1]]);
    const second = await callOk(w, 'campaigns_list', { status: 'draft', limit: 2, before: first.next_before });
    expect(second.campaigns.map((x: any) => x.id)).toEqual([made[0]]);
    expect(second.next_before).toBeNull();
    await callOk(w, 'campaigns_close', { id: made[0] });
    expect(errorOf(await call(w, 'campaigns_update', { id: made[0], name: 'late' })).code).toBe('conflict');
    expect(errorOf(await call(w, 'campaigns_add_component', { id: made[0], kind: 'variant', ref_id: 'var_sale' })).code).toBe('conflict');
    expect(errorOf(await call(w, 'campaigns_launch', { id: made[1] }))).toMatchObject({ code: 'validation_failed' });
    expect(errorOf(await call(w, 'campaigns_get', { id: 'cmp_nope' })).code).toBe('not_found');
  });
});

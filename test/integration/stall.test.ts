import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/client';
import { cleanup, cli, createSite, startSvc, tempDir, type Svc } from '../helpers/svc.js';
import { execute, query } from '../helpers/db.js';
import { startReceiver } from '../helpers/receiver.js';
import { validatePayload } from '../../src/webhooks/catalogue.js';
import { isoWeekAt } from '../../src/domain/stall/week.js';
import { FUNNEL_STEPS, seedStatements, stallSeed } from '../helpers/stall-seed.js';
import { call, callOk, McpClients, mintTokenRecord } from '../helpers/mcp-client.js';

// A Wednesday afternoon of 2026-W42 in Berlin, well in the past: the pass looks at that week and the 4 before.
// (The weekly worker of the running svc looks at the last completed week before today, where there is no data.)
const AS_OF = '2026-10-14T15:00:00Z';
const TZ = 'Europe/Berlin';
const PRIVATE = ['--allow-private-destinations'];

let svc: Svc;
let dataDir: string;
let site: string;
let rx: Awaited<ReturnType<typeof startReceiver>>;
const tok = { write: { token: '', id: '' }, proposeOnly: { token: '', id: '' }, read: { token: '', id: '' } };
const mcp = new McpClients(() => svc.url);
let writer: Client;
let proposer: Client;
let reader: Client;
let funnelId = '';

function errorCode(r: any): string {
  expect(r.isError).toBe(true);
  const text = JSON.stringify(r.structuredContent ?? r.content);
  return /"code\\?":\\?"([a-z_]+)/.exec(text)?.[1] ?? text;
}

const count = (sql: string, ...params: unknown[]) => Number(query<{ n: number }>(dataDir, sql, ...params)[0]!.n);

beforeAll(async () => {
  dataDir = tempDir('svc-stall-it-');
  site = createSite(dataDir);
  execute(dataDir, 'UPDATE sites SET timezone = ? WHERE id = ?', TZ, site);
  const weeks = [4, 3, 2, 1, 0].map((back) => isoWeekAt(Date.parse(AS_OF), TZ, back).start);
  for (const s of seedStatements(stallSeed(site, weeks), 150)) execute(dataDir, s.sql, ...s.params);
  tok.write = mintTokenRecord(dataDir, site, ['--scope', 'write']);
  tok.proposeOnly = mintTokenRecord(dataDir, site, ['--scope', 'write', '--propose-only']);
  tok.read = mintTokenRecord(dataDir, site, ['--scope', 'read']);
  rx = await startReceiver();
  const add = cli(['webhooks', 'add', '--site', site, '--url', `${rx.url}/hooks`, '--events', 'all', '--data', dataDir, ...PRIVATE, '--secret', 'whsec_stall', '--json']);
  if (add.code !== 0) throw new Error(add.stderr);
  svc = await startSvc({ dataDir, args: PRIVATE, env: { SVC_WEBHOOK_RETRY_SCHEDULE: '100ms,100ms', SVC_WEBHOOK_POLL_MS: '50' } });
  writer = await mcp.connect(tok.write.token);
  proposer = await mcp.connect(tok.proposeOnly.token);
  reader = await mcp.connect(tok.read.token);
});

afterAll(async () => {
  await mcp.closeAll();
  await svc?.stop();
  await rx?.close();
  cleanup(dataDir);
});

describe('funnels through MCP', () => {
  it('creates, reads and refuses bad funnels', async () => {
    const f = await callOk(writer, 'funnels_create', { name: 'Shop', steps: FUNNEL_STEPS });
    funnelId = f.id;
    expect(f.steps.map((s: any) => [s.position, s.key, s.kind])).toEqual([
      [1, 'product', 'page'],
      [2, 'add_to_cart', 'event'],
      [3, 'checkout', 'page'],
    ]);
    expect((await callOk(reader, 'funnels_get', { id: funnelId })).name).toBe('Shop');
    expect((await callOk(reader, 'funnels_list')).funnels).toHaveLength(1);
    expect(errorCode(await call(writer, 'funnels_create', { name: 'Short', steps: [FUNNEL_STEPS[0]] }))).toBe('validation_failed');
    expect(errorCode(await call(writer, 'funnels_create', { name: 'Shop', steps: FUNNEL_STEPS }))).toBe('conflict');
    expect(errorCode(await call(writer, 'funnels_create', { name: 'Bad', steps: [{ kind: 'page', match: 'exact', pattern: 'no-slash' }, FUNNEL_STEPS[1]] }))).toBe(
      'validation_failed',
    );
    expect(errorCode(await call(reader, 'funnels_create', { name: 'Other', steps: FUNNEL_STEPS }))).toBe('insufficient_scope');
    expect(count('SELECT count(*) AS n FROM funnels')).toBe(1);
  });

  it('reports per step sessions, overall and step-to-step rates, for all sessions and a cohort', async () => {
    const week = isoWeekAt(Date.parse(AS_OF), TZ);
    const window = { funnel_id: funnelId, from: new Date(week.start).toISOString(), to: new Date(week.end).toISOString() };
    const all = await callOk(reader, 'analytics_funnel', window);
    expect(all.sessions_scanned).toBe(120);
    expect(all.steps.map((s: any) => s.sessions)).toEqual([120, 48, 24]);
    expect(all.steps.map((s: any) => s.overall_rate)).toEqual([1, 0.4, 0.2]);
    expect(all.steps.map((s: any) => s.step_rate)).toEqual([1, 0.4, 0.5]);
    const hi = await callOk(reader, 'analytics_funnel', { ...window, cohort: 'high_intent' });
    expect(hi.steps.map((s: any) => s.sessions)).toEqual([60, 12, 6]);
    const news = await callOk(reader, 'analytics_funnel', { ...window, cohort: 'segment:seg_s_news' });
    expect(news.steps.map((s: any) => s.sessions)).toEqual([60, 36, 18]);
    expect(errorCode(await call(reader, 'analytics_funnel', { ...window, cohort: 'segment:seg_nope' }))).toBe('validation_failed');
  });
});

describe('the weekly stall pass through MCP', () => {
  let filed: any[] = [];

  it('refuses stall_run to a read token', async () => {
    expect(errorCode(await call(reader, 'stall_run', { as_of: AS_OF }))).toBe('insufficient_scope');
    expect(count('SELECT count(*) AS n FROM stall_findings')).toBe(0);
  });

  it('finds where high-intent visitors and a segment stall this week, files each once, and emits stall.found', async () => {
    const r = await callOk(writer, 'stall_run', { as_of: AS_OF });
    expect(r.iso_week).toBe('2026-W42');
    expect(r.week_start).toBe('2026-10-11T22:00:00.000Z'); // Monday 00:00 in Berlin (CEST)
    expect(r.sessions_scanned).toBe(600);
    filed = r.filed;
    expect(filed.map((f: any) => f.cohort_key).sort()).toEqual(['high_intent', 'segment:seg_s_buyers']);
    const buyers = filed.find((f: any) => f.cohort_key === 'segment:seg_s_buyers');
    expect(buyers).toMatchObject({ cohort_label: 'Returning buyers', step: 'add_to_cart', step_position: 2, sessions: 60, stalled: 48, value_per_week: 600 });

    const hooks = await rx.waitFor(2, 20_000, (q) => q.body.includes('"stall.found"'));
    const payloads = hooks.map((h) => JSON.parse(h.body));
    for (const p of payloads) {
      const v = validatePayload('stall.found', p);
      expect(v.success, JSON.stringify(v.error?.issues)).toBe(true);
      expect(Object.keys(p).filter((k) => /email|phone|name/i.test(k))).toEqual([]);
      expect(JSON.stringify(p)).not.toMatch(/@|prf_|ses_|vis_/);
    }
    const hi = payloads.find((p) => p.cohort_key === 'high_intent');
    expect(hi).toMatchObject({
      site_id: site,
      iso_week: '2026-W42',
      funnel_id: funnelId,
      step_position: 2,
      step: 'add_to_cart',
      cohort_label: 'High-intent visitors',
      cohort_pass_rate: 0.2,
      baseline_pass_rate: 0.6,
      sessions_per_week: 60,
      stalled_sessions_per_week: 48,
      baseline_sessions_per_week: 60,
      baseline_stalled_sessions_per_week: 24,
      value_per_week: 600,
      currency: 'USD',
    });
    const hiFinding = filed.find((f: any) => f.cohort_key === 'high_intent');
    expect(hi.inbox_item_id).toBe(hiFinding.inbox_item_id);
    expect(hi.experiment_proposal_id).toBe(hiFinding.experiment_proposal_id);
  });

  it('files nothing new when run again', async () => {
    const again = await callOk(writer, 'stall_run', { as_of: AS_OF });
    expect(again.significant).toBe(2);
    expect(again.filed).toEqual([]);
    expect((await callOk(reader, 'stall_findings', { iso_week: '2026-W42' })).findings).toHaveLength(2);
    expect(count("SELECT count(*) AS n FROM outbox WHERE event_type = 'stall.found'")).toBe(2);
    expect(count('SELECT count(*) AS n FROM inbox_items')).toBe(2);
    expect(count('SELECT count(*) AS n FROM experiment_proposals')).toBe(2);
  });

  it('lists the inbox and shows an item with its finding and proposal', async () => {
    const list = await callOk(reader, 'inbox_list');
    expect(list.items).toHaveLength(2);
    expect(list.items.every((i: any) => i.status === 'pending')).toBe(true);
    const hi = filed.find((f: any) => f.cohort_key === 'high_intent');
    const got = await callOk(reader, 'inbox_get', { id: hi.inbox_item_id });
    expect(got.finding.id).toBe(hi.id);
    expect(got.proposal).toMatchObject({ page_match_type: 'glob', page_pattern: '/products/*', primary_metric: 'conversion' });
    expect(got.item.proposed_action).toContain('High-intent visitors');
    expect(errorCode(await call(reader, 'inbox_get', { id: 'inbox_nope' }))).toBe('not_found');
  });

  it('refuses inbox_approve to a propose-only token, and approves as a draft experiment owned by the approver', async () => {
    const hi = filed.find((f: any) => f.cohort_key === 'high_intent');
    expect(errorCode(await call(proposer, 'inbox_approve', { id: hi.inbox_item_id }))).toBe('insufficient_scope');
    expect(count('SELECT count(*) AS n FROM experiments')).toBe(0);
    expect(query<{ status: string }>(dataDir, 'SELECT status FROM inbox_items WHERE id = ?', hi.inbox_item_id)[0]!.status).toBe('pending');

    const r = await callOk(writer, 'inbox_approve', { id: hi.inbox_item_id });
    expect(r.item).toMatchObject({ status: 'approved', decided_by: `token:${tok.write.id}`, experiment_id: r.experiment_id });
    const [exp] = query<any>(dataDir, 'SELECT * FROM experiments WHERE id = ?', r.experiment_id);
    expect(exp).toMatchObject({ site_id: site, status: 'draft', created_by: `token:${tok.write.id}`, page_id: r.page_id, primary_metric: 'conversion' });
    expect(query<any>(dataDir, 'SELECT site_id, match_type, pattern FROM pages WHERE id = ?', r.page_id)).toEqual([{ site_id: site, match_type: 'glob', pattern: '/products/*' }]);
    const arms = query<any>(dataDir, 'SELECT label, is_control, variant_id, weight FROM experiment_arms WHERE experiment_id = ?', r.experiment_id);
    expect(arms).toEqual([{ label: 'control', is_control: 1, variant_id: null, weight: 1 }]);
    expect(errorCode(await call(writer, 'inbox_approve', { id: hi.inbox_item_id }))).toBe('conflict');
    expect(count('SELECT count(*) AS n FROM experiments')).toBe(1);
  });

  it('dismisses only with a reason', async () => {
    const other = filed.find((f: any) => f.cohort_key !== 'high_intent');
    expect(errorCode(await call(writer, 'inbox_dismiss', { id: other.inbox_item_id }))).toBe('validation_failed');
    expect(errorCode(await call(writer, 'inbox_dismiss', { id: other.inbox_item_id, reason: '   ' }))).toBe('validation_failed');
    const r = await callOk(writer, 'inbox_dismiss', { id: other.inbox_item_id, reason: 'Known: the cart was down on Tuesday.' });
    expect(r.item).toMatchObject({ status: 'dismissed', dismiss_reason: 'Known: the cart was down on Tuesday.', decided_by: `token:${tok.write.id}`, experiment_id: null });
    expect((await callOk(reader, 'inbox_list')).items).toHaveLength(0);
    expect((await callOk(reader, 'inbox_list', { status: 'all' })).items).toHaveLength(2);
  });

  it('updates and deletes a funnel', async () => {
    const u = await callOk(writer, 'funnels_update', { id: funnelId, name: 'Shop v2' });
    expect(u.name).toBe('Shop v2');
    expect(errorCode(await call(writer, 'funnels_update', { id: funnelId }))).toBe('validation_failed');
    expect((await callOk(writer, 'funnels_delete', { id: funnelId })).removed).toBe(funnelId);
    expect(errorCode(await call(reader, 'funnels_get', { id: funnelId }))).toBe('not_found');
    expect((await callOk(reader, 'stall_findings')).findings).toHaveLength(2);
  });
});

import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/client';
import { TOOLS } from '../../src/mcp/tools/index.js';
import { cleanup, cli, cliJson, createSite, post, startSvc, tempDir, type Svc } from '../helpers/svc.js';
import { execute, query } from '../helpers/db.js';
import { callErr, callOk, McpClients, mintToken } from '../helpers/mcp-client.js';

let svc: Svc;
let dataDir: string;
let site: string;
let otherSite: string;
const tok = { owner: '', read: '', readRO: '', areas: '', admin: '', noDestroy: '', other: '' };
const mcp = new McpClients(() => svc.url);
const DAY = 86_400_000;

const ingest = (p: string, body: Record<string, unknown>, ip?: string) => post(`${svc.url}${p}`, { site_id: site, ...body }, ip ? { 'x-forwarded-for': ip } : {});

/** Moves everything of these sessions `ms` into the past. */
function shift(sessions: string[], ms: number) {
  for (const id of sessions) {
    execute(dataDir, 'UPDATE sessions SET first_seen = first_seen - ?, last_seen = last_seen - ? WHERE id = ?', ms, ms, id);
    execute(dataDir, 'UPDATE events SET ts = ts - ? WHERE session_id = ?', ms, id);
    execute(dataDir, 'UPDATE scores SET received_at = received_at - ? WHERE session_id = ?', ms, id);
    execute(dataDir, 'UPDATE conversions SET created_at = created_at - ? WHERE session_id = ?', ms, id);
  }
}

const PERSONAL = ['jane', 'joe', 'bob', 'gina', 'Jane Roe', '@', '198.51.100', '203.0.113', '+1 555'];

function expectNoPerson(value: unknown) {
  const text = JSON.stringify(value);
  for (const p of PERSONAL) expect(text, `leaks ${p}`).not.toContain(p);
  for (const { id } of query<{ id: string }>(dataDir, 'SELECT id FROM profiles')) expect(text).not.toContain(id);
}

beforeAll(async () => {
  dataDir = tempDir();
  site = createSite(dataDir);
  otherSite = createSite(dataDir, 'Other');
  tok.owner = mintToken(dataDir, site, ['--scope', 'admin', '--allow-credential-issuance']);
  tok.read = mintToken(dataDir, site, ['--scope', 'read']);
  tok.readRO = mintToken(dataDir, site, ['--scope', 'read', '--read-only']);
  tok.areas = mintToken(dataDir, site, ['--scope', 'admin', '--areas', 'accounts,tools']);
  tok.noDestroy = mintToken(dataDir, site, ['--scope', 'admin', '--block-destructive']);
  tok.other = mintToken(dataDir, otherSite, ['--scope', 'admin']);
  cliJson(['user', 'add', '--site', site, '--email', 'admin.person@shop.test', '--role', 'admin', '--data', dataDir]);
  tok.admin = mintToken(dataDir, site, ['--scope', 'admin', '--as', 'admin.person@shop.test']);
  svc = await startSvc({ dataDir, env: { SVC_TRUST_PROXY: '1' } });

  const owner = await mcp.connect(tok.owner);
  await callOk(owner, 'segments_create', { name: 'Gold', rule: { trait: 'plan', op: 'eq', value: 'gold' } });

  // acme.com: two known contacts this week (one with a high score), an anonymous visitor from its IP range.
  await ingest('/api/events', { session_id: 'a1', visitor_id: 'va1', type: 'pageview', url: 'https://shop.test/pricing?email=jane@mail.acme.com' }, '192.0.2.10');
  await ingest('/api/identify', { session_id: 'a1', visitor_id: 'va1', traits: { email: 'Jane@Mail.Acme.com', name: 'Jane Roe', phone: '+1 555 0100', plan: 'gold' } });
  await ingest('/api/events', { session_id: 'a1', visitor_id: 'va1', type: 'pageview', url: '/pricing' });
  await ingest('/api/events', { session_id: 'a1', visitor_id: 'va1', type: 'pageview', url: '/demo' });
  await ingest('/api/score', { session_id: 'a1', visitor_id: 'va1', score: 85 });
  await ingest('/api/convert', { session_id: 'a1', revenue: 200 });
  await ingest('/api/events', { session_id: 'a2', visitor_id: 'va2', type: 'pageview', url: '/pricing' }, '192.0.2.11');
  await ingest('/api/identify', { session_id: 'a2', visitor_id: 'va2', traits: { email: 'joe@acme.com' } });
  await ingest('/api/score', { session_id: 'a2', visitor_id: 'va2', score: 20 });
  await ingest('/api/events', { session_id: 'a3', visitor_id: 'va3', type: 'pageview', url: '/docs' }, '198.51.100.23');
  // gamma.io: busy last week, quiet now.
  for (const s of ['g1', 'g2']) {
    await ingest('/api/events', { session_id: s, visitor_id: `v${s}`, type: 'pageview', url: '/pricing' }, '192.0.2.30');
    await ingest('/api/identify', { session_id: s, visitor_id: `v${s}`, traits: { email: `gina.${s}@gamma.io` } });
  }
  shift(['g1', 'g2'], 8 * DAY);
  // Free mail: never a company.
  await ingest('/api/events', { session_id: 'f1', visitor_id: 'vf1', type: 'pageview', url: '/pricing' }, '192.0.2.40');
  await ingest('/api/identify', { session_id: 'f1', visitor_id: 'vf1', traits: { email: 'bob@gmail.com' } });
  // Another site's contact at acme.com stays in that site.
  await post(`${svc.url}/api/events`, { site_id: otherSite, session_id: 'o1', visitor_id: 'vo1', type: 'pageview', url: '/x' });
  await post(`${svc.url}/api/identify`, { site_id: otherSite, session_id: 'o1', visitor_id: 'vo1', traits: { email: 'ceo@acme.com' } });
});

afterAll(async () => {
  await mcp.closeAll();
  await svc.stop();
  cleanup(dataDir);
});

describe('accounts_resolve_domain', () => {
  it('normalizes websites, emails and hosts, and refuses free mail', async () => {
    const c = await mcp.connect(tok.readRO);
    const cases: [string, string][] = [
      ['https://www.Example.co.uk/path', 'example.co.uk'],
      ['jane@mail.example.com', 'example.com'],
      ['EXAMPLE.com.', 'example.com'],
      ['mail.google.com', 'google.com'],
      ['shop.example.co.uk', 'example.co.uk'],
      ['bücher.de', 'xn--bcher-kva.de'],
    ];
    for (const [value, domain] of cases) expect(await callOk(c, 'accounts_resolve_domain', { value }), value).toMatchObject({ ok: true, domain, refusal: null });
    expect(await callOk(c, 'accounts_resolve_domain', { value: 'bob@gmail.com' })).toMatchObject({ ok: false, refusal: 'free_mail', domain: 'gmail.com', input_kind: 'email' });
    expect(await callErr(c, 'accounts_resolve_domain', { value: 'co.uk' })).toMatchObject({ code: 'validation_failed' });
  });
});

describe('accounts and company signals', () => {
  it('derives accounts from contacts, records and IP ranges; never free mail; per site', async () => {
    const owner = await mcp.connect(tok.owner);
    const csv = 'cidr,domain,name\n198.51.100.0/24,acme.com,"Acme, Inc."\n203.0.113.0/24,https://www.beta.co.uk/,Beta\n';
    expect(await callOk(owner, 'accounts_ip_ranges_load', { csv })).toEqual({ loaded: 2, replaced: 0, companies: 2 });
    expect(await callOk(owner, 'accounts_upsert', { website: 'https://www.Delta.example.co.uk/about', name: 'Delta' })).toMatchObject({ domain: 'example.co.uk', sources: ['record'] });
    expect(await callErr(owner, 'accounts_upsert', { website: 'gmail.com' })).toMatchObject({ code: 'validation_failed', details: { reason: 'free_mail' } });
    const r = await mcp.connect(tok.read);
    const { accounts, next_after } = await callOk(r, 'accounts_list', {});
    expect(next_after).toBeNull();
    expect(accounts.map((a: any) => [a.domain, a.sources, a.known_contacts, a.ip_ranges])).toEqual([
      ['acme.com', ['contacts', 'ip_ranges'], 2, 1],
      ['beta.co.uk', ['ip_ranges'], 0, 1],
      ['example.co.uk', ['record'], 0, 0],
      ['gamma.io', ['contacts'], 2, 0],
    ]);
    expect(accounts[0].name).toBe('Acme, Inc.');
    expectNoPerson(accounts);
    const page = await callOk(r, 'accounts_list', { limit: 2 });
    expect(page.accounts.map((a: any) => a.domain)).toEqual(['acme.com', 'beta.co.uk']);
    expect((await callOk(r, 'accounts_list', { after: page.next_after })).accounts.map((a: any) => a.domain)).toEqual(['example.co.uk', 'gamma.io']);
    expect((await callOk(r, 'accounts_list', { source: 'record' })).accounts.map((a: any) => a.domain)).toEqual(['example.co.uk']);
    const other = await mcp.connect(tok.other);
    expect((await callOk(other, 'accounts_list', {})).accounts.map((a: any) => a.domain)).toEqual(['acme.com']);
    expect(await callErr(r, 'accounts_get', { account: 'nobody.example.org' })).toMatchObject({ code: 'not_found' });
  });

  it('aggregates visit signals at company level, by contact or IP range, without listing a person', async () => {
    const r = await mcp.connect(tok.read);
    const s = await callOk(r, 'accounts_signals', { account: 'jane@acme.com', days: 7 });
    expect(s.domain).toBe('acme.com');
    expect(s.current).toMatchObject({
      sessions: 3,
      ip_attributed_sessions: 1,
      known_visitors: 2,
      page_views: 5,
      high_intent_page_views: 3,
      high_intent_sessions: 1,
      conversions: 1,
      revenue: 200,
      score_avg: 52.5,
      score_max: 85,
    });
    expect(s.current.top_pages).toEqual([
      { path: '/pricing', views: 3 },
      { path: '/demo', views: 1 },
      { path: '/docs', views: 1 },
    ]);
    expect(s.previous).toMatchObject({ sessions: 0, known_visitors: 0, score_avg: null });
    expect(s.score_trend).toEqual({ current_avg: 52.5, previous_avg: null, change: null, direction: 'unknown' });
    expectNoPerson(s);
    const strict = await callOk(r, 'accounts_signals', { account: 'acme.com', days: 7, intent_threshold: 86 });
    expect(strict.current.high_intent_page_views).toBe(0);
    const gamma = await callOk(r, 'accounts_get', { account: 'https://gamma.io', days: 7 });
    expect(gamma.signals.sessions).toBe(0);
    const gamma14 = await callOk(r, 'accounts_signals', { account: 'gamma.io', days: 7, until: new Date(Date.now() - 7 * DAY).toISOString() });
    expect(gamma14.current).toMatchObject({ sessions: 2, known_visitors: 2, page_views: 2 });
    expect(await callErr(r, 'accounts_signals', { account: 'bob@gmail.com' })).toMatchObject({ code: 'validation_failed', details: { reason: 'free_mail' } });
  });

  it('ranks hot accounts by the rise against the previous window, with why', async () => {
    const r = await mcp.connect(tok.readRO);
    const hot = await callOk(r, 'accounts_hot', { days: 7 });
    expect(hot.accounts.map((a: any) => a.domain)).toEqual(['acme.com']);
    const acme = hot.accounts[0];
    expect(acme.name).toBe('Acme, Inc.');
    expect(acme.why.map((w: any) => w.signal)).toEqual(['conversions', 'high_intent_page_views', 'known_visitors', 'sessions', 'page_views']);
    expect(acme.why[0]).toEqual({ signal: 'conversions', previous: 0, current: 1, change: 1 });
    expect(acme.heat).toBe(10 + 6 + 6 + 3 + 1.25);
    expectNoPerson(hot);
    // A week earlier gamma.io was the one rising.
    const before = await callOk(r, 'accounts_hot', { days: 7, until: new Date(Date.now() - 7 * DAY).toISOString() });
    expect(before.accounts.map((a: any) => a.domain)).toEqual(['gamma.io']);
    expect((await callOk(r, 'accounts_hot', { days: 7, min_sessions: 4 })).accounts).toEqual([]);
  });

  it('loads IP ranges only for admins, refuses a bad file whole, and replaces on reload (also from the CLI)', async () => {
    const before = query(dataDir, 'SELECT cidr, domain, name FROM company_ip_ranges WHERE site_id = ? ORDER BY cidr', site);
    const r = await mcp.connect(tok.read);
    expect(await callErr(r, 'accounts_ip_ranges_load', { csv: '10.0.0.0/8,acme.com' })).toMatchObject({ code: 'insufficient_scope' });
    const owner = await mcp.connect(tok.owner);
    const bad = await callErr(owner, 'accounts_ip_ranges_load', { csv: '10.0.0.0/8,acme.com\n10.1.0.0/16,bob@gmail.com\nnope,acme.com' });
    expect(bad.code).toBe('validation_failed');
    expect(bad.details.errors.map((e: any) => e.line)).toEqual([2, 3]);
    expect(query(dataDir, 'SELECT cidr, domain, name FROM company_ip_ranges WHERE site_id = ? ORDER BY cidr', site)).toEqual(before);
    const file = path.join(dataDir, 'ranges.csv');
    writeFileSync(file, '198.51.100.0/24,acme.com,Acme\n');
    const loaded = cliJson<any>(['accounts', 'ip-ranges', 'load', '--site', site, '--file', file, '--data', dataDir]);
    expect(loaded).toEqual({ site_id: site, loaded: 1, replaced: 2, companies: 1 });
    writeFileSync(file, '198.51.100.0/24,gmail.com\n');
    const refused = cli(['accounts', 'ip-ranges', 'load', '--site', site, '--file', file, '--data', dataDir]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('line 1');
    expect(query(dataDir, 'SELECT count(*) AS n FROM company_ip_ranges WHERE site_id = ?', site)).toEqual([{ n: 1 }]);
    const list = await callOk(await mcp.connect(tok.read), 'accounts_list', {});
    expect(list.accounts.map((a: any) => a.domain)).not.toContain('beta.co.uk');
    // A file without ranges clears them: the anonymous session is nobody's again (signals read per contact).
    expect(await callOk(owner, 'accounts_ip_ranges_load', { csv: 'cidr,domain,name\n' })).toEqual({ loaded: 0, replaced: 1, companies: 0 });
    const hot = await callOk(await mcp.connect(tok.read), 'accounts_hot', { days: 7 });
    expect(hot.accounts.map((a: any) => [a.domain, a.name])).toEqual([['acme.com', null]]);
    expect(hot.accounts[0].current).toMatchObject({ sessions: 2, ip_attributed_sessions: 0, known_visitors: 2, page_views: 4, high_intent_page_views: 3, conversions: 1, revenue: 200 });
    const s = await callOk(await mcp.connect(tok.read), 'accounts_signals', { account: 'acme.com', days: 7 });
    expect(s.current).toEqual(hot.accounts[0].current);
  });
});

describe('account members', () => {
  it('lists members with emails for admins only and counts their tokens', async () => {
    const r = await callOk(await mcp.connect(tok.read), 'access_members_list', {});
    expect(r.members.map((m: any) => [m.role, m.email])).toEqual([
      ['owner', null],
      ['admin', null],
    ]);
    const a = await callOk(await mcp.connect(tok.owner), 'access_members_list', {});
    expect(a.members.map((m: any) => m.email)).toEqual(['owner@localhost', 'admin.person@shop.test']);
    expect(a.members[1].live_tokens).toBe(1);
  });

  it('changes roles: only owners touch owners, never the last owner', async () => {
    const owner = await mcp.connect(tok.owner);
    const admin = await mcp.connect(tok.admin);
    const invite = await callOk(owner, 'access_member_invite', { email: 'new.member@shop.test', role: 'member' });
    expect(await callErr(admin, 'access_member_set_role', { user: invite.user_id, role: 'owner' })).toMatchObject({ code: 'insufficient_scope' });
    expect(await callOk(admin, 'access_member_set_role', { user: 'new.member@shop.test', role: 'admin' })).toEqual({ id: invite.user_id, previous_role: 'member', role: 'admin' });
    expect(await callErr(owner, 'access_member_set_role', { user: 'owner@localhost', role: 'admin' })).toMatchObject({ code: 'conflict' });
    expect(await callErr(owner, 'access_member_set_role', { user: 'nobody@shop.test', role: 'admin' })).toMatchObject({ code: 'not_found' });
    expect(query(dataDir, "SELECT role FROM users WHERE email = 'owner@localhost'")).toEqual([{ role: 'owner' }]);
    expect(await callOk(owner, 'access_member_set_role', { user: invite.user_id, role: 'owner' })).toMatchObject({ role: 'owner' });
    expect(await callOk(owner, 'access_member_set_role', { user: invite.user_id, role: 'member' })).toMatchObject({ role: 'member' });
  });

  it('removes a member and revokes their tokens; never the last owner, never the caller, refused when destructive tools are blocked', async () => {
    const owner = await mcp.connect(tok.owner);
    const invite = await callOk(owner, 'access_member_invite', { email: 'leaver@shop.test' });
    const theirs = await mcp.connect(invite.token);
    expect((await callOk(theirs, 'whoami')).scope).toBe('read');
    expect(await callErr(await mcp.connect(tok.noDestroy), 'access_member_remove', { user: invite.user_id })).toMatchObject({ code: 'insufficient_scope', details: { reason: 'block_destructive' } });
    expect(await callErr(owner, 'access_member_remove', { user: 'owner@localhost' })).toMatchObject({ code: 'conflict' });
    expect(await callOk(owner, 'access_member_remove', { user: 'leaver@shop.test' })).toEqual({ removed: invite.user_id, role: 'member', tokens_revoked: 1 });
    await expect(mcp.connect(invite.token)).rejects.toThrow();
    expect(query(dataDir, "SELECT count(*) AS n FROM users WHERE email = 'leaver@shop.test'")).toEqual([{ n: 0 }]);
    const admin = await mcp.connect(tok.admin);
    expect(await callErr(admin, 'access_member_remove', { user: 'owner@localhost' })).toMatchObject({ code: 'insufficient_scope' });
  });
});

describe('site settings and lift', () => {
  it('validates and changes the time zone, holdout share and currency', async () => {
    const owner = await mcp.connect(tok.owner);
    expect(await callErr(owner, 'sites_settings_update', { timezone: 'Mars/Olympus_Mons' })).toMatchObject({ code: 'validation_failed', details: { field: 'timezone' } });
    expect(await callErr(owner, 'sites_settings_update', { holdout_share: 0.51 })).toMatchObject({ code: 'validation_failed' });
    expect(await callErr(owner, 'sites_settings_update', { holdout_share: -0.01 })).toMatchObject({ code: 'validation_failed' });
    expect(await callErr(await mcp.connect(tok.read), 'sites_settings_update', { holdout_share: 0.1 })).toMatchObject({ code: 'insufficient_scope' });
    const r = await callOk(owner, 'sites_settings_update', { timezone: 'europe/berlin', holdout_share: 0.5 });
    expect(r).toMatchObject({ timezone: 'Europe/Berlin', holdout_share: 0.5, currency: 'USD', changed: ['timezone', 'holdout_share'] });
    expect(await callOk(await mcp.connect(tok.readRO), 'sites_settings_get')).toMatchObject({ timezone: 'Europe/Berlin', holdout_share: 0.5 });
    expect((await callOk(owner, 'sites_settings_update', { holdout_share: 0.5 })).changed).toEqual([]);
  });

  it('measures personalized against holdout visitors with the interval computed by hand', async () => {
    const now = Date.now();
    const expose = (visitor: string, holdout: number) =>
      execute(dataDir, 'INSERT INTO exposures (site_id, visitor_id, profile_id, zone_id, variant_id, experiment_id, arm_id, holdout, url, created_at) VALUES (?, ?, NULL, ?, NULL, NULL, NULL, ?, ?, ?)', site, visitor, 'zon_1', holdout, '/', now - 1000);
    for (let i = 1; i <= 4; i++) {
      expose(`pv${i}`, 0);
      expose(`hv${i}`, 1);
      await ingest('/api/events', { session_id: `ps${i}`, visitor_id: `pv${i}`, type: 'pageview', url: '/' });
      await ingest('/api/events', { session_id: `hs${i}`, visitor_id: `hv${i}`, type: 'pageview', url: '/' });
    }
    expose('mixed', 0);
    expose('mixed', 1);
    await ingest('/api/convert', { session_id: 'ps1', revenue: 100 });
    await ingest('/api/convert', { session_id: 'ps2', revenue: 50 });
    await ingest('/api/convert', { session_id: 'hs1', revenue: 40 });
    const lift = await callOk(await mcp.connect(tok.read), 'analytics_lift', { days: 1 });
    expect(lift.personalized).toEqual({ visitors: 4, converting_visitors: 2, conversion_rate: 0.5, revenue: 150, revenue_per_visitor: 37.5 });
    expect(lift.holdout).toEqual({ visitors: 4, converting_visitors: 1, conversion_rate: 0.25, revenue: 40, revenue_per_visitor: 10 });
    expect(lift.excluded_visitors).toBe(1);
    // se(ln ratio) = sqrt(0.5/2 + 0.75/1) = 1, so the interval is 2 * e^(±1.96) - 1
    expect(lift.conversion_rate_lift.relative).toBeCloseTo(1, 10);
    expect(lift.conversion_rate_lift.ci_low).toBeCloseTo(-0.71827, 4);
    expect(lift.conversion_rate_lift.ci_high).toBeCloseTo(13.19814, 4);
    expect(lift.conversion_rate_lift.significant).toBe(false);
    expect(lift.revenue_per_visitor_lift.relative).toBeCloseTo(2.75, 10);
    expect(await callErr(await mcp.connect(tok.read), 'analytics_lift', { segment_id: 'seg_nope' })).toMatchObject({ code: 'not_found' });
    // By segment: Jane (Gold) is found through her visitor identity, the exposure names no profile.
    expose('va1', 0);
    const gold = query<{ id: string }>(dataDir, "SELECT id FROM segments WHERE name = 'Gold'")[0]!.id;
    const bySeg = await callOk(await mcp.connect(tok.read), 'analytics_lift', { days: 1, segment_id: gold });
    expect(bySeg.personalized).toEqual({ visitors: 1, converting_visitors: 1, conversion_rate: 1, revenue: 200, revenue_per_visitor: 200 });
    expect(bySeg.holdout.visitors).toBe(0);
    expect(bySeg.conversion_rate_lift).toEqual({ relative: null, ci_low: null, ci_high: null, significant: false });
  });

  it('reports sessions, conversion rate and revenue per visitor per segment', async () => {
    const r = await callOk(await mcp.connect(tok.read), 'analytics_by_segment', { days: 30 });
    const gold = r.segments.find((s: any) => s.name === 'Gold');
    expect(gold).toMatchObject({ sessions: 1, visitors: 1, conversions: 1, converting_sessions: 1, conversion_rate: 1, revenue: 200, revenue_per_visitor: 200 });
    expect(r.site.sessions).toBeGreaterThan(gold.sessions);
  });
});

describe('tool discovery', () => {
  const names = (pred: (t: (typeof TOOLS)[number]) => boolean) => TOOLS.filter(pred).map((t) => t.name).sort();
  const listed = async (c: Client) => (await c.listTools()).tools.map((t) => t.name).sort();

  it('narrows tools/list by ?areas=, X-SVC-Areas, ?read_only=1 and the token, and every description names its scope', async () => {
    const all = await mcp.connect(tok.owner);
    const tools = (await all.listTools()).tools;
    expect(tools.map((t) => t.name).sort()).toEqual(names(() => true));
    for (const t of tools) expect(t.description).toContain(`Scope: ${TOOLS.find((x) => x.name === t.name)!.scope}.`);
    expect(await listed(await mcp.connect(tok.owner, { query: { areas: 'accounts,tools' } }))).toEqual(names((t) => t.area === 'accounts' || t.area === 'tools'));
    expect(await listed(await mcp.connect(tok.owner, { headers: { 'x-svc-areas': 'analytics' } }))).toEqual(names((t) => t.area === 'analytics'));
    expect(await listed(await mcp.connect(tok.owner, { query: { areas: 'accounts,analytics' }, headers: { 'x-svc-areas': 'analytics,tools' } }))).toEqual(names((t) => t.area === 'analytics'));
    expect(await listed(await mcp.connect(tok.owner, { query: { read_only: '1' } }))).toEqual(names((t) => !t.flags.changesData));
    expect(await listed(await mcp.connect(tok.readRO))).toEqual(names((t) => !t.flags.changesData));
    expect(await listed(await mcp.connect(tok.areas))).toEqual(names((t) => t.area === 'accounts' || t.area === 'tools'));
    expect(await listed(await mcp.connect(tok.areas, { query: { areas: 'accounts', read_only: 'true' } }))).toEqual(names((t) => t.area === 'accounts' && !t.flags.changesData));
  });

  it('keeps unlisted tools callable (the policy decides) and refuses an unknown area name', async () => {
    const narrow = await mcp.connect(tok.owner, { query: { areas: 'tools' } });
    expect((await callOk(narrow, 'accounts_resolve_domain', { value: 'acme.com' })).domain).toBe('acme.com');
    const res = await fetch(`${svc.url}/api/mcp?areas=acounts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tok.owner}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as any;
    expect(body.error.data).toMatchObject({ code: 'validation_failed', unknown: ['acounts'] });
  });

  it('tools_search finds tools by words and tools_describe returns the full schemas', async () => {
    const c = await mcp.connect(tok.readRO, { query: { areas: 'tools' } });
    const s = await callOk(c, 'tools_search', { query: 'hot accounts', limit: 3 });
    expect(s.total_tools).toBe(TOOLS.length);
    expect(s.tools[0]).toMatchObject({ name: 'accounts_hot', area: 'accounts', scope: 'read', allowed: true });
    expect(s.tools[0].description).toContain('Scope: read.');
    expect(s.tools.length).toBeLessThanOrEqual(3);
    const ro = await callOk(c, 'tools_search', { query: 'member', read_only: true });
    expect(ro.tools.map((t: any) => t.name)).toContain('access_members_list');
    expect(ro.tools.every((t: any) => t.flags.read_only)).toBe(true);
    const load = (await callOk(c, 'tools_search', { query: 'ip ranges load' })).tools.find((t: any) => t.name === 'accounts_ip_ranges_load');
    expect(load).toMatchObject({ scope: 'admin', allowed: false });
    const d = await callOk(c, 'tools_describe', { name: 'accounts_hot' });
    expect(d).toMatchObject({ name: 'accounts_hot', scope: 'read', area: 'accounts', allowed: true, refusal: null, flags: { read_only: true } });
    expect(Object.keys(d.input_schema.properties)).toEqual(expect.arrayContaining(['days', 'until', 'intent_threshold', 'min_sessions', 'limit']));
    expect(d.output_schema.properties.accounts.type).toBe('array');
    const rm = await callOk(c, 'tools_describe', { name: 'access_member_remove' });
    expect(rm).toMatchObject({ allowed: false, flags: { destructive: true } });
    expect(rm.refusal).toMatch(/scope|read-only/);
    expect(await callErr(c, 'tools_describe', { name: 'nope_nope' })).toMatchObject({ code: 'not_found' });
  });
});

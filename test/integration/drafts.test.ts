import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/client';
import { cleanup, cliJson, createSite, post, startSvc, tempDir, type Svc } from '../helpers/svc.js';
import { startReceiver } from '../helpers/receiver.js';
import { query } from '../helpers/db.js';
import { call, callErr, callOk, McpClients, mintToken } from '../helpers/mcp-client.js';

/**
 * Propose-only tokens through the running server: every change of who sees
 * what (segments, layout test starts, placements, zone defaults, overrides) is
 * filed as a draft with an inbox item (no members, no webhook, nothing in
 * /api/decide or the profile REST API); a person approves it with
 * inbox_approve, which propose-only tokens cannot call, and approval behaves
 * as if a normal token had made the change; rejection leaves nothing.
 */

let svc: Svc;
let dataDir: string;
let site: string;
let key: string;
let rx: Awaited<ReturnType<typeof startReceiver>>;
const mcp = new McpClients(() => svc.url);
const c = {} as Record<'admin' | 'write' | 'propose' | 'adminPropose' | 'read', Client>;
const ids = {} as Record<'gold' | 'page' | 'cDefault' | 'cGold' | 'zone' | 'variant' | 'seg' | 'segDraft' | 'placement' | 'exp' | 'arm', string>;
const PRICING = 'https://shop.example/pricing';

const count = (sql: string, ...params: unknown[]) => Number(query<{ n: number }>(dataDir, sql, ...params)[0]!.n);
const outboxOf = (type: string) => count('SELECT count(*) AS n FROM outbox WHERE event_type = ?', type);
const membersOf = (segmentId: string) => count('SELECT count(*) AS n FROM segment_members WHERE segment_id = ?', segmentId);

async function decide(visitorId: string): Promise<any> {
  const u = new URL(`${svc.url}/api/decide`);
  u.searchParams.set('site_id', site);
  u.searchParams.set('visitor_id', visitorId);
  u.searchParams.set('url', PRICING);
  const res = await fetch(u);
  expect(res.status).toBe(200);
  return ((await res.json()) as { zones: any[] }).zones.find((z) => z.zone_id === ids.zone);
}

const pulse = (path: string) => fetch(`${svc.url}/api/pulse/v1/${path}`, { headers: { authorization: `Bearer ${key}` } });

/** Files a change as the propose-only token: the tool answers with the object as it stands and the draft. */
async function propose(name: string, args: Record<string, unknown>, client = c.propose): Promise<any> {
  const r = await callOk(client, name, args);
  expect(r.draft, `${name} should be filed as a draft`).toMatchObject({ status: 'pending', proposed_by: expect.stringMatching(/^token:/), inbox_item_id: expect.stringMatching(/^inbox_/) });
  return r;
}

/** Approves a draft's inbox item as a person (the admin token) and returns the applied draft. */
async function approve(draft: { inbox_item_id: string; id: string }, client = c.admin): Promise<any> {
  const r = await callOk(client, 'inbox_approve', { id: draft.inbox_item_id });
  expect(r.item).toMatchObject({ kind: 'draft', status: 'approved', draft_id: draft.id });
  expect(r.draft.status).toBe('approved');
  return r.draft;
}

beforeAll(async () => {
  dataDir = tempDir();
  site = createSite(dataDir);
  key = cliJson<{ key: string }>(['key', 'mint', '--site', site, '--scopes', 'profile:read,segment:read', '--data', dataDir]).key;
  const tokens = {
    admin: mintToken(dataDir, site, ['--scope', 'admin']),
    write: mintToken(dataDir, site, ['--scope', 'write']),
    propose: mintToken(dataDir, site, ['--scope', 'write', '--propose-only', '--block-destructive']),
    adminPropose: mintToken(dataDir, site, ['--scope', 'admin', '--propose-only']),
    read: mintToken(dataDir, site, ['--scope', 'read']),
  };
  svc = await startSvc({ dataDir, args: ['--allow-private-destinations'], env: { SVC_WEBHOOK_POLL_MS: '50' } });
  for (const k of Object.keys(tokens) as (keyof typeof tokens)[]) c[k] = await mcp.connect(tokens[k]);
  rx = await startReceiver();
  await callOk(c.admin, 'webhooks_create', { url: `${rx.url}/hook`, events: ['segment.changed'], secret: 'a-long-enough-secret' });
  // A gold visitor, and the page, zone and published variant the web drafts work with.
  const r = await post(`${svc.url}/api/identify`, { site_id: site, session_id: 's-gold', visitor_id: 'v-gold', traits: { plan: 'gold' } });
  ids.gold = (r.body as { profile_id: string }).profile_id;
  ids.page = (await callOk(c.write, 'pages_create', { name: 'Pricing', match_type: 'exact', pattern: '/pricing' })).id;
  ids.cDefault = (await callOk(c.write, 'content_create', { name: 'Default', kind: 'html', body: '<h1>Welcome</h1>' })).id;
  ids.cGold = (await callOk(c.write, 'content_create', { name: 'Gold', kind: 'html', body: '<h1>Gold offer</h1>' })).id;
  ids.zone = (await callOk(c.write, 'zones_create', { page_id: ids.page, name: 'hero', selector: '#hero', default_content_id: ids.cDefault })).id;
  ids.variant = (await callOk(c.write, 'variants_create_draft', { zone_id: ids.zone, content_id: ids.cGold, name: 'Gold' })).id;
  await callOk(c.write, 'variants_approve', { id: ids.variant });
  await callOk(c.write, 'variants_publish', { id: ids.variant });
});

afterAll(async () => {
  await mcp.closeAll();
  await svc?.stop();
  await rx?.close();
  cleanup(dataDir);
});

describe('segments under propose-only', () => {
  it('creates a draft segment: no members, no webhook, not in the profile REST API, with an inbox item', async () => {
    const changed = outboxOf('segment.changed');
    const r = await propose('segments_create', { name: 'Gold plan', rule: { trait: 'plan', op: 'eq', value: 'gold' } });
    ids.seg = r.id;
    ids.segDraft = r.draft.id;
    expect(r).toMatchObject({ status: 'draft', members: 0, name: 'Gold plan' });
    expect(r.draft).toMatchObject({ kind: 'segment_create', target_id: r.id, proposed: { name: 'Gold plan', rule: { trait: 'plan', op: 'eq', value: 'gold' }, priority: 0 } });
    expect(membersOf(r.id)).toBe(0);
    expect(outboxOf('segment.changed')).toBe(changed);
    expect((await pulse(`segment/${r.id}/members`)).status).toBe(404);
    const snapshot = (await (await pulse(`profile?profile_id=${ids.gold}`)).json()) as any;
    expect(JSON.stringify(snapshot)).not.toContain(r.id);
    // Read tools show it as a draft, and the inbox holds it for a person.
    expect((await callOk(c.read, 'segments_get', { id: r.id })).status).toBe('draft');
    const inbox = await callOk(c.read, 'inbox_list', {});
    expect(inbox.items.map((i: any) => i.id)).toContain(r.draft.inbox_item_id);
    const item = await callOk(c.propose, 'inbox_get', { id: r.draft.inbox_item_id });
    expect(item).toMatchObject({ item: { kind: 'draft', status: 'pending', draft_id: r.draft.id }, draft: { id: r.draft.id, kind: 'segment_create' }, finding: null, proposal: null });
    // A live segment may not build on a draft one; another draft may.
    expect((await callErr(c.write, 'segments_create', { name: 'On a draft', rule: { segment: r.id } })).code).toBe('validation_failed');
  });

  it('lets draft variants name the draft segment, and edits of the draft follow into the proposal', async () => {
    const v = await callOk(c.propose, 'variants_create_draft', { zone_id: ids.zone, content_id: ids.cGold, name: 'For gold', segment_id: ids.seg });
    expect(v.segment_id).toBe(ids.seg);
    const edited = await callOk(c.propose, 'segments_update', { id: ids.seg, priority: 3 });
    expect(edited).toMatchObject({ status: 'draft', priority: 3, members: 0, draft: { id: ids.segDraft, proposed: { priority: 3 } } });
    expect(count('SELECT count(*) AS n FROM drafts WHERE target_id = ?', ids.seg)).toBe(1);
  });

  it('refuses approval and rejection to propose-only tokens', async () => {
    const draft = (await callOk(c.read, 'inbox_get', { id: await draftItem(ids.segDraft) })).draft;
    for (const client of [c.propose, c.adminPropose]) {
      const e = await callErr(client, 'inbox_approve', { id: draft.inbox_item_id });
      expect(e).toMatchObject({ code: 'insufficient_scope', details: { reason: 'propose_only' } });
      expect((await callErr(client, 'inbox_dismiss', { id: draft.inbox_item_id, reason: 'no' })).details.reason).toBe('propose_only');
    }
    expect((await callErr(c.read, 'inbox_approve', { id: draft.inbox_item_id })).code).toBe('insufficient_scope');
    expect((await callOk(c.read, 'segments_get', { id: ids.seg })).status).toBe('draft');
  });

  it('approval by an admin makes it live exactly as proposed: members, segment.changed webhook, profile REST API', async () => {
    const applied = await approve({ id: ids.segDraft, inbox_item_id: await draftItem(ids.segDraft) });
    expect(applied.result).toMatchObject({ segment_id: ids.seg, status: 'live', members: 1 });
    expect(await callOk(c.read, 'segments_get', { id: ids.seg })).toMatchObject({ status: 'live', members: 1, priority: 3 });
    const hooks = await rx.waitFor(1, 20_000, (r) => r.headers['x-svc-event'] === 'segment.changed');
    expect(JSON.parse(hooks[0]!.body)).toMatchObject({ event: 'segment.changed', profile_id: ids.gold, segment: ids.seg, previous_segment: null });
    const page = (await (await pulse(`segment/${ids.seg}/members`)).json()) as any;
    expect(page.profile_ids).toEqual([ids.gold]);
    // Decided once: a second approval is a conflict.
    expect((await callErr(c.admin, 'inbox_approve', { id: await draftItem(ids.segDraft) })).code).toBe('conflict');
  });

  it('files a change of a live segment; the rule holds until a write token approves it', async () => {
    const r = await propose('segments_update', { id: ids.seg, rule: { trait: 'plan', op: 'eq', value: 'silver' } });
    expect(r).toMatchObject({ status: 'live', members: 1, rule: { trait: 'plan', op: 'eq', value: 'gold' } });
    expect(r.draft).toMatchObject({ kind: 'segment_update', target_id: ids.seg, proposed: { rule: { trait: 'plan', op: 'eq', value: 'silver' } } });
    // The same proposal again is the same draft, not a second one.
    expect((await propose('segments_update', { id: ids.seg, rule: { trait: 'plan', op: 'eq', value: 'silver' } })).draft.id).toBe(r.draft.id);
    expect(membersOf(ids.seg)).toBe(1);
    await approve(r.draft, c.write);
    expect(membersOf(ids.seg)).toBe(0);
    expect((await callOk(c.read, 'segments_get', { id: ids.seg })).rule).toEqual({ trait: 'plan', op: 'eq', value: 'silver' });
    const hooks = await rx.waitFor(2, 20_000, (x) => x.headers['x-svc-event'] === 'segment.changed');
    expect(JSON.parse(hooks[1]!.body)).toMatchObject({ profile_id: ids.gold, previous_segment: ids.seg, segment: null });
  });

  it('rejection leaves nothing: the proposed segment is deleted, no webhook', async () => {
    const hooks = rx.received.length;
    const r = await propose('segments_create', { name: 'Everyone gold', rule: { trait: 'plan', op: 'exists' } });
    const d = await callOk(c.admin, 'inbox_dismiss', { id: r.draft.inbox_item_id, reason: 'too broad' });
    expect(d).toMatchObject({ item: { status: 'dismissed', dismiss_reason: 'too broad' }, draft: { status: 'rejected', reason: 'too broad' } });
    expect((await callErr(c.read, 'segments_get', { id: r.id })).code).toBe('not_found');
    expect((await callErr(c.admin, 'inbox_approve', { id: r.draft.inbox_item_id })).code).toBe('conflict');
    expect(rx.received.length).toBe(hooks);
  });

  it('refuses what creating would refuse, storing nothing', async () => {
    const drafts = count('SELECT count(*) AS n FROM drafts');
    expect((await callErr(c.propose, 'segments_create', { name: 'Gold plan', rule: { trait: 'plan', op: 'exists' } })).code).toBe('conflict');
    expect((await callErr(c.propose, 'segments_create', { name: 'PII', rule: { trait: 'email', op: 'exists' } })).code).toBe('insufficient_scope');
    expect((await callErr(c.propose, 'segments_update', { id: ids.seg, rule: { segment: 'seg_missing' } })).code).toBe('validation_failed');
    expect(count('SELECT count(*) AS n FROM drafts')).toBe(drafts);
  });
});

async function draftItem(draftId: string): Promise<string> {
  const items = (await callOk(c.read, 'inbox_list', { status: 'all', limit: 500 })).items as { id: string; draft_id: string | null }[];
  return items.find((i) => i.draft_id === draftId)!.id;
}

describe('what visitors see, under propose-only', () => {
  it('files a placement: nothing in /api/decide until approved, then it applies under the id shown', async () => {
    await callOk(c.write, 'segments_update', { id: ids.seg, rule: { trait: 'plan', op: 'eq', value: 'gold' } });
    expect(membersOf(ids.seg)).toBe(1);
    const r = await propose('placements_create', { variant_id: ids.variant, segment_id: ids.seg, priority: 5 });
    expect(r).toMatchObject({ variant_id: ids.variant, segment_id: ids.seg, priority: 5, enabled: true, draft: { kind: 'placement_create', target_id: r.id } });
    expect((await callOk(c.propose, 'placements_list', { zone_id: ids.zone })).placements).toEqual([]);
    expect(await decide('v-gold')).toMatchObject({ variant_id: null, reason: 'default' });
    await approve(r.draft);
    expect((await callOk(c.read, 'placements_list', { zone_id: ids.zone })).placements.map((p: any) => p.id)).toEqual([r.id]);
    expect(await decide('v-gold')).toMatchObject({ variant_id: ids.variant, reason: 'placement', content: { body: '<h1>Gold offer</h1>' } });
    ids.placement = r.id;
  });

  it('files placement changes and deletions', async () => {
    const u = await propose('placements_update', { id: ids.placement, enabled: false });
    expect(u).toMatchObject({ id: ids.placement, enabled: true, draft: { kind: 'placement_update', proposed: { enabled: false } } });
    expect((await decide('v-gold')).variant_id).toBe(ids.variant);
    await approve(u.draft);
    expect((await decide('v-gold')).reason).toBe('default');
    await callOk(c.write, 'placements_update', { id: ids.placement, enabled: true });
    // Deleting is destructive: refused to the skill's token, which blocks destructive tools; filed for one that does not.
    expect((await callErr(c.propose, 'placements_delete', { id: ids.placement })).details.reason).toBe('block_destructive');
    const d = await propose('placements_delete', { id: ids.placement }, c.adminPropose);
    expect(d.removed).toBeNull();
    expect((await callOk(c.read, 'placements_list', { zone_id: ids.zone })).placements).toHaveLength(1);
    await approve(d.draft);
    expect((await callOk(c.read, 'placements_list', { zone_id: ids.zone })).placements).toEqual([]);
  });

  it('refuses a placement that placing would refuse (an unpublished variant), filing nothing', async () => {
    const drafts = count('SELECT count(*) AS n FROM drafts');
    const unpublished = await callOk(c.propose, 'variants_create_draft', { zone_id: ids.zone, content_id: ids.cGold, name: 'Not yet' });
    expect((await callErr(c.propose, 'placements_create', { variant_id: unpublished.id })).code).toBe('conflict');
    expect(count('SELECT count(*) AS n FROM drafts')).toBe(drafts);
  });

  it('files a zone default; a rename applies at once', async () => {
    const r = await propose('zones_update', { id: ids.zone, name: 'Hero', default_content_id: ids.cGold });
    expect(r).toMatchObject({ name: 'Hero', default_content_id: ids.cDefault, draft: { kind: 'zone_update', proposed: { default_content_id: ids.cGold } } });
    expect((await decide('v-anon')).content.body).toBe('<h1>Welcome</h1>');
    await approve(r.draft);
    expect((await decide('v-anon')).content.body).toBe('<h1>Gold offer</h1>');
    // A rename alone needs no one's approval.
    const renamed = await callOk(c.propose, 'zones_update', { id: ids.zone, name: 'hero' });
    expect(renamed.draft).toBeUndefined();
    expect(renamed.name).toBe('hero');
    // A new zone under propose-only comes without its default, which waits for approval.
    const z = await propose('zones_create', { page_id: ids.page, name: 'footer', selector: '#footer', default_content_id: ids.cDefault });
    expect(z).toMatchObject({ default_content_id: null, draft: { kind: 'zone_update', target_id: z.id } });
  });

  it('files a layout test start and resume', async () => {
    const exp = await callOk(c.write, 'experiments_create', {
      name: 'Hero test',
      zone_id: ids.zone,
      arms: [
        { label: 'Control', control: true, weight: 1 },
        { label: 'Gold', variant_id: ids.variant, weight: 1 },
      ],
      primary_metric: 'conversion',
      guardrail_metrics: [],
    });
    const r = await propose('experiments_start', { id: exp.id });
    expect(r).toMatchObject({ id: exp.id, status: 'draft', draft: { kind: 'experiment_start', target_id: exp.id } });
    expect((await decide('v-gold')).experiment_id).toBeNull();
    await approve(r.draft);
    expect((await callOk(c.read, 'experiments_get', { id: exp.id })).status).toBe('running');
    expect((await decide('v-gold')).experiment_id).toBe(exp.id);
    // Weights of a running test steer who gets which arm: filed too.
    const w = await propose('experiments_update', { id: exp.id, weights: [{ arm_id: r.arms[1].id, weight: 3 }] });
    expect(w.arms[1].weight).toBe(1);
    await approve(w.draft);
    expect((await callOk(c.read, 'experiments_get', { id: exp.id })).arms[1].weight).toBe(3);
    await callOk(c.write, 'experiments_pause', { id: exp.id });
    const resume = await propose('experiments_resume', { id: exp.id });
    expect(resume.status).toBe('paused');
    await approve(resume.draft);
    expect((await callOk(c.read, 'experiments_get', { id: exp.id })).status).toBe('running');
    ids.exp = exp.id;
    ids.arm = r.arms[0].id;
  });

  it('files override lifts and forced arms', async () => {
    await callOk(c.write, 'experiments_end', { id: ids.exp });
    const pin = await callOk(c.admin, 'overrides_publish', { kind: 'pin_zone', zone_id: ids.zone, variant_id: ids.variant });
    const lift = await propose('overrides_lift', { id: pin.id });
    expect(lift).toMatchObject({ id: pin.id, active: true, draft: { kind: 'override_lift', target_id: pin.id } });
    expect((await decide('v-anon')).reason).toBe('override_pin_zone');
    await approve(lift.draft);
    expect((await callOk(c.read, 'overrides_list', {})).overrides.map((o: any) => o.id)).not.toContain(pin.id);
    expect((await decide('v-anon')).reason).not.toBe('override_pin_zone');
    const force = await propose('overrides_force_arm', { experiment_id: ids.exp, arm_id: ids.arm, visitor_id: 'v-qa' }, c.adminPropose);
    expect(force.draft).toMatchObject({ kind: 'override_force_arm', target_id: force.id });
    expect((await callOk(c.read, 'overrides_list', {})).overrides.map((o: any) => o.id)).not.toContain(force.id);
    await approve(force.draft);
    expect((await callOk(c.read, 'overrides_list', {})).overrides.map((o: any) => o.id)).toContain(force.id);
  });

  it('keeps a draft pending when it no longer applies', async () => {
    const pin = await callOk(c.admin, 'overrides_publish', { kind: 'personalization_off', page_id: ids.page });
    const lift = await propose('overrides_lift', { id: pin.id });
    await callOk(c.write, 'overrides_lift', { id: pin.id });
    expect((await callErr(c.admin, 'inbox_approve', { id: lift.draft.inbox_item_id })).code).toBe('conflict');
    expect((await callOk(c.read, 'inbox_get', { id: lift.draft.inbox_item_id })).draft.status).toBe('pending');
  });

  it('leaves read tools and non-exposure writes alone', async () => {
    for (const [name, args] of [
      ['segments_list', {}],
      ['placements_list', {}],
      ['zones_get', { id: ids.zone }],
      ['experiments_list', {}],
      ['overrides_list', {}],
      ['placements_preview_for_visitor', { visitor_id: 'v-gold', url: PRICING }],
    ] as const) {
      const r = await call(c.propose, name, args);
      expect(r.isError, name).toBeFalsy();
      expect(r.structuredContent.draft, name).toBeUndefined();
    }
    const content = await callOk(c.propose, 'content_create', { name: 'Idea', kind: 'html', body: '<p>idea</p>' });
    expect(content.draft).toBeUndefined();
  });
});

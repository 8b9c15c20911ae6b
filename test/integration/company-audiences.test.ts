import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/client';
import { cleanup, cliJson, createSite, post, startSvc, tempDir, type Svc } from '../helpers/svc.js';
import { query } from '../helpers/db.js';
import { callErr, callOk, McpClients, mintToken } from '../helpers/mcp-client.js';

/**
 * The company rule node through the running server: a read token without
 * personal-data rights targets visitors from companies, by their corporate
 * email's domain or by a loaded IP range; free mail never counts, and a domain
 * only one known person has never matches (and starts matching when a second
 * person arrives, stops when one is erased).
 */

let svc: Svc;
let dataDir: string;
let site: string;
let key: string;
const mcp = new McpClients(() => svc.url);
const c = {} as Record<'admin' | 'write' | 'read', Client>;
const profiles: Record<string, string> = {};

const ingest = (p: string, body: Record<string, unknown>, ip = '192.0.2.1') => post(`${svc.url}${p}`, { site_id: site, ...body }, { 'x-forwarded-for': ip });

async function identify(name: string, email: string, ip?: string): Promise<string> {
  const r = await ingest('/api/identify', { session_id: `s-${name}`, visitor_id: `v-${name}`, traits: { email, plan: 'trial' } }, ip);
  expect(r.status).toBeLessThan(300);
  profiles[name] = (r.body as { profile_id: string }).profile_id;
  return profiles[name];
}

/** A pageview in a new session of the visitor, from `ip` (a session keeps the address of its first request). */
async function visit(name: string, ip: string): Promise<string> {
  const r = await ingest('/api/events', { session_id: `s-${name}-${ip}`, visitor_id: `v-${name}`, type: 'pageview', url: 'https://shop.example/pricing' }, ip);
  expect(r.status).toBe(201);
  profiles[name] = (r.body as { profile_id: string }).profile_id;
  return profiles[name];
}

const companyIn = (...value: string[]) => ({ company: { op: 'in', value } });
const preview = async (client: Client, rule: unknown) => (await callOk(client, 'segments_preview', { rule })).matches as number;
const members = (segmentId: string) =>
  query<{ profile_id: string }>(dataDir, 'SELECT profile_id FROM segment_members WHERE segment_id = ? ORDER BY profile_id', segmentId).map((r) => r.profile_id);
const ids = (...names: string[]) => names.map((n) => profiles[n]!).sort();

async function pulseQuery(rule: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${svc.url}/api/pulse/v1/profiles/query`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ rule }),
  });
  return { status: res.status, body: await res.json() };
}

beforeAll(async () => {
  dataDir = tempDir();
  site = createSite(dataDir);
  key = cliJson<{ key: string }>(['key', 'mint', '--site', site, '--scopes', 'profile:read,segment:read', '--data', dataDir]).key;
  const tokens = {
    admin: mintToken(dataDir, site, ['--scope', 'admin']),
    write: mintToken(dataDir, site, ['--scope', 'write']),
    read: mintToken(dataDir, site, ['--scope', 'read', '--read-only']),
  };
  svc = await startSvc({ dataDir, env: { SVC_TRUST_PROXY: '1' } });
  for (const k of Object.keys(tokens) as (keyof typeof tokens)[]) c[k] = await mcp.connect(tokens[k]);
  await identify('alice', 'alice@acme.com');
  await identify('bob', 'Bob@Mail.Acme.com'); // a subdomain: the registrable domain is the company
  await identify('sam', 'sam@solo.dev'); // the only known person of solo.dev
  await identify('gus', 'gus@gmail.com'); // free mail: no company
  await identify('gia', 'gia@proton.me'); // free mail (our own list)
});

afterAll(async () => {
  await mcp.closeAll();
  await svc?.stop();
  cleanup(dataDir);
});

describe('the company node', () => {
  it('lets a read token without personal-data rights target a corporate domain from email', async () => {
    expect(await preview(c.read, companyIn('acme.com'))).toBe(2);
    expect(await preview(c.read, { company: { op: 'eq', value: 'https://www.ACME.com/pricing' } })).toBe(2);
    // The same token may not test the email itself: that is personal data (admin scope).
    expect((await callErr(c.read, 'segments_preview', { rule: { trait: 'email', op: 'contains', value: '@acme.com' } })).code).toBe('insufficient_scope');
    // exists: any company-level domain (acme.com twice; solo.dev is one person, gmail.com and proton.me are free mail).
    expect(await preview(c.read, { company: { op: 'exists' } })).toBe(2);
    expect(await preview(c.read, { not: { company: { op: 'exists' } } })).toBe(3);
  });

  it('never matches a domain only one known person has, whoever asks', async () => {
    expect(await preview(c.read, companyIn('solo.dev'))).toBe(0);
    expect(await preview(c.admin, companyIn('solo.dev', 'acme.com'))).toBe(2);
  });

  it('refuses free-mail domains, email addresses and non-domains, naming the node', async () => {
    const free = await callErr(c.read, 'segments_preview', { rule: companyIn('acme.com', 'gmail.com') });
    expect(free.code).toBe('validation_failed');
    expect(free.message).toContain('free-mail');
    expect(free.details.field).toBe('rule.company.value[1]');
    const email = await callErr(c.read, 'segments_preview', { rule: { company: { op: 'eq', value: 'alice@acme.com' } } });
    expect(email.message).toContain('not an email address');
    expect((await callErr(c.read, 'segments_preview', { rule: { company: { op: 'eq', value: '10.0.0.1' } } })).code).toBe('validation_failed');
    expect((await callErr(c.read, 'segments_preview', { rule: { company: { op: 'in', value: 'acme.com' } } })).code).toBe('validation_failed');
    expect((await callErr(c.read, 'segments_preview', { rule: { company: { op: 'exists', value: 'acme.com' } } })).code).toBe('validation_failed');
    const n = query<{ n: number }>(dataDir, 'SELECT count(*) AS n FROM segments')[0]!.n;
    expect((await callErr(c.write, 'segments_create', { name: 'Free', rule: companyIn('gmail.com') })).code).toBe('validation_failed');
    expect(query<{ n: number }>(dataDir, 'SELECT count(*) AS n FROM segments')[0]!.n).toBe(n);
  });

  it('stores the registrable domain and computes members; the profile REST API answers it without profile:read:pii', async () => {
    const seg = await callOk(c.write, 'segments_create', { name: 'Acme visitors', rule: companyIn('https://www.acme.com/') });
    expect(seg.rule).toEqual(companyIn('acme.com'));
    expect(seg.members).toBe(2);
    expect(members(seg.id)).toEqual(ids('alice', 'bob'));
    const q = await pulseQuery(companyIn('acme.com'));
    expect(q.status).toBe(200);
    expect(q.body.profile_ids).toEqual(ids('alice', 'bob'));
    // The email trait still needs profile:read:pii.
    expect((await pulseQuery({ trait: 'email', op: 'contains', value: 'acme' })).status).toBe(403);
    // Nothing of the rule names a person.
    expect(JSON.stringify(await callOk(c.read, 'segments_get', { id: seg.id }))).not.toContain('@');
  });

  it('matches a company from a loaded IP range for visitors without a corporate email; email wins over the range', async () => {
    const admin = c.admin;
    await callOk(admin, 'accounts_ip_ranges_load', { csv: 'cidr,domain,name\n203.0.113.0/24,initech.net,Initech\n198.51.100.0/24,acme.com,Acme\n' });
    const seg = await callOk(c.write, 'segments_create', { name: 'Initech visitors', rule: companyIn('initech.net') });
    expect(seg.members).toBe(0);
    await visit('anon1', '203.0.113.7'); // anonymous, from Initech's network
    await visit('gus', '203.0.113.8'); // free mail: the range decides
    await visit('alice', '203.0.113.9'); // corporate email: stays acme.com
    await visit('anon2', '192.0.2.44'); // no range
    expect(members(seg.id)).toEqual(ids('anon1', 'gus'));
    expect(await preview(c.read, companyIn('initech.net'))).toBe(2);
    expect((await pulseQuery(companyIn('initech.net'))).body.profile_ids).toEqual(ids('anon1', 'gus'));
    // An anonymous visitor from Acme's range joins the Acme audience.
    await visit('anon3', '198.51.100.3');
    expect(await preview(c.read, companyIn('acme.com'))).toBe(3);
    // A later session elsewhere keeps the company of the most recent session in a range.
    await ingest('/api/events', { session_id: 's-anon1-home', visitor_id: 'v-anon1', type: 'pageview', url: 'https://shop.example/' }, '192.0.2.99');
    expect(members(seg.id)).toEqual(ids('anon1', 'gus'));
  });

  it('re-evaluates on a range reload', async () => {
    const initech = query<{ id: string }>(dataDir, "SELECT id FROM segments WHERE name = 'Initech visitors'")[0]!.id;
    const umbrella = await callOk(c.write, 'segments_create', { name: 'Umbrella visitors', rule: companyIn('umbrella.com') });
    expect(umbrella.members).toBe(0);
    await callOk(c.admin, 'accounts_ip_ranges_load', { csv: '203.0.113.0/25,umbrella.com\n198.51.100.0/24,acme.com\n' });
    expect(members(initech)).toEqual([]);
    expect(members(umbrella.id)).toEqual(ids('anon1', 'gus'));
  });

  it('starts matching a domain when a second person has it, and stops when one is erased', async () => {
    const seg = await callOk(c.write, 'segments_create', { name: 'Solo visitors', rule: companyIn('solo.dev') });
    expect(seg.members).toBe(0);
    const changedBefore = query<{ n: number }>(dataDir, "SELECT count(*) AS n FROM outbox WHERE event_type = 'segment.changed'")[0]!.n;
    await identify('sue', 'sue@solo.dev');
    expect(members(seg.id)).toEqual(ids('sam', 'sue'));
    // Both primary segments moved: segment.changed for each, as for any membership change.
    const changed = query<{ payload: string }>(dataDir, "SELECT payload FROM outbox WHERE event_type = 'segment.changed'")
      .slice(changedBefore)
      .map((r) => JSON.parse(r.payload) as { profile_id: string; segment: string });
    expect(changed.filter((p) => p.segment === seg.id).map((p) => p.profile_id).sort()).toEqual(ids('sam', 'sue'));
    await callOk(c.admin, 'profiles_erase', { by: 'profile_id', value: profiles.sue! });
    expect(members(seg.id)).toEqual([]);
    expect(await preview(c.read, companyIn('solo.dev'))).toBe(0);
  });

  it('follows an email change and a merge', async () => {
    const acme = query<{ id: string }>(dataDir, "SELECT id FROM segments WHERE name = 'Acme visitors'")[0]!.id;
    // gus gets a corporate address as well: the corporate one is his company now.
    await ingest('/api/identify', { session_id: 's-gus', visitor_id: 'v-gus', traits: { email: 'gus@acme.com' } });
    expect(members(acme)).toContain(profiles.gus);
    // anon3 (acme by range) merges into alice: one profile, still acme.
    const before = members(acme).length;
    await callOk(c.write, 'profiles_merge', { from_profile_id: profiles.anon3!, into_profile_id: profiles.alice! });
    expect(members(acme)).not.toContain(profiles.anon3);
    expect(members(acme)).toHaveLength(before - 1);
  });

  it('indexes data written in bulk (svc seed) when a company rule is first used', () => {
    const seeded = createSite(dataDir, 'Seeded');
    cliJson(['seed', '--site', seeded, '--profiles', '60', '--seed', '7', '--data', dataDir]);
    expect(query<{ n: number }>(dataDir, 'SELECT count(*) AS n FROM profile_companies WHERE site_id = ?', seeded)[0]!.n).toBe(0);
    // The seed's addresses are at example.com (and its mail. subdomain), example.org and example.net: companies of many people each.
    const emails = query<{ value: string; profile_id: string }>(dataDir, "SELECT value, profile_id FROM identities WHERE site_id = ? AND kind = 'email'", seeded);
    const expected = new Set(emails.filter((e) => /@(mail\.)?example\.com$/.test(e.value)).map((e) => e.profile_id));
    expect(expected.size).toBeGreaterThan(1);
    const seg = cliJson<{ id: string; members: number }>(['segment', 'create', '--site', seeded, '--name', 'Example Inc', '--rule', JSON.stringify(companyIn('example.com')), '--data', dataDir]);
    expect(seg.members).toBe(expected.size);
    expect(members(seg.id)).toEqual([...expected].sort());
  });
});

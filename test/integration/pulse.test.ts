import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, cli, cliJson, createSite, post, startSvc, tempDir, type Svc } from '../helpers/svc.js';
import { execute, query } from '../helpers/db.js';

let svc: Svc;
let dataDir: string;
let site: string;
let otherSite: string;
const keys = { read: '', pii: '', seg: '', segpii: '', hooks: '', hooks2: '', other: '' };

function mint(siteId: string, scopes: string): string {
  return cliJson<{ key: string }>(['key', 'mint', '--site', siteId, '--scopes', scopes, '--data', dataDir]).key;
}

async function get(pathAndQuery: string, key?: string) {
  const res = await fetch(`${svc.url}/api/pulse/v1${pathAndQuery}`, { headers: key ? { authorization: `Bearer ${key}` } : {} });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: text ? JSON.parse(text) : null };
}

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

beforeAll(async () => {
  dataDir = tempDir();
  site = createSite(dataDir);
  otherSite = createSite(dataDir, 'Other');
  keys.read = mint(site, 'profile:read');
  keys.pii = mint(site, 'profile:read,profile:read:pii');
  keys.seg = mint(site, 'segment:read');
  keys.segpii = mint(site, 'segment:read,profile:read:pii');
  keys.hooks = mint(site, 'webhooks:manage');
  keys.hooks2 = mint(site, 'webhooks:manage');
  keys.other = mint(otherSite, 'profile:read,profile:read:pii,segment:read');
  svc = await startSvc({ dataDir, args: ['--allow-private-destinations'], env: { SVC_WEBHOOK_POLL_MS: '50' } });
  await post(`${svc.url}/api/events`, { site_id: site, session_id: 'p-s1', visitor_id: 'p-v1', type: 'pageview' });
  await post(`${svc.url}/api/identify`, {
    site_id: site,
    session_id: 'p-s1',
    visitor_id: 'p-v1',
    traits: { email: 'Jane.Doe@Example.com', phone: '+44 20 7946 0000', name: 'Jane Doe', external_id: 'crm-7', plan: 'pro', nickname: 'JD' },
  });
  await post(`${svc.url}/api/convert`, { site_id: site, session_id: 'p-s1', revenue: 42.5 });
});

afterAll(async () => {
  await svc.stop();
  cleanup(dataDir);
});

describe('API keys', () => {
  it('shows the plaintext once and stores only its hash', () => {
    expect(keys.read).toMatch(/^pls_live_[A-Za-z0-9_-]{32}$/);
    const list = cliJson<{ hint: string; scopes: string[] }[]>(['key', 'list', '--site', site, '--data', dataDir]);
    expect(list).toHaveLength(6);
    expect(JSON.stringify(list)).not.toContain(keys.read.slice(9));
    const rows = query<Record<string, unknown>>(dataDir, 'SELECT * FROM api_keys');
    const dump = JSON.stringify(rows);
    for (const k of Object.values(keys)) {
      expect(dump).not.toContain(k);
      expect(dump).toContain(sha(k));
    }
  });

  it('refuses missing, malformed, unknown and revoked keys with 401', async () => {
    expect((await get('/profile?profile_id=x')).status).toBe(401);
    const r = await get('/profile?profile_id=x', 'nonsense');
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('unauthorized');
    expect(r.headers.get('www-authenticate')).toContain('Bearer');
    expect((await get('/profile?profile_id=x', 'pls_live_' + 'A'.repeat(32))).status).toBe(401);
    const k = mint(site, 'profile:read');
    expect((await get('/profile?visitor_id=p-v1', k)).status).toBe(200);
    const id = cliJson<{ id: string; hint: string }[]>(['key', 'list', '--site', site, '--data', dataDir]).find((x) => k.startsWith(x.hint.slice(0, -1)))!.id;
    expect(cli(['key', 'revoke', id, '--data', dataDir]).code).toBe(0);
    const after = await get('/profile?visitor_id=p-v1', k);
    expect(after.status).toBe(401);
    expect(after.body.error.message).toContain('revoked');
  });
});

describe('GET /profile', () => {
  it('finds the same profile by every identifier', async () => {
    const byVisitor = await get('/profile?visitor_id=p-v1', keys.read);
    expect(byVisitor.status).toBe(200);
    const id = byVisitor.body.profile_id;
    for (const q of [
      `profile_id=${id}`,
      'email=%20JANE.DOE@example.com%20',
      'external_id=crm-7',
      `email_sha256=${sha('jane.doe@example.com')}`,
      `phone_sha256=${sha('442079460000')}`,
    ]) {
      const r = await get(`/profile?${q}`, keys.read);
      expect(r.status, q).toBe(200);
      expect(r.body.profile_id).toBe(id);
    }
  });

  it('holds no plaintext personal data without profile:read:pii, and holds it with', async () => {
    const r = await get('/profile?external_id=crm-7', keys.read);
    for (const needle of ['jane', 'Jane', '7946', '"JD"', '"pro"']) expect(r.text).not.toContain(needle);
    expect(r.body.identity).toMatchObject({ known: true, visitor_ids: ['p-v1'], external_ids: ['crm-7'], email_sha256: [sha('jane.doe@example.com')] });
    expect(r.body.identity.trait_keys).toEqual(['email', 'external_id', 'name', 'nickname', 'phone', 'plan']);
    expect(r.body.activity).toMatchObject({ sessions: 1, events: 1, conversions: 1, revenue: 42.5 });
    expect(r.body.meta).toMatchObject({ site_id: site, pii: false });
    const p = await get('/profile?external_id=crm-7', keys.pii);
    expect(p.body.identity).toMatchObject({ email: 'jane.doe@example.com', phone: '+44 20 7946 0000', name: 'Jane Doe' });
    expect(p.body.identity.traits.nickname).toBe('JD');
    expect(p.body.meta.pii).toBe(true);
  });

  it('answers 403 insufficient_scope when personal data is demanded without the scope, or the scope is missing', async () => {
    const r = await get('/profile?external_id=crm-7&include_pii=true', keys.read);
    expect(r.status).toBe(403);
    expect(r.body.error).toMatchObject({ code: 'insufficient_scope', details: { required: 'profile:read:pii' } });
    const noScope = await get('/profile?external_id=crm-7', keys.seg);
    expect(noScope.status).toBe(403);
    // The route is named as it was when the name was written per request (it is now written once per route).
    expect(noScope.body.error).toMatchObject({ code: 'insufficient_scope', message: 'GET /api/pulse/v1/profile requires the profile:read scope' });
    const optOut = await get('/profile?external_id=crm-7&include_pii=false', keys.pii);
    expect(optOut.text).not.toContain('jane');
  });

  it.each(['', 'visitor_id=p-v1&external_id=crm-7', 'email_sha256=XYZ', 'bogus=1', 'visitor_id='])('400 bad_request for %j', async (q) => {
    const r = await get(`/profile?${q}`, keys.read);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('bad_request');
  });

  it('404 for no match and for another site\'s profile', async () => {
    expect((await get('/profile?visitor_id=nobody', keys.read)).body.error.code).toBe('not_found');
    expect((await get('/profile?visitor_id=p-v1', keys.other)).status).toBe(404);
    expect((await get('/profile?email=jane.doe@example.com', keys.other)).status).toBe(404);
  });

  it("gives revenue in the site's currency and other currencies apart, never added together", async () => {
    await post(`${svc.url}/api/events`, { site_id: site, session_id: 'cur-s1', visitor_id: 'cur-v1', type: 'pageview' });
    await post(`${svc.url}/api/convert`, { site_id: site, session_id: 'cur-s1', revenue: 10 });
    const before = await get('/profile?visitor_id=cur-v1', keys.read);
    expect(before.body.activity).toMatchObject({ conversions: 1, revenue: 10, currency: 'USD', revenue_other_currencies: [] });
    // Conversions recorded before the site's currency changed keep the currency they were made in.
    for (const [id, revenue, currency] of [['cnv_cur_eur', 99.5, 'EUR'], ['cnv_cur_gbp', 3, 'GBP'], ['cnv_cur_eur2', 0.5, 'EUR']] as const) {
      execute(
        dataDir,
        "INSERT INTO conversions (id, site_id, session_id, profile_id, revenue, currency, line_items, created_at) VALUES (?, ?, 'cur-s1', ?, ?, ?, '[]', ?)",
        id, site, before.body.profile_id, revenue, currency, Date.now() - 86_400_000,
      );
    }
    const after = await get('/profile?visitor_id=cur-v1', keys.read);
    expect(after.body.activity).toMatchObject({
      conversions: 4,
      revenue: 10,
      currency: 'USD',
      revenue_other_currencies: [
        { currency: 'EUR', revenue: 100 },
        { currency: 'GBP', revenue: 3 },
      ],
    });
  });
});

describe('segments, members and profiles/query', () => {
  let segmentId: string;
  it('creates a segment, emits segment.changed, and pages its members without repeats or skips while profiles are added', async () => {
    for (let i = 0; i < 25; i++) {
      await post(`${svc.url}/api/identify`, { site_id: site, session_id: `m-${i}`, traits: { plan: 'gold', n: String(i) } });
    }
    const seg = cliJson<{ id: string; members: number }>([
      'segment', 'create', '--site', site, '--name', 'Gold', '--priority', '5', '--rule', '{"trait":"plan","op":"eq","value":"gold"}', '--data', dataDir,
    ]);
    segmentId = seg.id;
    expect(seg.members).toBe(25);
    const changed = query<{ payload: string }>(dataDir, "SELECT payload FROM outbox WHERE event_type = 'segment.changed'");
    expect(changed.length).toBeGreaterThanOrEqual(25);
    expect(JSON.parse(changed[0]!.payload)).toMatchObject({ event: 'segment.changed', previous_segment: null, segment: seg.id });

    const seen: string[] = [];
    let cursor: string | null = null;
    let added = 0;
    do {
      const r: { status: number; body: any } = await get(`/segment/${segmentId}/members?limit=10${cursor ? `&cursor=${cursor}` : ''}`, keys.seg);
      expect(r.status).toBe(200);
      seen.push(...r.body.profile_ids);
      cursor = r.body.next_cursor;
      // new members arrive while paging (the server recomputes membership on identify)
      await post(`${svc.url}/api/identify`, { site_id: site, session_id: `late-${added++}`, traits: { plan: 'gold' } });
    } while (cursor);
    expect(new Set(seen).size).toBe(seen.length);
    const original = query<{ profile_id: string }>(dataDir, "SELECT profile_id FROM segment_members WHERE segment_id = ? ORDER BY profile_id", segmentId).map((r) => r.profile_id);
    expect(original.length).toBe(25 + added);
    const firstTwentyFive = query<{ id: string }>(dataDir, "SELECT p.id FROM profiles p WHERE json_extract(p.traits, '$.n') IS NOT NULL AND p.site_id = ?", site).map((r) => r.id);
    for (const id of firstTwentyFive) expect(seen).toContain(id);
  });

  it('validates limit and cursor and hides other sites\' segments', async () => {
    for (const q of ['limit=0', 'limit=1001', 'limit=abc', 'cursor=garbage']) {
      const r = await get(`/segment/${segmentId}/members?${q}`, keys.seg);
      expect(r.status, q).toBe(400);
    }
    expect((await get(`/segment/${segmentId}/members`, keys.other)).status).toBe(404);
    expect((await get(`/segment/seg_missing/members`, keys.seg)).status).toBe(404);
  });

  it('runs profiles/query with the rule language and refuses personal-data rules without the pii scope', async () => {
    const q = async (body: unknown, key = keys.seg) => {
      const res = await fetch(`${svc.url}/api/pulse/v1/profiles/query`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    const r = await q({ rule: { all: [{ trait: 'plan', op: 'eq', value: 'gold' }, { trait: 'n', op: 'lt', value: 5 }] }, limit: 3 });
    expect(r.status).toBe(200);
    expect(r.body.profile_ids).toHaveLength(3);
    const r2 = await q({ rule: { all: [{ trait: 'plan', op: 'eq', value: 'gold' }, { trait: 'n', op: 'lt', value: 5 }] }, limit: 3, cursor: r.body.next_cursor });
    expect(r2.body.profile_ids).toHaveLength(2);
    expect(r2.body.next_cursor).toBeNull();
    const bad = await q({ rule: { all: [{ trait: 'plan', op: 'eq', value: 'gold' }, { trait: 'n', op: 'bogus', value: 5 }] } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.field).toContain('all[1]');
    // Numbers a JSON consumer cannot keep are refused by name, as in ingestion bodies.
    for (const [raw, field] of [
      ['{"rule":{"trait":"n","op":"lt","value":1e400}}', 'rule.value'],
      ['{"rule":{"trait":"n","op":"lt","value":5},"limit":123456789012345678901}', 'limit'],
    ] as const) {
      const res = await fetch(`${svc.url}/api/pulse/v1/profiles/query`, {
        method: 'POST',
        headers: { authorization: `Bearer ${keys.seg}`, 'content-type': 'application/json' },
        body: raw,
      });
      expect(res.status, raw).toBe(400);
      expect(((await res.json()) as any).error).toMatchObject({ code: 'bad_request', details: { field } });
    }
    const pii = await q({ rule: { trait: 'email', op: 'contains', value: '@example.com' } });
    expect(pii.status).toBe(403);
    const ok = await q({ rule: { trait: 'email', op: 'contains', value: '@example.com' } }, keys.segpii);
    expect(ok.body.profile_ids).toHaveLength(1);
  });
});

describe('key-scoped webhooks', () => {
  it('creates, lists, reads, updates and deletes subscriptions visible only to the key that owns them', async () => {
    const call = async (method: string, p: string, key: string, body?: unknown) => {
      const res = await fetch(`${svc.url}/api/pulse/v1${p}`, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null };
    };
    const { startReceiver } = await import('../helpers/receiver.js');
    const rx = await startReceiver();
    const created = await call('POST', '/webhooks', keys.hooks, { url: `${rx.url}/k`, events: ['conversion'], secret: 'key-scoped-secret' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ events: ['conversion'], has_secret: true, enabled: true });
    expect(JSON.stringify(created.body)).not.toContain('key-scoped-secret');
    const id = created.body.id;
    expect((await call('GET', '/webhooks', keys.hooks)).body.webhooks.map((w: any) => w.id)).toEqual([id]);
    expect((await call('GET', '/webhooks', keys.hooks2)).body.webhooks).toEqual([]);
    expect((await call('GET', `/webhooks/${id}`, keys.hooks2)).status).toBe(404);
    expect((await call('GET', '/webhooks', keys.read)).status).toBe(403);
    const unknown = await call('POST', '/webhooks', keys.hooks, { url: `${rx.url}/k`, events: ['conversion', 'nope'] });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.message).toMatch(/^events\[1\]: unknown event type "nope"; known: profile\.identified, .*, stall\.found, or all$/);

    await post(`${svc.url}/api/convert`, { site_id: site, session_id: 'wh', revenue: 1 });
    await rx.waitFor(1);
    let log: any = null;
    for (let i = 0; i < 50; i++) {
      log = await call('GET', `/webhooks/${id}/deliveries`, keys.hooks);
      if (log.body.deliveries.length > 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(log.body.deliveries[0]).toMatchObject({ event: 'conversion', ok: true, status: 200, kind: 'attempt' });
    const upd = await call('PATCH', `/webhooks/${id}`, keys.hooks, { events: ['all'], enabled: false });
    expect(upd.body).toMatchObject({ events: ['all'], enabled: false });
    expect((await call('DELETE', `/webhooks/${id}`, keys.hooks)).status).toBe(204);
    expect((await call('GET', `/webhooks/${id}`, keys.hooks)).status).toBe(404);
    await rx.close();
  });
});

describe('rate limits', () => {
  it('allows a burst of 120 profile reads per key, then 429 with the figures, Retry-After and RateLimit headers', async () => {
    const k = mint(site, 'profile:read');
    // The bucket holds 120 and refills one a second: the reads allowed before the first 429 are the
    // burst plus what refilled while they ran (however slow the host).
    const started = Date.now();
    let allowed = 0;
    let r = await get('/profile?visitor_id=p-v1', k);
    while (r.status === 200 && allowed < 400) {
      allowed++;
      r = await get('/profile?visitor_id=p-v1', k);
    }
    const refilled = Math.ceil((Date.now() - started) / 1000);
    expect(allowed).toBeGreaterThanOrEqual(120);
    expect(allowed).toBeLessThanOrEqual(120 + refilled);
    expect(r.status).toBe(429);
    expect(r.body.error.code).toBe('rate_limited');
    expect(r.body.error.message).toContain('60 requests per minute, burst 120');
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(r.headers.get('ratelimit-limit')).toBe('120');
    expect(r.headers.get('ratelimit-remaining')).toBe('0');
    expect((await get('/profile?visitor_id=p-v1', keys.read)).status).toBe(200); // other keys are unaffected
  });
});


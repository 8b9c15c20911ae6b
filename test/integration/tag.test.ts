import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { cleanup, cli, cliJson, createSite, post, ROOT, startSvc, tempDir, type Svc } from '../helpers/svc.js';
import { storeStats } from '../helpers/db.js';

/** The browser tag's budget: 6 KB gzip, web-vitals included. */
const TAG_BUDGET = 6 * 1024;
const SHOP = 'https://shop.example';
const APP = 'http://app.example.net';
const EVIL = 'https://evil.example';

let svc: Svc;
let dataDir: string;
let site: string;
let bare: string;
let consentSite: string;

beforeAll(async () => {
  dataDir = tempDir();
  site = createSite(dataDir);
  cliJson(['site', 'update', site, '--domain', 'shop.example', '--allowed-origins', `${APP}/`, '--data', dataDir]);
  bare = createSite(dataDir, 'No domain');
  consentSite = createSite(dataDir, 'Consent');
  cliJson(['site', 'update', consentSite, '--consent-required', 'yes', '--honour-privacy-signals', 'yes', '--url-params', 'utm_*,ref', '--data', dataDir]);
  svc = await startSvc({ dataDir });
});
afterAll(async () => {
  expect(await svc.stop()).toBe(0);
  cleanup(dataDir);
});

const event = (s: string, extra: Record<string, unknown> = {}) => ({ site_id: s, session_id: 'tag-s1', visitor_id: 'tag-v1', type: 'pageview', ...extra });

describe('GET /tag.js', () => {
  it('serves the built tag within its gzip budget, revalidated by ETag', async () => {
    const built = readFileSync(path.join(ROOT, 'dist/tag/tag.js'));
    expect(gzipSync(built, { level: 9 }).length).toBeLessThanOrEqual(TAG_BUDGET);
    const r = await fetch(`${svc.url}/tag.js`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(r.headers.get('cache-control')).toBe('public, max-age=300');
    const body = Buffer.from(await r.arrayBuffer());
    expect(body.equals(built)).toBe(true);
    expect(body.toString()).toContain('/api/tag/config');
    const etag = r.headers.get('etag')!;
    expect(etag).toMatch(/^"[0-9a-f]{16}"$/);
    const again = await fetch(`${svc.url}/tag.js`, { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
  });

  it('serves the versioned URL as immutable, with the integrity hash of its bytes', async () => {
    const r = await fetch(`${svc.url}/tag.js`);
    const versioned = r.headers.get('x-svc-tag-version')!;
    const body = Buffer.from(await r.arrayBuffer());
    expect(versioned).toBe(`/tag/${createHash('sha256').update(body).digest('hex').slice(0, 16)}.js`);
    const v = await fetch(`${svc.url}${versioned}`);
    expect(v.status).toBe(200);
    expect(v.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(v.headers.get('x-svc-tag-integrity')).toBe(`sha384-${createHash('sha384').update(body).digest('base64')}`);
    const old = await fetch(`${svc.url}/tag/0123456789abcdef.js`);
    expect(old.status).toBe(404);
    expect(((await old.json()) as any).error).toMatchObject({ code: 'not_found', details: { current: versioned } });
  });

  it('refuses an origin of no site and allows a site origin', async () => {
    const bad = await fetch(`${svc.url}/tag.js`, { headers: { origin: EVIL } });
    expect(bad.status).toBe(403);
    expect(((await bad.json()) as any).error.code).toBe('forbidden_origin');
    const ok = await fetch(`${svc.url}/tag.js`, { headers: { origin: 'https://www.shop.example' } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://www.shop.example');
  });
});

describe('GET /api/tag/config', () => {
  it('gives the settings the tag needs before it may write or send anything', async () => {
    const d = await (await fetch(`${svc.url}/api/tag/config?site_id=${site}`)).json();
    expect(d).toEqual({ site_id: site, timezone: 'UTC', consent_required: false, honour_privacy_signals: false, url_params: ['utm_*'] });
    const c = await (await fetch(`${svc.url}/api/tag/config?site_id=${consentSite}`)).json();
    expect(c).toMatchObject({ consent_required: true, honour_privacy_signals: true, url_params: ['utm_*', 'ref'] });
    expect((await fetch(`${svc.url}/api/tag/config?site_id=site_nope`)).status).toBe(400);
    expect((await fetch(`${svc.url}/api/tag/config?site_id=${site}`, { headers: { origin: EVIL } })).status).toBe(403);
  });

  it('validates the settings in the CLI', () => {
    const bad = cli(['site', 'update', site, '--allowed-origins', 'https://shop.example/path', '--data', dataDir]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--allowed-origins');
    expect(cli(['site', 'update', site, '--consent-required', 'maybe', '--data', dataDir]).code).toBe(2);
    const shown = cliJson<Record<string, unknown>>(['site', 'update', bare, '--url-params', 'utm_*,gclid', '--data', dataDir]);
    expect(shown).toMatchObject({ consent_required: false, allowed_origins: [], url_params: ['utm_*', 'gclid'] });
  });
});

describe('CORS of the public paths', () => {
  it('answers preflights for origins of a site and refuses others', async () => {
    const ok = await fetch(`${svc.url}/api/events`, { method: 'OPTIONS', headers: { origin: APP, 'access-control-request-method': 'POST' } });
    expect(ok.status).toBe(204);
    expect(ok.headers.get('access-control-allow-origin')).toBe(APP);
    expect(ok.headers.get('access-control-allow-headers')).toBe('Content-Type, Idempotency-Key');
    const bad = await fetch(`${svc.url}/api/identify`, { method: 'OPTIONS', headers: { origin: EVIL } });
    expect(bad.status).toBe(403);
    expect(bad.headers.get('access-control-allow-origin')).toBeNull();
    const decide = await fetch(`${svc.url}/api/decide`, { method: 'OPTIONS', headers: { origin: EVIL } });
    expect(decide.status).toBe(403);
  });

  it('refuses a browser request from a foreign origin and stores nothing, preflighted or not', async () => {
    const before = (await storeStats(dataDir, site)).events;
    for (const type of ['application/json', 'text/plain']) {
      const r = await post(`${svc.url}/api/events`, event(site), { origin: EVIL, 'content-type': type });
      expect(r.status).toBe(403);
      expect(r.body.error).toMatchObject({ code: 'forbidden_origin', details: { origin: EVIL, site_id: site } });
    }
    // Another site's origin is foreign too; a site without a domain allows no browser origin but svc's own.
    expect((await post(`${svc.url}/api/events`, event(bare), { origin: SHOP })).status).toBe(403);
    expect((await post(`${svc.url}/api/identify`, { site_id: site, session_id: 's', traits: { plan: 'x' } }, { origin: 'null' })).status).toBe(403);
    expect((await storeStats(dataDir, site)).events).toBe(before);
    expect((await storeStats(dataDir, bare)).events).toBe(0);
  });

  it("allows the site's domain, its subdomains, extra origins and svc's own origin; no Origin is unchanged", async () => {
    for (const origin of [SHOP, 'http://www.shop.example', APP]) {
      const r = await post(`${svc.url}/api/events`, event(site), { origin });
      expect(r.status).toBe(201);
      expect(r.headers.get('access-control-allow-origin')).toBe(origin);
      expect(r.headers.get('vary')).toBe('Origin');
    }
    const own = await post(`${svc.url}/api/events`, event(bare), { origin: svc.url });
    expect(own.status).toBe(201);
    const server = await post(`${svc.url}/api/events`, event(bare));
    expect(server.status).toBe(201);
    expect(server.headers.get('access-control-allow-origin')).toBe('*');
  });

  it('checks /api/decide the same way', async () => {
    const q = `${svc.url}/api/decide?site_id=${site}&visitor_id=v1&url=%2F`;
    const bad = await fetch(q, { headers: { origin: EVIL } });
    expect(bad.status).toBe(403);
    expect(((await bad.json()) as any).error.code).toBe('forbidden_origin');
    const ok = await fetch(q, { headers: { origin: SHOP } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe(SHOP);
    expect(ok.headers.get('set-cookie')).toBeNull();
  });

  it("sets the visitor cookie itself when it answers under the site's own origin", async () => {
    const { port } = new URL(svc.url);
    const send = (method: string, p: string, body?: string) =>
      new Promise<Record<string, string | string[] | undefined>>((resolve, reject) => {
        const headers = { host: 'shop.example', origin: SHOP, 'content-type': 'text/plain' };
        const req = request({ host: '127.0.0.1', port, method, path: p, headers }, (res) => {
          res.resume();
          resolve({ ...res.headers, status: String(res.statusCode) });
        });
        req.on('error', reject);
        req.end(body);
      });
    const cookie = (v: string) => [`svc_vid=${v}; Domain=shop.example; Path=/; Max-Age=34560000; SameSite=Lax; Secure`];
    const decided = await send('GET', `/api/decide?site_id=${site}&visitor_id=v_abc&url=%2F`);
    expect(decided['set-cookie']).toEqual(cookie('v_abc'));
    // Pages without zones call no /api/decide: their pageview keeps the cookie too.
    const tracked = await send('POST', '/api/events', JSON.stringify(event(site, { visitor_id: 'v_def' })));
    expect(tracked.status).toBe('201');
    expect(tracked['set-cookie']).toEqual(cookie('v_def'));
  });
});

describe('idempotency keys', () => {
  it('stores a retried event once and answers as the first time (header or body key)', async () => {
    const before = (await storeStats(dataDir, site)).events;
    const first = await post(`${svc.url}/api/events`, event(site, { type: 'click' }), { 'idempotency-key': 'retry-1' });
    const second = await post(`${svc.url}/api/events`, event(site, { type: 'click' }), { 'idempotency-key': 'retry-1' });
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.body).toEqual(first.body);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    const a = await post(`${svc.url}/api/events`, event(site, { idempotency_key: 'body-1' }));
    const b = await post(`${svc.url}/api/events`, event(site, { idempotency_key: 'body-1' }));
    expect(b.body).toEqual(a.body);
    expect((await storeStats(dataDir, site)).events).toBe(before + 2);
    // The same key in another site is another request.
    const other = await post(`${svc.url}/api/events`, event(bare, { idempotency_key: 'body-1' }));
    expect(other.status).toBe(201);
    expect(other.body.event_id).not.toBe(a.body.event_id);
  });

  it('keeps concurrent retries to one write', async () => {
    const before = (await storeStats(dataDir, site)).events;
    const all = await Promise.all(Array.from({ length: 6 }, () => post(`${svc.url}/api/events`, event(site), { 'idempotency-key': 'race-1' })));
    expect(new Set(all.map((r) => r.body.event_id)).size).toBe(1);
    expect(all.every((r) => r.status === 201)).toBe(true);
    expect((await storeStats(dataDir, site)).events).toBe(before + 1);
  });

  it('covers identify, convert and lead capture; a key reused on another path is a conflict', async () => {
    const id1 = await post(`${svc.url}/api/identify`, { site_id: site, session_id: 'k-s', traits: { email: 'k@example.com' }, idempotency_key: 'id-1' });
    const id2 = await post(`${svc.url}/api/identify`, { site_id: site, session_id: 'k-s', traits: { email: 'k@example.com' }, idempotency_key: 'id-1' });
    expect(id1.status).toBe(200);
    expect(id2.body).toEqual(id1.body);
    const before = await storeStats(dataDir, site);
    const c1 = await post(`${svc.url}/api/convert`, { site_id: site, session_id: 'k-s', revenue: 10 }, { 'idempotency-key': 'cv-1' });
    const c2 = await post(`${svc.url}/api/convert`, { site_id: site, session_id: 'k-s', revenue: 10 }, { 'idempotency-key': 'cv-1' });
    expect(c2.body).toEqual(c1.body);
    const l1 = await post(`${svc.url}/api/lead/capture`, { site_id: site, email: 'k@example.com', idempotency_key: 'ld-1' });
    const l2 = await post(`${svc.url}/api/lead/capture`, { site_id: site, email: 'k@example.com', idempotency_key: 'ld-1' });
    expect(l2.body).toEqual(l1.body);
    const after = await storeStats(dataDir, site);
    expect([after.conversions, after.leads]).toEqual([before.conversions + 1, before.leads + 1]);
    const clash = await post(`${svc.url}/api/score`, { site_id: site, session_id: 'k-s', score: 1 }, { 'idempotency-key': 'cv-1' });
    expect(clash.status).toBe(409);
    expect(clash.body.error).toMatchObject({ code: 'conflict', details: { path: '/api/convert' } });
    const bad = await post(`${svc.url}/api/events`, event(site), { 'idempotency-key': 'has space' });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'validation_failed', details: { field: 'Idempotency-Key' } });
  });
});

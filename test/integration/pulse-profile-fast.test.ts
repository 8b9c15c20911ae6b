import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, cli, cliJson, createSite, post, startSvc, tempDir, type Svc } from '../helpers/svc.js';

/**
 * GET /api/pulse/v1/profile is answered before express; the same request with
 * a trailing slash (`/profile/?...`) still goes through the express router.
 * Both must answer byte for byte alike: status line, header names in order
 * and values (but Date, the per-request X-Request-Id and the rate-limit
 * counters), and body (but the request id an error body carries).
 */

let svc: Svc;
let dataDir: string;
let site: string;
const keys = { read: '', pii: '', hooks: '' };

function mint(scopes: string): string {
  return cliJson<{ key: string }>(['key', 'mint', '--site', site, '--scopes', scopes, '--data', dataDir]).key;
}

interface Raw {
  status: number;
  message: string;
  /** Header names and values in the order sent; the values of Date, X-Request-Id and the rate-limit counters (which change from one request to the next) blanked. */
  headers: string[];
  body: string;
  requestId: string;
}

/** One GET over its own connection, with the raw response. */
function rawGet(path: string, headers: Record<string, string> = {}): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${svc.url}${path}`, { headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const h = res.rawHeaders.map((v, i, all) => (i % 2 === 1 && /^(date|x-request-id|ratelimit-remaining|ratelimit-reset|retry-after)$/i.test(all[i - 1]!) ? '<blank>' : v));
        const requestId = String(res.headers['x-request-id'] ?? '');
        const body = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode!, message: res.statusMessage!, headers: h, body: requestId ? body.split(requestId).join('<request-id>') : body, requestId });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

/** The fast path's answer and the router's answer to the same request. */
async function both(query: string, headers: Record<string, string> = {}): Promise<[Raw, Raw]> {
  return [await rawGet(`/api/pulse/v1/profile?${query}`, headers), await rawGet(`/api/pulse/v1/profile/?${query}`, headers)];
}

const bearer = (k: string) => ({ authorization: `Bearer ${k}` });

beforeAll(async () => {
  dataDir = tempDir();
  site = createSite(dataDir);
  keys.read = mint('profile:read');
  keys.pii = mint('profile:read,profile:read:pii');
  keys.hooks = mint('webhooks:manage');
  svc = await startSvc({ dataDir });
  await post(`${svc.url}/api/events`, { site_id: site, session_id: 'f-s1', visitor_id: 'f-v1', type: 'pageview' });
  await post(`${svc.url}/api/identify`, {
    site_id: site,
    session_id: 'f-s1',
    visitor_id: 'f-v1',
    traits: { email: 'Fast.Path@Example.com', name: 'Fast Päth ✓', external_id: 'crm-fast', plan: 'pro' },
  });
  await post(`${svc.url}/api/convert`, { site_id: site, session_id: 'f-s1', revenue: 0.1 });
  await post(`${svc.url}/api/convert`, { site_id: site, session_id: 'f-s1', revenue: 0.2 });
});

afterAll(async () => {
  await svc.stop();
  cleanup(dataDir);
});

describe('GET /profile before express', () => {
  it('answers a snapshot with the bytes and headers the router answers', async () => {
    for (const [query, key] of [
      ['visitor_id=f-v1', keys.read],
      ['email=fast.path%40example.com', keys.pii],
      ['external_id=crm-fast&include_pii=false', keys.pii],
      ['visitor_id=f-v1&include_pii=true', keys.pii],
    ] as const) {
      const [fast, routed] = await both(query, bearer(key));
      expect(fast.status).toBe(200);
      expect(fast).toEqual({ ...routed, requestId: fast.requestId });
      expect(fast.headers.filter((_, i) => i % 2 === 0)).toEqual(['X-Request-Id', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'RateLimit-Policy', 'Content-Type', 'Content-Length', 'Date', 'Connection']);
      const body = JSON.parse(fast.body) as { activity: { conversions: number; revenue: number; sessions: number; events_by_type: { type: string; count: number }[] } };
      expect(body.activity.conversions).toBe(2);
      expect(body.activity.revenue).toBe(0.1 + 0.2); // a REAL sum, not rounded on its way
      expect(body.activity.sessions).toBe(1);
      expect(body.activity.events_by_type.find((e) => e.type === 'pageview')?.count).toBe(1);
    }
  });

  it('refuses as the router does: 401, 403, 400 and 404 with the same bytes', async () => {
    const cases: [string, Record<string, string>, number][] = [
      ['visitor_id=f-v1', {}, 401],
      ['visitor_id=f-v1', { authorization: 'Basic abc' }, 401],
      ['visitor_id=f-v1', bearer('pls_live_' + 'B'.repeat(32)), 401],
      ['visitor_id=f-v1', bearer(keys.hooks), 403],
      ['visitor_id=f-v1&include_pii=true', bearer(keys.read), 403],
      ['', bearer(keys.read), 400],
      ['visitor_id=f-v1&email=a%40b.c', bearer(keys.read), 400],
      ['visitor_id=f-v1&visitor_id=f-v2', bearer(keys.read), 400],
      ['visitor=f-v1', bearer(keys.read), 400],
      ['email_sha256=zz', bearer(keys.read), 400],
      ['include_pii=maybe&visitor_id=f-v1', bearer(keys.read), 400],
      ['visitor_id=nobody', bearer(keys.read), 404],
      ['profile_id=prf_nothing', bearer(keys.read), 404],
    ];
    for (const [query, headers, status] of cases) {
      const [fast, routed] = await both(query, headers);
      expect(fast.status, query).toBe(status);
      expect(fast, query).toEqual({ ...routed, requestId: fast.requestId });
      expect((JSON.parse(fast.body) as { error: { request_id: string } }).error.request_id).toBe('<request-id>');
    }
  });

  it('stops a key revoked by another process on the very next request', async () => {
    const k = mint('profile:read');
    expect((await rawGet('/api/pulse/v1/profile?visitor_id=f-v1', bearer(k))).status).toBe(200);
    const id = cliJson<{ id: string; hint: string }[]>(['key', 'list', '--site', site, '--data', dataDir]).find((x) => k.startsWith(x.hint.slice(0, -1)))!.id;
    expect(cli(['key', 'revoke', id, '--data', dataDir]).code).toBe(0);
    const after = await rawGet('/api/pulse/v1/profile?visitor_id=f-v1', bearer(k));
    expect(after.status).toBe(401);
    expect(after.body).toContain('this API key was revoked');
  });

  it('reads back a write as soon as it is acknowledged', async () => {
    const before = JSON.parse((await rawGet('/api/pulse/v1/profile?visitor_id=f-v1', bearer(keys.pii))).body) as { identity: { traits: Record<string, unknown> } };
    expect(before.identity.traits.plan).toBe('pro');
    for (const plan of ['gold', 'silver', 'bronze']) {
      const ack = await post(`${svc.url}/api/identify`, { site_id: site, session_id: 'f-s1', visitor_id: 'f-v1', traits: { plan } });
      expect(ack.status).toBe(200);
      const after = JSON.parse((await rawGet('/api/pulse/v1/profile?visitor_id=f-v1', bearer(keys.pii))).body) as { identity: { traits: Record<string, unknown> } };
      expect(after.identity.traits.plan).toBe(plan);
    }
  });

  it('shares one rate-limit budget per key with the router, and its 429 is the router\'s', async () => {
    const k = mint('profile:read');
    let last: Raw | null = null;
    let allowed = 0;
    // Alternate the two paths: one bucket of 120 (plus what refills meanwhile) for both.
    for (let i = 0; i < 400; i++) {
      const r = await rawGet(`/api/pulse/v1/profile${i % 2 === 0 ? '' : '/'}?visitor_id=f-v1`, bearer(k));
      if (r.status !== 200) {
        last = r;
        break;
      }
      allowed++;
    }
    expect(allowed).toBeGreaterThanOrEqual(120);
    expect(allowed).toBeLessThan(240);
    expect(last?.status).toBe(429);
    // The bucket refills one token a second: on a slow host one may land between the two requests (one
    // answers 200 and spends it); ask again until both meet an empty bucket.
    let [fast, routed] = await both('visitor_id=f-v1', bearer(k));
    for (let tries = 0; tries < 20 && (fast.status !== 429 || routed.status !== 429); tries++) [fast, routed] = await both('visitor_id=f-v1', bearer(k));
    expect(fast.status).toBe(429);
    const strip = (r: Raw) => ({ ...r, body: r.body.replace(/"retry_after_seconds":\d+/, ''), requestId: '' });
    expect(strip(fast)).toEqual(strip(routed));
    expect(fast.headers.filter((_, i) => i % 2 === 0)).toContain('Retry-After');
  });

  it('leaves other methods and conditional requests to the router', async () => {
    const head = await new Promise<number>((resolve, reject) => {
      const req = http.request(`${svc.url}/api/pulse/v1/profile?visitor_id=f-v1`, { method: 'HEAD', headers: bearer(keys.read), agent: false }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on('error', reject);
      req.end();
    });
    expect(head).toBe(200);
    const post405 = await post(`${svc.url}/api/pulse/v1/profile?visitor_id=f-v1`, {}, bearer(keys.read));
    expect(post405.status).toBe(404);
    // If-None-Match: * makes express answer 304 (its freshness check); the router still answers it.
    const conditional = await rawGet('/api/pulse/v1/profile?visitor_id=f-v1', { ...bearer(keys.read), 'if-none-match': '*' });
    const routed = await rawGet('/api/pulse/v1/profile/?visitor_id=f-v1', { ...bearer(keys.read), 'if-none-match': '*' });
    expect(conditional).toEqual({ ...routed, requestId: conditional.requestId });
  });
});

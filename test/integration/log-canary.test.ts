import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, cliJson, post, startSvc, tempDir, type Svc } from '../helpers/svc.js';
import { startReceiver } from '../helpers/receiver.js';
import { McpClients, call } from '../helpers/mcp-client.js';

/**
 * No personal data, token, key or secret in any log line at any level: one
 * server at trace level gets planted canary values through every surface
 * (ingestion, decide, MCP, the profile REST API, webhook delivery, refused and
 * malformed requests), and its whole output is searched for them.
 */
const CANARY = {
  email: 'canary.person.7q3@example.org',
  phone: '+44 20 7946 0977',
  name: 'Zebedee Canarywood',
  trait: 'canary-trait-value-5k1',
  property: 'canary-property-9x2',
  webhookSecret: 'canary-webhook-secret-m4v',
  secretKey: 'canary-secret-key-of-the-installation-p8w',
  wrongToken: 'mcpt_canarywrongtoken000000000000000000000',
  wrongKey: 'pls_live_canarywrongkey00000000000000000000',
  url: 'https://shop.example.com/checkout?email=canary.url.person@example.org',
};

describe('log lines carry no personal data, tokens, keys or secrets', () => {
  let dir: string;
  let site: string;
  let svc: Svc;
  let token: string;
  let key: string;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  const clients = new McpClients(() => svc.url);

  beforeAll(async () => {
    dir = tempDir();
    const env = { SVC_SECRET_KEY: CANARY.secretKey };
    site = cliJson<{ site_id: string }>(['site', 'create', '--name', 'Canary shop', '--data', dir], env).site_id;
    token = cliJson<{ token: string }>(['token', 'mint', '--site', site, '--scope', 'admin', '--data', dir], env).token;
    key = cliJson<{ key: string }>(['key', 'mint', '--site', site, '--scopes', 'profile:read,profile:read:pii,webhooks:manage', '--data', dir], env).key;
    receiver = await startReceiver(() => ({ status: 500, body: `receiver echoes ${CANARY.email}` }));
    svc = await startSvc({
      dataDir: dir,
      args: ['--allow-private-destinations', '--metrics-port', '0'],
      env: { ...env, SVC_LOG_LEVEL: 'trace', SVC_LOG_FORMAT: 'json', SVC_WEBHOOK_RETRY_SCHEDULE: '100ms', SVC_WEBHOOK_POLL_MS: '50' },
    });
  });

  afterAll(async () => {
    await clients.closeAll();
    await svc?.stop();
    await receiver?.close();
    cleanup(dir);
  });

  it('after every surface has seen the canaries, none is in the output', async () => {
    const base = { site_id: site, session_id: 'canary-session', visitor_id: 'canary-visitor' };
    const traits = { email: CANARY.email, name: CANARY.name, phone: CANARY.phone, favourite: CANARY.trait };
    // Ingestion: accepted and refused.
    expect((await post(`${svc.url}/api/identify`, { ...base, traits })).status).toBe(200);
    expect((await post(`${svc.url}/api/lead/capture`, { site_id: site, visitor_id: 'canary-visitor', email: CANARY.email, name: CANARY.name, phone: CANARY.phone })).status).toBe(201);
    expect((await post(`${svc.url}/api/events`, { ...base, type: 'pageview', url: CANARY.url, note: CANARY.property })).status).toBe(201);
    expect((await post(`${svc.url}/api/convert`, { site_id: site, session_id: 'canary-session', revenue: 10, line_items: [{ sku: CANARY.property, qty: 1, price: 10 }] })).status).toBe(201);
    expect((await post(`${svc.url}/api/score`, { ...base, score: 3, reason: CANARY.property })).status).toBe(201);
    expect((await post(`${svc.url}/api/identify`, { ...base, traits: { ...traits, email: 42 } })).status).toBe(400);
    expect((await post(`${svc.url}/api/identify`, `{"site_id":"${site}","traits":{"email":"${CANARY.email}"`)).status).toBe(400);
    expect((await post(`${svc.url}/api/lead/capture`, { site_id: 'site_unknown', email: CANARY.email, phone: CANARY.phone })).status).toBe(400);
    expect((await post(`${svc.url}/api/events`, { ...base, type: 'pageview', big: CANARY.email.repeat(3000) })).status).toBe(413);
    // The browser tag's decision, with personal data in the page URL.
    const decide = await fetch(`${svc.url}/api/decide?site_id=${site}&visitor_id=canary-visitor&url=${encodeURIComponent(CANARY.url)}`);
    expect(decide.status).toBe(200);
    // MCP: tokens in the header and the query, a wrong token, tools with personal data in and out.
    const mcp = await clients.connect(token);
    expect((await call(mcp, 'profiles_get', { by: 'email', value: CANARY.email })).isError).toBeFalsy();
    await call(mcp, 'profiles_search', { query: CANARY.name });
    const viaQuery = await clients.connect(token, { carrier: 'query' });
    expect((await call(viaQuery, 'whoami')).isError).toBeFalsy();
    const wrong = await post(`${svc.url}/api/mcp`, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { authorization: `Bearer ${CANARY.wrongToken}`, accept: 'application/json, text/event-stream' });
    expect(wrong.status).toBe(401);
    // The profile REST API: the key in the header and in ?api_key=, a wrong key, a webhook secret in a body.
    const profile = await fetch(`${svc.url}/api/pulse/v1/profile?email=${encodeURIComponent(CANARY.email)}`, { headers: { authorization: `Bearer ${key}` } });
    expect(profile.status).toBe(200);
    // A key in the query (where this API does not take it): refused, and still never logged.
    expect([200, 401]).toContain((await fetch(`${svc.url}/api/pulse/v1/profile?email=${encodeURIComponent(CANARY.email)}&api_key=${key}`)).status);
    expect((await fetch(`${svc.url}/api/pulse/v1/profile?email=${encodeURIComponent(CANARY.email)}`, { headers: { authorization: `Bearer ${CANARY.wrongKey}` } })).status).toBe(401);
    const hook = await post(
      `${svc.url}/api/pulse/v1/webhooks`,
      { url: `${receiver.url}/hook`, events: ['all'], secret: CANARY.webhookSecret },
      { authorization: `Bearer ${key}` },
    );
    expect(hook.status).toBe(201);
    // A delivery that fails (its answer echoes personal data) and is retried.
    expect((await post(`${svc.url}/api/events`, { ...base, type: 'pageview', note: CANARY.property })).status).toBe(201);
    await receiver.waitFor(2);
    // Something was logged at all levels down to trace (the check is not vacuous).
    const waitForLog = Date.now() + 10_000;
    while (!svc.stderr().includes('"level":10') && !svc.stderr().includes('"level":20') && Date.now() < waitForLog) await new Promise((r) => setTimeout(r, 50));
    const output = svc.stderr();
    expect(output.split('\n').filter((l) => l.startsWith('{')).length).toBeGreaterThan(20);
    expect(output).toContain('"request_id"');
    const planted = { ...CANARY, token, key, tokenBody: token.slice(5), keyBody: key.slice(9), urlEmail: 'canary.url.person@example.org' };
    for (const [what, value] of Object.entries(planted)) {
      expect(output.includes(value), `${what} (${value}) appears in the log output`).toBe(false);
      expect(output.includes(encodeURIComponent(value)), `${what} (URL-encoded) appears in the log output`).toBe(false);
    }
    expect(output.toLowerCase().includes(CANARY.email.toLowerCase())).toBe(false);
  });
});

describe('pretty logs', () => {
  it('are human lines (pino-pretty) when asked for, with the request id and still no credentials', async () => {
    const dir = tempDir();
    const site = cliJson<{ site_id: string }>(['site', 'create', '--name', 'Pretty', '--data', dir]).site_id;
    const key = cliJson<{ key: string }>(['key', 'mint', '--site', site, '--scopes', 'profile:read', '--data', dir]).key;
    const svc = await startSvc({ dataDir: dir, env: { SVC_LOG_LEVEL: 'debug', SVC_LOG_FORMAT: 'pretty' } });
    try {
      const r = await fetch(`${svc.url}/api/pulse/v1/profile?email=${encodeURIComponent(CANARY.email)}`, { headers: { authorization: `Bearer ${key}` } });
      const id = r.headers.get('x-request-id')!;
      const deadline = Date.now() + 10_000;
      while (!svc.stderr().includes(id) && Date.now() < deadline) await new Promise((res) => setTimeout(res, 50));
      const line = svc.stderr().split('\n').find((l) => l.includes('request') && l.includes('DEBUG'));
      expect(line, svc.stderr()).toBeDefined();
      expect(line!.startsWith('{')).toBe(false);
      expect(svc.stderr()).toContain(`request_id: "${id}"`);
      expect(svc.stderr()).not.toContain(key);
      expect(svc.stderr()).not.toContain(CANARY.email);
    } finally {
      await svc.stop();
      cleanup(dir);
    }
  });
});

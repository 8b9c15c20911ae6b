import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, cli, cliJson, post, startSvc, tempDir, type Svc } from '../helpers/svc.js';
import { query, storedBytes } from '../helpers/db.js';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { GOOGLE, META_TOKEN, startAdPlatforms } from '../helpers/adplatforms-mock.js';
import { errorOf } from '../helpers/mcp-client.js';

const sha = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');
const UA = 'Mozilla/5.0 (X11; Linux x86_64) svc-test';
const FAST = { SVC_ADPLATFORM_RETRY_SCHEDULE: '150ms,150ms,150ms,150ms', SVC_ADPLATFORM_POLL_MS: '50', SVC_ADPLATFORM_TIMEOUT_MS: '2500' };

type Mock = Awaited<ReturnType<typeof startAdPlatforms>>;

function siteWith(dataDir: string, domain = 'shop.example', currency = 'EUR'): string {
  return cliJson<{ site_id: string }>(['site', 'create', '--name', 'Shop', '--domain', domain, '--currency', currency, '--data', dataDir]).site_id;
}

function addMeta(dataDir: string, site: string, extra: string[] = []): string {
  return cliJson<{ id: string }>(['adplatform', 'add', '--site', site, '--platform', 'meta', '--pixel-id', '1234567890', '--access-token', META_TOKEN, '--data', dataDir, ...extra]).id;
}

function addGoogle(dataDir: string, site: string): string {
  return cliJson<{ id: string }>(
    ['adplatform', 'add', '--site', site, '--platform', 'google_ads', '--customer-id', '123-456-7890', '--conversion-action', '987654',
      '--merchant-id', '5551234', '--feed-country', 'US', '--feed-language', 'en',
      '--developer-token', GOOGLE.developerToken, '--client-id', GOOGLE.clientId, '--client-secret', 'env:TEST_GOOGLE_SECRET', '--refresh-token', GOOGLE.refreshToken,
      '--data', dataDir],
    { TEST_GOOGLE_SECRET: GOOGLE.clientSecret },
  ).id;
}

interface Job {
  id: string;
  connection_id: string;
  conversion_id: string;
  state: string;
  attempts: number;
  last_error: string | null;
}
interface Attempt {
  platform: string;
  job_id: string;
  attempt: number;
  ok: boolean;
  status: number | null;
  error_class: string | null;
}

async function visit(svc: Svc, site: string, session: string, url: string) {
  const r = await post(`${svc.url}/api/events`, { site_id: site, session_id: session, visitor_id: `v-${session}`, type: 'pageview', url }, { 'user-agent': UA });
  expect(r.status).toBe(201);
}

async function convert(svc: Svc, site: string, session: string, revenue: number | null, lineItems = [{ sku: 'MUG', qty: 2, price: 12.5 }]): Promise<string> {
  const r = await post(`${svc.url}/api/convert`, { site_id: site, session_id: session, revenue, line_items: lineItems }, { 'user-agent': UA });
  expect(r.status).toBe(201);
  return (r.body as { conversion_id: string }).conversion_id;
}

describe('conversion fan-out to Meta and Google Ads', () => {
  let mock: Mock;
  let svc: Svc;
  let dataDir: string;
  let site: string;
  let metaId: string;
  let googleId: string;
  const jobs = () => cliJson<Job[]>(['adplatform', 'jobs', '--site', site, '--limit', '1000', '--data', dataDir]);
  const attempts = () => cliJson<Attempt[]>(['adplatform', 'deliveries', '--site', site, '--limit', '1000', '--data', dataDir]);
  // What the waits below poll (every 20 ms): one job's state, read in the store; the assertions read `adplatform jobs`.
  const jobState = (conversionId: string, connectionId: string) =>
    query<{ state: string }>(dataDir, 'SELECT state FROM ad_jobs WHERE conversion_id = ? AND connection_id = ?', conversionId, connectionId)[0]?.state;

  beforeAll(async () => {
    mock = await startAdPlatforms();
    dataDir = tempDir();
    site = siteWith(dataDir);
    metaId = addMeta(dataDir, site);
    googleId = addGoogle(dataDir, site);
    svc = await startSvc({ dataDir, args: ['--allow-private-destinations'], env: { ...mock.env, ...FAST } });
  });
  afterAll(async () => {
    await svc.stop();
    await mock.close();
    cleanup(dataDir);
  });

  it('sends one Purchase to Meta and one click conversion to Google, normalized, hashed and in their formats', async () => {
    await visit(svc, site, 's1', 'https://shop.example/landing?utm_source=fb&fbclid=IwAR_MiXeD-Case_123&gclid=Cj0KCQiA_Test-456');
    const seenAt = query<{ fbclid_at: number }>(dataDir, 'SELECT fbclid_at FROM sessions WHERE id = ?', 's1')[0]!.fbclid_at;
    await post(`${svc.url}/api/identify`, { site_id: site, session_id: 's1', traits: { email: '  Jane.Doe@Example.COM ', phone: '+1 (415) 555-0100', external_id: 'crm-42' } });
    const id = await convert(svc, site, 's1', 59.5, [{ sku: 'MUG', qty: 2, price: 12.5 }, { sku: 'TEE', qty: 1, price: 34.5 }]);
    await mock.until(() => mock.meta.size === 1 && mock.google.size === 1, 20_000, 'both platforms');

    const metaReq = mock.requests.meta[0]!;
    expect(metaReq.path).toBe('/v24.0/1234567890/events');
    const e = mock.meta.get(`Purchase:${id}`)!.event;
    expect(e).toEqual({
      event_name: 'Purchase',
      event_time: expect.any(Number),
      event_id: id,
      action_source: 'website',
      event_source_url: 'https://shop.example/landing?utm_source=fb&fbclid=IwAR_MiXeD-Case_123&gclid=Cj0KCQiA_Test-456',
      user_data: {
        em: [sha('jane.doe@example.com')],
        ph: [sha('14155550100')],
        external_id: [sha('crm-42')],
        client_ip_address: '127.0.0.1',
        client_user_agent: UA,
        fbc: `fb.1.${seenAt}.IwAR_MiXeD-Case_123`,
      },
      custom_data: {
        value: 59.5,
        currency: 'EUR',
        content_ids: ['MUG', 'TEE'],
        contents: [
          { id: 'MUG', quantity: 2, item_price: 12.5 },
          { id: 'TEE', quantity: 1, item_price: 34.5 },
        ],
        content_type: 'product',
        order_id: id,
        num_items: 3,
      },
    });
    expect(Math.abs(e.event_time - Date.now() / 1000)).toBeLessThan(60);

    const googleReq = mock.requests.google[0]!;
    expect(googleReq.path).toBe('/v22/customers/1234567890:uploadClickConversions');
    expect(googleReq.headers['developer-token']).toBe(GOOGLE.developerToken);
    expect(googleReq.headers.authorization).toBe('Bearer ya29.mock-1');
    const c = mock.google.get(id)!.conversion;
    expect(c).toEqual({
      conversionAction: 'customers/1234567890/conversionActions/987654',
      conversionDateTime: expect.stringMatching(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\+00:00$/),
      orderId: id,
      gclid: 'Cj0KCQiA_Test-456',
      conversionValue: 59.5,
      currencyCode: 'EUR',
      userIdentifiers: [{ hashedEmail: sha('jane.doe@example.com') }, { hashedPhoneNumber: sha('+14155550100') }],
      cartData: {
        merchantId: 5551234,
        feedCountryCode: 'US',
        feedLanguageCode: 'en',
        items: [
          { productId: 'MUG', quantity: 2, unitPrice: 12.5 },
          { productId: 'TEE', quantity: 1, unitPrice: 34.5 },
        ],
      },
    });
    const stored = query<{ created_at: number }>(dataDir, 'SELECT created_at FROM conversions WHERE id = ?', id)[0]!;
    expect(c.conversionDateTime).toBe(`${new Date(stored.created_at).toISOString().slice(0, 19).replace('T', ' ')}+00:00`);
    expect(e.event_time).toBe(Math.floor(stored.created_at / 1000));

    // Personal values travel hashed only, and the job rows hold no plaintext either.
    for (const r of [...mock.requests.meta, ...mock.requests.google]) {
      expect(r.body.toLowerCase()).not.toContain('jane');
      expect(r.body).not.toContain('555-0100');
      expect(r.body).not.toContain('crm-42');
    }
    for (const j of query<{ payload: string }>(dataDir, 'SELECT payload FROM ad_jobs')) {
      expect(j.payload.toLowerCase()).not.toContain('jane');
      expect(j.payload).not.toContain('4155550100');
    }

    const js = jobs().filter((j) => j.conversion_id === id);
    expect(js.map((j) => [j.connection_id, j.state, j.attempts]).sort()).toEqual([[metaId, 'delivered', 1], [googleId, 'delivered', 1]].sort());
    const log = attempts().filter((a) => js.some((j) => j.id === a.job_id));
    expect(log.map((a) => [a.platform, a.attempt, a.ok, a.status]).sort()).toEqual([['google_ads', 1, true, 200], ['meta', 1, true, 200]]);
  });

  it('sends a conversion without revenue without a value', async () => {
    await visit(svc, site, 's2', 'https://shop.example/?gclid=Cj0-novalue');
    const id = await convert(svc, site, 's2', null, []);
    await mock.until(() => mock.meta.has(`Purchase:${id}`) && mock.google.has(id), 20_000, 'no-value conversion');
    const e = mock.meta.get(`Purchase:${id}`)!.event;
    expect(e.custom_data).toEqual({ content_ids: [], contents: [], content_type: 'product', order_id: id, num_items: 0 });
    const c = mock.google.get(id)!.conversion;
    expect(c).not.toHaveProperty('conversionValue');
    expect(c).not.toHaveProperty('currencyCode');
    expect(c).not.toHaveProperty('cartData');
    expect(c.gclid).toBe('Cj0-novalue');
  });

  it('retries 5xx and 429 with the same event id, and the platform counts it once', async () => {
    mock.overrides.meta.push({ status: 503, body: { error: { message: 'Service temporarily unavailable', code: 2, is_transient: true } } });
    mock.overrides.meta.push({ status: 429, body: { error: { message: 'Application request limit reached', code: 4 } }, headers: { 'retry-after': '0' } });
    const before = mock.requests.meta.length;
    await visit(svc, site, 's3', 'https://shop.example/p');
    const id = await convert(svc, site, 's3', 20);
    await mock.until(() => mock.meta.has(`Purchase:${id}`), 20_000, 'retried event');
    // The platform has counted it; svc records the outcome when the answer comes back, a moment later.
    await mock.until(() => jobState(id, metaId) === 'delivered', 10_000, 'delivered job');
    const sent = mock.requests.meta.slice(before).map((r) => (JSON.parse(r.body) as { data: { event_id: string }[] }).data.map((d) => d.event_id));
    expect(sent).toEqual([[id], [id], [id]]);
    expect(mock.meta.get(`Purchase:${id}`)!.arrivals).toBe(1);
    const job = jobs().find((j) => j.conversion_id === id && j.connection_id === metaId)!;
    expect(job).toMatchObject({ state: 'delivered', attempts: 3 });
    const log = attempts().filter((a) => a.job_id === job.id);
    expect(log.map((a) => [a.attempt, a.ok, a.status, a.error_class])).toEqual([
      [1, false, 503, 'http_status'],
      [2, false, 429, 'rate_limited'],
      [3, true, 200, null],
    ]);
  });

  it('isolates an event Meta rejects: the rest of its batch goes through once each, the bad one fails for good', async () => {
    await visit(svc, site, 's4', 'https://shop.example/q');
    mock.overrides.meta.push({ delayMs: 500 }); // holds the lane so the next conversions queue up into one batch
    const before = mock.requests.meta.length;
    const first = await convert(svc, site, 's4', 1);
    await mock.until(() => mock.requests.meta.length > before, 5_000, 'first request');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await convert(svc, site, 's4', 10 + i));
    mock.metaPoison.add(ids[2]!);
    await mock.until(() => [first, ...ids].filter((x) => x !== ids[2]).every((x) => mock.meta.has(`Purchase:${x}`)), 20_000, 'batch');
    await mock.until(() => jobState(ids[2]!, metaId) === 'failed', 10_000, 'failed job');
    const batches = mock.requests.meta.slice(before).map((r) => (JSON.parse(r.body) as { data: unknown[] }).data.length);
    expect(batches[0]).toBe(1);
    expect(batches[1]).toBe(5); // the five queued conversions went out as one request
    for (const x of [first, ...ids]) if (x !== ids[2]) expect(mock.meta.get(`Purchase:${x}`)!.arrivals).toBe(1);
    expect(mock.meta.has(`Purchase:${ids[2]}`)).toBe(false);
    const bad = jobs().find((j) => j.conversion_id === ids[2] && j.connection_id === metaId)!;
    expect(bad.attempts).toBe(1);
    expect(bad.last_error).toMatch(/^rejected: Meta rejected the event \(400\): Invalid parameter/);
  });

  it('reads Google partial failures per conversion', async () => {
    await visit(svc, site, 's5', 'https://shop.example/?gclid=Cj0-partial');
    mock.overrides.google.push({ delayMs: 500 });
    const before = mock.requests.google.length;
    await convert(svc, site, 's5', 5);
    await mock.until(() => mock.requests.google.length > before, 5_000, 'first google request');
    const good = await convert(svc, site, 's5', 6);
    const bad = await convert(svc, site, 's5', 7);
    mock.googleReject.add(bad);
    await mock.until(() => [good, bad].every((c) => ![undefined, 'pending'].includes(jobState(c, googleId))), 20_000, 'google jobs');
    const gj = jobs().filter((j) => j.connection_id === googleId);
    expect(gj.find((j) => j.conversion_id === good)).toMatchObject({ state: 'delivered', attempts: 1 });
    expect(gj.find((j) => j.conversion_id === bad)).toMatchObject({ state: 'failed', attempts: 1, last_error: 'rejected: conversionUploadError.UNPARSEABLE_GCLID: rejected by the test' });
    expect(mock.google.has(good)).toBe(true);
    expect(mock.google.has(bad)).toBe(false);
  });

  it('caches the Google access token, and refreshes it once when it is revoked', async () => {
    expect(mock.tokensIssued).toBe(1);
    const sealed = query<{ token_enc: string; token_expires_at: number }>(dataDir, 'SELECT token_enc, token_expires_at FROM ad_connections WHERE id = ?', googleId)[0]!;
    expect(sealed.token_enc).toMatch(/^v1\./);
    expect(sealed.token_enc).not.toContain('ya29');
    expect(sealed.token_expires_at).toBeGreaterThan(Date.now() + 3_000_000);
    mock.revokeTokens();
    await visit(svc, site, 's6', 'https://shop.example/?gclid=Cj0-revoked');
    const id = await convert(svc, site, 's6', 9);
    await mock.until(() => mock.google.has(id), 20_000, 'conversion after revocation');
    expect(mock.tokensIssued).toBe(2);
    expect(jobs().find((j) => j.conversion_id === id && j.connection_id === googleId)).toMatchObject({ state: 'delivered', attempts: 1 });
  });

  it('gives up on an answer that does not come in time, and the retry keeps the event id', async () => {
    mock.overrides.meta.push({ delayMs: 5_000 }); // twice the time limit: a slow host still times it out, and only it
    const before = mock.requests.meta.length;
    await visit(svc, site, 's7', 'https://shop.example/slow');
    const id = await convert(svc, site, 's7', 3);
    await mock.until(() => jobState(id, metaId) === 'delivered', 20_000, 'delivery after timeout');
    const job = jobs().find((j) => j.conversion_id === id && j.connection_id === metaId)!;
    const log = attempts().filter((a) => a.job_id === job.id);
    expect(log.map((a) => [a.attempt, a.ok, a.error_class])).toEqual([
      [1, false, 'timeout'],
      [2, true, null],
    ]);
    const sent = mock.requests.meta.slice(before).map((r) => (JSON.parse(r.body) as { data: { event_id: string }[] }).data[0]!.event_id);
    expect(new Set(sent)).toEqual(new Set([id]));
    expect(mock.meta.size).toBe(new Set([...mock.meta.keys()]).size);
  });

  it('does not queue conversions of another site, or for a disabled connection', async () => {
    const other = siteWith(dataDir, 'other.example', 'USD');
    await post(`${svc.url}/api/convert`, { site_id: other, session_id: 'o1', revenue: 1 });
    expect(query(dataDir, 'SELECT * FROM ad_jobs WHERE site_id = ?', other)).toEqual([]);
    expect(cli(['adplatform', 'update', metaId, '--disable', '--data', dataDir]).code).toBe(0);
    const id = await convert(svc, site, 's1', 4);
    expect(query<{ connection_id: string }>(dataDir, 'SELECT connection_id FROM ad_jobs WHERE conversion_id = ?', id).map((r) => r.connection_id)).toEqual([googleId]);
    expect(cli(['adplatform', 'update', metaId, '--enable', '--data', dataDir]).code).toBe(0);
  });

  it('never prints, logs or stores a credential in plaintext', () => {
    const list = cli(['adplatform', 'list', '--site', site, '--json', '--data', dataDir]);
    const human = cli(['adplatform', 'list', '--data', dataDir]);
    const rows = JSON.parse(list.stdout) as { platform: string; settings: Record<string, string>; secrets: string[] }[];
    expect(rows.map((r) => [r.platform, r.secrets])).toEqual([
      ['meta', ['access_token']],
      ['google_ads', ['client_id', 'client_secret', 'developer_token', 'refresh_token']],
    ]);
    expect(rows[1]!.settings).toEqual({ customer_id: '1234567890', conversion_action_id: '987654', merchant_id: '5551234', feed_country_code: 'US', feed_language_code: 'en' });
    const db = storedBytes(dataDir);
    for (const secret of [META_TOKEN, GOOGLE.developerToken, GOOGLE.clientSecret, GOOGLE.refreshToken, 'ya29.mock']) {
      expect(list.stdout).not.toContain(secret);
      expect(human.stdout).not.toContain(secret);
      expect(svc.stderr()).not.toContain(secret);
      expect(db.includes(Buffer.from(secret))).toBe(false);
    }
  });

  it('is managed through the MCP tools: read lists, admin adds and removes, secrets never come back', async () => {
    const mint = (scope: string) => cliJson<{ token: string }>(['token', 'mint', '--site', site, '--scope', scope, '--data', dataDir]).token;
    const connect = async (token: string) => {
      const client = new Client({ name: 'svc-test', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${svc.url}/api/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
      return client;
    };
    const reader = await connect(mint('read'));
    const admin = await connect(mint('admin'));
    try {
      const listed = (await reader.callTool({ name: 'adplatforms_list', arguments: {} })) as { structuredContent: { connections: { id: string }[] } };
      expect(listed.structuredContent.connections.map((c) => c.id)).toEqual([metaId, googleId]);
      const refused = (await reader.callTool({ name: 'adplatforms_add', arguments: { platform: 'meta', settings: { pixel_id: '999999' }, secrets: { access_token: META_TOKEN } } })) as { isError?: boolean; structuredContent?: unknown };
      expect(refused.isError).toBe(true);
      expect(errorOf(refused).code).toBe('insufficient_scope');
      const bad = (await admin.callTool({ name: 'adplatforms_add', arguments: { platform: 'meta', settings: { pixel_id: 'x' }, secrets: { access_token: META_TOKEN } } })) as { isError?: boolean; structuredContent?: unknown };
      expect(bad.isError).toBe(true);
      expect(JSON.stringify(errorOf(bad))).toContain('pixel_id must be 5 to 20 digits');
      const added = (await admin.callTool({ name: 'adplatforms_add', arguments: { platform: 'meta', name: 'second pixel', settings: { pixel_id: '999999' }, secrets: { access_token: 'EAAsecondpixeltoken0123456789' } } })) as { structuredContent: { id: string; secrets: string[] } };
      expect(added.structuredContent.secrets).toEqual(['access_token']);
      expect(JSON.stringify(added)).not.toContain('EAAsecondpixeltoken');
      const log = (await reader.callTool({ name: 'adplatforms_deliveries', arguments: { connection_id: googleId } })) as { structuredContent: { attempts: { platform: string; ok: boolean }[] } };
      expect(log.structuredContent.attempts.length).toBeGreaterThan(3);
      expect(new Set(log.structuredContent.attempts.map((a) => a.platform))).toEqual(new Set(['google_ads']));
      const removed = (await admin.callTool({ name: 'adplatforms_remove', arguments: { id: added.structuredContent.id } })) as { structuredContent: { removed: boolean } };
      expect(removed.structuredContent.removed).toBe(true);
      expect(query(dataDir, 'SELECT id FROM ad_connections WHERE id = ?', added.structuredContent.id)).toEqual([]);
    } finally {
      await reader.close();
      await admin.close();
    }
  });
});

describe('batch limits', () => {
  it('never puts more than 1,000 events in one Meta request', async () => {
    const mock = await startAdPlatforms();
    const dataDir = tempDir();
    const site = siteWith(dataDir);
    addMeta(dataDir, site);
    const svc = await startSvc({ dataDir, args: ['--allow-private-destinations'], env: { ...mock.env, SVC_ADPLATFORM_POLL_MS: '50', SVC_RATE_LIMIT: 'off' } });
    try {
      await visit(svc, site, 'b1', 'https://shop.example/bulk');
      let release!: () => void;
      mock.overrides.meta.push({ gate: new Promise<void>((r) => (release = r)) }); // holds the lane while a backlog builds
      const ids = [await convert(svc, site, 'b1', 1)];
      await mock.until(() => mock.requests.meta.length === 1, 5_000, 'first request');
      for (let round = 0; round < 21; round++) {
        ids.push(...(await Promise.all(Array.from({ length: 50 }, (_, i) => convert(svc, site, 'b1', round * 50 + i)))));
      }
      release();
      await mock.until(() => ids.every((x) => mock.meta.has(`Purchase:${x}`)), 30_000, '1,051 events');
      const sizes = mock.requests.meta.map((r) => (JSON.parse(r.body) as { data: unknown[] }).data.length);
      expect(sizes).toEqual([1, 1000, 50]);
      for (const x of ids) expect(mock.meta.get(`Purchase:${x}`)!.arrivals).toBe(1);
    } finally {
      await svc.stop();
      await mock.close();
      cleanup(dataDir);
    }
  });
});

describe('svc adplatform', () => {
  let dataDir: string;
  let site: string;
  beforeAll(() => {
    dataDir = tempDir();
    site = siteWith(dataDir);
  });
  afterAll(() => cleanup(dataDir));

  it('refuses bad settings with a clear usage error and stores nothing', () => {
    const base = ['adplatform', 'add', '--site', site, '--data', dataDir];
    const cases: [string[], RegExp][] = [
      [['--platform', 'tiktok'], /--platform must be one of meta, google_ads/],
      [['--platform', 'meta', '--pixel-id', '1234567890'], /meta needs --access-token/],
      [['--platform', 'meta', '--pixel-id', '12ab', '--access-token', META_TOKEN], /pixel_id must be 5 to 20 digits/],
      [['--platform', 'meta', '--pixel-id', '1234567890', '--access-token', META_TOKEN, '--customer-id', '1234567890'], /--customer-id do not apply to meta/],
      [['--platform', 'google_ads', '--customer-id', '12345', '--conversion-action', '1', '--developer-token', GOOGLE.developerToken, '--client-id', GOOGLE.clientId, '--client-secret', GOOGLE.clientSecret, '--refresh-token', GOOGLE.refreshToken], /customer_id must be 10 digits/],
      [['--platform', 'google_ads', '--customer-id', '1234567890', '--conversion-action', '1', '--feed-country', 'US', '--developer-token', GOOGLE.developerToken, '--client-id', GOOGLE.clientId, '--client-secret', GOOGLE.clientSecret, '--refresh-token', GOOGLE.refreshToken], /need merchant_id/],
      [['--platform', 'meta', '--pixel-id', '1234567890', '--access-token', 'env:SVC_TEST_UNSET_VAR'], /SVC_TEST_UNSET_VAR is not set/],
    ];
    for (const [args, message] of cases) {
      const r = cli([...base, ...args]);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
    const noDomain = cliJson<{ site_id: string }>(['site', 'create', '--name', 'No domain', '--data', dataDir]).site_id;
    const r = cli(['adplatform', 'add', '--site', noDomain, '--platform', 'meta', '--pixel-id', '1234567890', '--access-token', META_TOKEN, '--data', dataDir]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/event_source_url is required when the site has no domain/);
    expect(cli(['adplatform', 'add', '--site', 'site_nope', '--platform', 'meta', '--pixel-id', '1234567890', '--access-token', META_TOKEN, '--data', dataDir]).code).toBe(2);
    expect(query(dataDir, 'SELECT * FROM ad_connections')).toEqual([]);
  });

  it('rotates credentials and removes a connection', () => {
    const id = addMeta(dataDir, site, ['--test-event-code', 'TEST123']);
    const before = query<{ secrets_enc: string }>(dataDir, 'SELECT secrets_enc FROM ad_connections WHERE id = ?', id)[0]!.secrets_enc;
    expect(cli(['adplatform', 'update', id, '--access-token', 'EAAanotheraccesstoken987654321', '--data', dataDir]).code).toBe(0);
    const after = query<{ secrets_enc: string }>(dataDir, 'SELECT secrets_enc FROM ad_connections WHERE id = ?', id)[0]!.secrets_enc;
    expect(after).not.toBe(before);
    const wrong = cli(['adplatform', 'update', id, '--refresh-token', 'x'.repeat(20), '--data', dataDir]);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/--refresh-token do not apply to meta/);
    expect(cli(['adplatform', 'remove', id, '--data', dataDir]).code).toBe(0);
    expect(cli(['adplatform', 'remove', id, '--data', dataDir]).code).toBe(1);
    expect(cliJson<unknown[]>(['adplatform', 'list', '--site', site, '--data', dataDir])).toEqual([]);
  });

  it('changes the site currency that conversions are recorded in', () => {
    const r = cliJson<{ currency: string }>(['site', 'update', site, '--currency', 'GBP', '--data', dataDir]);
    expect(r.currency).toBe('GBP');
    expect(cli(['site', 'update', site, '--currency', 'gbp', '--data', dataDir]).code).toBe(2);
    expect(cli(['site', 'update', 'site_nope', '--currency', 'GBP', '--data', dataDir]).code).toBe(1);
  });
});

describe('fan-out durability', () => {
  it('keeps a job whose platform is down across a restart and sends it afterwards, once', async () => {
    const mock = await startAdPlatforms();
    const dataDir = tempDir();
    let svc: Svc | undefined;
    try {
      const site = siteWith(dataDir);
      const metaId = addMeta(dataDir, site);
      for (let i = 0; i < 20; i++) mock.overrides.meta.push({ status: 502, body: {} });
      const env = { ...mock.env, ...FAST, SVC_ADPLATFORM_RETRY_SCHEDULE: '200ms,200ms,200ms,200ms,200ms,200ms,200ms,200ms' };
      svc = await startSvc({ dataDir, args: ['--allow-private-destinations'], env });
      await visit(svc, site, 'd1', 'https://shop.example/');
      const id = await convert(svc, site, 'd1', 42);
      await mock.until(() => mock.requests.meta.length >= 2, 10_000, 'two failed attempts');
      expect(await svc.stop()).toBe(0);
      const [pending] = query<{ state: string; attempts: number; payload: string }>(dataDir, 'SELECT state, attempts, payload FROM ad_jobs WHERE connection_id = ?', metaId);
      expect(pending!.state).toBe('pending');
      expect(pending!.attempts).toBeGreaterThanOrEqual(2);
      mock.overrides.meta.length = 0;
      svc = await startSvc({ dataDir, args: ['--allow-private-destinations'], env });
      await mock.until(() => mock.meta.has(`Purchase:${id}`), 20_000, 'delivery after restart');
      expect(mock.meta.get(`Purchase:${id}`)!.arrivals).toBe(1);
      await svc.stop();
      svc = undefined;
      expect(query<{ state: string }>(dataDir, 'SELECT state FROM ad_jobs WHERE connection_id = ?', metaId)).toEqual([{ state: 'delivered' }]);
    } finally {
      if (svc) await svc.kill();
      await mock.close();
      cleanup(dataDir);
    }
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, cli, cliJson, createSite, post, startSvc, tempDir, type Svc } from '../helpers/svc.js';
import { PG_BASE_URL } from '../helpers/backend.js';
import { startReceiver } from '../helpers/receiver.js';
import { McpClients, call, mintToken } from '../helpers/mcp-client.js';
import { query } from '../helpers/db.js';
import { Scrape } from '../helpers/metrics.js';
import { META_TOKEN, startAdPlatforms } from '../helpers/adplatforms-mock.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('GET /metrics on its own listener', () => {
  let dir: string;
  let site: string;
  let svc: Svc;
  let metricsUrl: string;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  const dests: string[] = [];
  const clients = new McpClients(() => svc.url);
  let token: string;

  beforeAll(async () => {
    dir = tempDir();
    site = createSite(dir);
    receiver = await startReceiver();
    for (const path of ['/a', '/b']) {
      const r = cli(['webhooks', 'add', '--site', site, '--url', `${receiver.url}${path}`, '--events', 'pageview', '--allow-private-destinations', '--data', dir, '--json']);
      expect(r.code).toBe(0);
      dests.push((JSON.parse(r.stdout) as { id: string }).id);
    }
    token = mintToken(dir, site);
    svc = await startSvc({
      dataDir: dir,
      args: ['--metrics-port', '0', '--allow-private-destinations'],
      // One destination gets a label of its own, the other is counted as "other"; a tiny per-address
      // bucket so a test can be refused (each other request comes from an address of its own).
      env: { SVC_METRICS_DESTINATION_LABELS: '1', SVC_TRUST_PROXY: '1', SVC_INGEST_IP_RATE: '1', SVC_INGEST_IP_BURST: '3', SVC_WEBHOOK_POLL_MS: '50' },
    });
    metricsUrl = await until('the metrics line', async () => /svc metrics on (http:\/\/\S+)/.exec(svc.stderr())?.[1]);
  });

  afterAll(async () => {
    await clients.closeAll();
    await svc?.stop();
    await receiver?.close();
    cleanup(dir);
  });

  it('listens on its own port, serves only /metrics, in the Prometheus text format with the process metrics', async () => {
    expect(new URL(metricsUrl).port).not.toBe(new URL(svc.url).port);
    expect((await fetch(`${new URL(metricsUrl).origin}/other`)).status).toBe(404);
    // The main port has no /metrics.
    expect((await fetch(`${svc.url}/metrics`)).status).toBe(404);
    const s = await Scrape.of(metricsUrl);
    expect(s.family('process_cpu_user_seconds_total')?.type).toBe('COUNTER');
    expect(s.family('nodejs_eventloop_lag_seconds')?.type).toBe('GAUGE');
    expect(s.value('svc_build_info')).toBe(1);
    expect(s.labelValues('svc_outbox_backlog', 'queue')).toEqual(['adplatform_jobs', 'outbox', 'webhook_deliveries']);
    expect(s.family('svc_pg_pool_connections') !== undefined).toBe(PG_BASE_URL !== undefined);
    if (PG_BASE_URL !== undefined) expect(s.value('svc_pg_pool_connections', { state: 'max' })).toBe(10);
    // Time partitions (PostgreSQL): the migration made the months ahead, so the start created none and nothing is past retention.
    expect(s.family('svc_store_partitions_total') !== undefined).toBe(PG_BASE_URL !== undefined);
    if (PG_BASE_URL !== undefined) {
      expect(s.family('svc_store_partitions_total')?.type).toBe('COUNTER');
      expect(s.value('svc_store_partitions_total', { action: 'created' })).toBe(0);
      expect(s.value('svc_store_partitions_total', { action: 'dropped' })).toBe(0);
    }
  });

  it('moves each counter by exactly what was sent', async () => {
    const before = await Scrape.of(metricsUrl);
    const N = 7;
    const BAD = 3;
    for (let i = 0; i < N; i++) {
      const r = await post(`${svc.url}/api/events`, { site_id: site, session_id: `m-${i}`, type: 'pageview' }, { 'x-forwarded-for': `10.0.0.${i}` });
      expect(r.status).toBe(201);
    }
    for (let i = 0; i < BAD; i++) {
      const r = await post(`${svc.url}/api/events`, { site_id: site, type: 'pageview' }, { 'x-forwarded-for': `10.0.1.${i}` });
      expect(r.status).toBe(400);
    }
    // One address over its bucket of 3: every 429 it gets is counted, nothing else.
    let refused = 0;
    for (let i = 0; i < 6; i++) {
      const r = await post(`${svc.url}/api/score`, { site_id: site, session_id: 'rl' }, { 'x-forwarded-for': '10.0.2.1' });
      if (r.status === 429) refused++;
      else expect(r.status).toBe(201);
    }
    expect(refused).toBeGreaterThan(0);
    const mcp = await clients.connect(token);
    for (let i = 0; i < 2; i++) expect((await call(mcp, 'whoami')).isError).toBeFalsy();
    expect((await call(mcp, 'profiles_get', { by: 'nope' })).isError).toBe(true);
    // An unknown tool is a protocol error: it must not mint a label.
    await expect(call(mcp, 'no_such_tool_xyz')).rejects.toThrow();
    // Every pageview goes to both destinations.
    await receiver.waitFor(2 * N);
    const after = await until('deliveries recorded in /metrics', async () => {
      const s = await Scrape.of(metricsUrl);
      return s.value('svc_webhook_deliveries_total', { outcome: 'delivered' }) - before.value('svc_webhook_deliveries_total', { outcome: 'delivered' }) >= 2 * N ? s : undefined;
    });
    const delta = (name: string, labels: Record<string, string> = {}) => after.value(name, labels) - before.value(name, labels);
    expect(delta('svc_http_requests_total', { route: '/api/events', method: 'POST', status: '201' })).toBe(N);
    expect(delta('svc_http_requests_total', { route: '/api/events', method: 'POST', status: '400' })).toBe(BAD);
    expect(delta('svc_http_requests_total', { route: '/api/score', status: '429' })).toBe(refused);
    expect(after.histogram('svc_http_request_duration_seconds', { route: '/api/events', status: '201' }).count - before.histogram('svc_http_request_duration_seconds', { route: '/api/events', status: '201' }).count).toBe(N);
    expect(delta('svc_ingest_requests_total', { endpoint: '/api/events', outcome: 'acknowledged', reason: 'ok' })).toBe(N);
    expect(delta('svc_ingest_requests_total', { endpoint: '/api/events', outcome: 'refused', reason: 'validation_failed' })).toBe(BAD);
    expect(delta('svc_ingest_requests_total', { endpoint: '/api/score', outcome: 'refused', reason: 'rate_limited' })).toBe(refused);
    expect(delta('svc_rate_limit_refusals_total', { surface: 'ingest', scope: 'client_address' })).toBe(refused);
    expect(delta('svc_mcp_tool_calls_total', { tool: 'whoami', outcome: 'ok' })).toBe(2);
    expect(delta('svc_mcp_tool_calls_total', { tool: 'profiles_get', outcome: 'invalid' })).toBe(1);
    expect(after.labelValues('svc_mcp_tool_calls_total', 'tool')).not.toContain('no_such_tool_xyz');
    expect(delta('svc_webhook_deliveries_total', { outcome: 'delivered' })).toBe(2 * N);
    // Cardinality cap of 1: one destination by id, the other as "other"; never a URL.
    const labels = after.labelValues('svc_webhook_deliveries_total', 'destination');
    expect(labels).toHaveLength(2);
    expect(labels).toContain('other');
    expect(dests).toContain(labels.find((l) => l !== 'other'));
    expect(JSON.stringify(after.families)).not.toContain(receiver.url);
    // Every acknowledged write went through a group commit of this store.
    const backend = PG_BASE_URL === undefined ? 'sqlite' : 'pg';
    const groups = after.histogram('svc_store_group_commit_operations', { backend });
    const groupsBefore = before.histogram('svc_store_group_commit_operations', { backend });
    expect(groups.count - groupsBefore.count).toBeGreaterThan(0);
    expect(groups.sum - groupsBefore.sum).toBeGreaterThanOrEqual(N + (6 - refused));
    expect(after.histogram('svc_store_group_commit_duration_seconds', { backend }).count).toBe(groups.count);
    const modes = ['set_based', 'in_turn', 'rerun'].reduce((a, mode) => a + delta('svc_store_group_commits_total', { backend, mode }), 0);
    expect(modes).toBe(groups.count - groupsBefore.count);
    const trips = after.histogram('svc_store_group_commit_round_trips', { backend });
    if (backend === 'sqlite') expect(trips.sum).toBe(0);
    else expect(trips.sum).toBeGreaterThanOrEqual(2 * groups.count + groups.sum);
  });
});

describe('ad-platform jobs in /metrics', () => {
  it('counts each job attempt by platform, connection and outcome once it is recorded', async () => {
    const mock = await startAdPlatforms();
    const dir = tempDir();
    const site = cliJson<{ site_id: string }>(['site', 'create', '--name', 'Shop', '--domain', 'shop.example', '--data', dir]).site_id;
    const conn = cliJson<{ id: string }>(['adplatform', 'add', '--site', site, '--platform', 'meta', '--pixel-id', '1234567890', '--access-token', META_TOKEN, '--data', dir]).id;
    const svc = await startSvc({ dataDir: dir, args: ['--allow-private-destinations', '--metrics-port', '0'], env: { ...mock.env, SVC_ADPLATFORM_POLL_MS: '50' } });
    try {
      const metricsUrl = await until('the metrics line', async () => /svc metrics on (http:\/\/\S+)/.exec(svc.stderr())?.[1]);
      for (const s of ['ad-1', 'ad-2']) {
        // A click id and an email: enough for Meta to attribute the event.
        expect((await post(`${svc.url}/api/events`, { site_id: site, session_id: s, type: 'pageview', url: `https://shop.example/?fbclid=IwAR_${s}` })).status).toBe(201);
        expect((await post(`${svc.url}/api/identify`, { site_id: site, session_id: s, traits: { email: `${s}@example.com` } })).status).toBe(200);
        const r = await post(`${svc.url}/api/convert`, { site_id: site, session_id: s, revenue: 12, line_items: [{ sku: 'MUG', qty: 1, price: 12 }] });
        expect(r.status).toBe(201);
      }
      await mock.until(() => mock.meta.size === 2, 20_000, 'two Meta events');
      const after = await until('two delivered jobs in /metrics', async () => {
        const s = await Scrape.of(metricsUrl);
        return s.value('svc_adplatform_jobs_total') >= 2 ? s : undefined;
      });
      expect(after.value('svc_adplatform_jobs_total', { platform: 'meta', connection: conn, outcome: 'delivered' })).toBe(2);
      expect(after.value('svc_adplatform_jobs_total')).toBe(2);
      expect(JSON.stringify(after.families)).not.toContain(META_TOKEN);
    } finally {
      await svc.stop();
      await mock.close();
      cleanup(dir);
    }
  });
});

describe('request ids', () => {
  let dir: string;
  let site: string;
  let svc: Svc;
  let trusting: Svc;

  beforeAll(async () => {
    dir = tempDir();
    site = createSite(dir);
    svc = await startSvc({ dataDir: dir, env: { SVC_LOG_LEVEL: 'debug' } });
  });

  afterAll(async () => {
    await svc?.stop();
    await trusting?.stop();
    cleanup(dir);
  });

  it('are in the response header, the error body and the log lines of a refused request', async () => {
    const r = await post(`${svc.url}/api/events`, { site_id: site, type: 'pageview' }, { 'x-request-id': 'from-a-client-1' });
    expect(r.status).toBe(400);
    const id = r.headers.get('x-request-id');
    // Not trusted by default: a client's X-Request-Id is replaced.
    expect(id).toMatch(UUID);
    expect(r.body.error.request_id).toBe(id);
    const line = await until('the log line of the request', async () =>
      svc
        .stderr()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .find((l) => l.request_id === id),
    );
    expect(line).toMatchObject({ msg: 'request', method: 'POST', route: '/api/events', status: 400, error: 'validation_failed' });
    // Successful requests carry one too, distinct per request.
    const ok = await post(`${svc.url}/api/events`, { site_id: site, session_id: 's', type: 'pageview' });
    expect(ok.status).toBe(201);
    expect(ok.headers.get('x-request-id')).toMatch(UUID);
    expect(ok.headers.get('x-request-id')).not.toBe(id);
  });

  it('are in the error bodies of every surface and in the MCP audit row', async () => {
    const pulse = await fetch(`${svc.url}/api/pulse/v1/profile?email=a@b.c`);
    const pulseBody = (await pulse.json()) as any;
    expect(pulse.status).toBe(401);
    expect(pulseBody.error.request_id).toBe(pulse.headers.get('x-request-id'));
    const missing = await fetch(`${svc.url}/nowhere`);
    expect(((await missing.json()) as any).error.request_id).toBe(missing.headers.get('x-request-id'));
    const mcp = await post(`${svc.url}/api/mcp`, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { accept: 'application/json, text/event-stream' });
    expect(mcp.status).toBe(401);
    expect(mcp.body.error.data.request_id).toBe(mcp.headers.get('x-request-id'));
    const token = mintToken(dir, site);
    const clients = new McpClients(() => svc.url);
    const client = await clients.connect(token);
    expect((await call(client, 'whoami')).isError).toBeFalsy();
    await clients.closeAll();
    const rows = query<{ request_id: string | null }>(dir, 'SELECT request_id FROM mcp_audit WHERE tool = ?', 'whoami');
    expect(rows).toHaveLength(1);
    expect(rows[0]!.request_id).toMatch(UUID);
    // The same id is on the server's log line of that HTTP request.
    await until('the log line of the tools/call request', async () => (svc.stderr().includes(`"request_id":"${rows[0]!.request_id}"`) ? true : undefined));
  });

  it('are taken from a trusted proxy when they are plausible ids', async () => {
    trusting = await startSvc({ dataDir: dir, env: { SVC_TRUST_PROXY: '1' } });
    const given = await post(`${trusting.url}/api/events`, { site_id: site, type: 'x' }, { 'x-request-id': 'lb-7f3a:91.b_c~d' });
    expect(given.headers.get('x-request-id')).toBe('lb-7f3a:91.b_c~d');
    expect(given.body.error.request_id).toBe('lb-7f3a:91.b_c~d');
    for (const bad of ['has space', 'x'.repeat(129), 'quote"d', 'ünï']) {
      const r = await fetch(`${trusting.url}/healthz`, { headers: { 'x-request-id': bad } }).catch(() => null);
      if (r === null) continue; // fetch itself refuses some header values
      expect(r.headers.get('x-request-id')).toMatch(UUID);
    }
  });
});

describe('svc serve settings of the metrics listener', () => {
  it('refuses a bad --metrics-port with a usage error', () => {
    const r = cli(['serve', '--metrics-port', 'abc', '--data', tempDir()]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--metrics-port/);
  });
});

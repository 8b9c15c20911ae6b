import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, cli, cliAsync, cliJson, createSite, post, startSvc, tempDir, type Svc } from '../helpers/svc.js';
import { startReceiver } from '../helpers/receiver.js';
import { query } from '../helpers/db.js';
import { validatePayload, isEventType } from '../../src/webhooks/catalogue.js';

const hmac = (body: string, key: string) => createHmac('sha256', key).update(body, 'utf8').digest('hex');
const PRIVATE = ['--allow-private-destinations'];

function addDestination(dataDir: string, site: string, url: string, events: string, secret?: string) {
  const args = ['webhooks', 'add', '--site', site, '--url', url, '--events', events, '--data', dataDir, ...PRIVATE, '--json'];
  if (secret) args.push('--secret', secret);
  const r = cli(args);
  if (r.code !== 0) throw new Error(r.stderr);
  return { id: (JSON.parse(r.stdout) as { id: string }).id, stderr: r.stderr };
}

const FAST = { SVC_WEBHOOK_RETRY_SCHEDULE: '100ms,100ms', SVC_WEBHOOK_POLL_MS: '50' };

describe('signed deliveries', () => {
  let svc: Svc;
  let dataDir: string;
  let site: string;
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  let onlyConversions: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    dataDir = tempDir();
    site = createSite(dataDir);
    rx = await startReceiver();
    onlyConversions = await startReceiver();
    addDestination(dataDir, site, `${rx.url}/hooks`, 'all', 'whsec_test_secret');
    addDestination(dataDir, site, `${onlyConversions.url}/c`, 'conversion,lead.captured', 'another-secret');
    svc = await startSvc({ dataDir, args: PRIVATE, env: FAST });
  });
  afterAll(async () => {
    await svc.stop();
    await rx.close();
    await onlyConversions.close();
    cleanup(dataDir);
  });

  it('delivers every outbox event signed over the raw body, with event, delivery id and user agent headers', async () => {
    await post(`${svc.url}/api/identify`, { site_id: site, session_id: 's1', visitor_id: 'v1', traits: { email: 'a@example.com' } });
    await post(`${svc.url}/api/events`, { site_id: site, session_id: 's1', type: 'pageview', url: 'https://shop.example/' });
    await post(`${svc.url}/api/events`, { site_id: site, session_id: 's1', type: 'click' });
    await post(`${svc.url}/api/convert`, { site_id: site, session_id: 's1', revenue: 10, line_items: [{ sku: 'A', qty: 1, price: 10 }] });
    await post(`${svc.url}/api/lead/capture`, { site_id: site, session_id: 's1', email: 'a@example.com' });
    const got = await rx.waitFor(5);
    expect(got.map((r) => r.headers['x-svc-event']).sort()).toEqual(['click', 'conversion', 'lead.captured', 'pageview', 'profile.identified']);
    for (const r of got) {
      expect(r.path).toBe('/hooks');
      expect(r.headers['content-type']).toBe('application/json');
      expect(r.headers['x-svc-signature']).toBe(hmac(r.body, 'whsec_test_secret'));
      expect(r.headers['x-svc-delivery']).toMatch(/^dlv_/);
      expect(r.headers['user-agent']).toMatch(/^svc-webhooks\/\d+\.\d+\.\d+/);
      const payload = JSON.parse(r.body) as { event: string };
      expect(payload.event).toBe(r.headers['x-svc-event']);
      expect(isEventType(payload.event)).toBe(true);
      const check = validatePayload(payload.event as never, payload);
      expect(check.success, JSON.stringify(check.error?.issues)).toBe(true);
    }
    const c = await onlyConversions.waitFor(2);
    expect(c.map((r) => r.headers['x-svc-event']).sort()).toEqual(['conversion', 'lead.captured']);
    for (const r of c) expect(r.headers['x-svc-signature']).toBe(hmac(r.body, 'another-secret'));
    await new Promise((r) => setTimeout(r, 300));
    expect(onlyConversions.received).toHaveLength(2);
  });

  it('logs successful attempts in the health log', async () => {
    const log = cliJson<{ ok: boolean; status: number; kind: string; latency_ms: number }[]>(['webhooks', 'deliveries', '--site', site, '--data', dataDir]);
    expect(log.length).toBeGreaterThanOrEqual(7);
    expect(log.every((l) => l.ok && l.status === 200 && l.kind === 'attempt' && l.latency_ms >= 0)).toBe(true);
  });

  it('sends a signed sample with `svc webhooks test`', async () => {
    const dests = cliJson<{ id: string; url: string }[]>(['webhooks', 'list', '--site', site, '--data', dataDir]);
    const d = dests.find((x) => x.url.endsWith('/hooks'))!;
    const before = rx.received.length;
    const r = await cliAsync(['webhooks', 'test', d.id, '--event', 'stall.found', '--data', dataDir, ...PRIVATE]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^ok: receiver answered 200/);
    const sample = rx.received[before]!;
    expect(sample.headers['x-svc-event']).toBe('stall.found');
    expect(sample.headers['x-svc-signature']).toBe(hmac(sample.body, 'whsec_test_secret'));
    expect(validatePayload('stall.found', JSON.parse(sample.body)).success).toBe(true);
  });
});

describe('retries, failure, replay and auto-disable', () => {
  it('retries with the same delivery id, logs each failure, and replays a failed delivery', async () => {
    const dataDir = tempDir();
    const site = createSite(dataDir);
    const rx = await startReceiver(() => ({ status: 503, body: 'down for maintenance' }));
    const { id: dest, stderr } = addDestination(dataDir, site, `${rx.url}/x`, 'conversion');
    expect(stderr).toContain('no --secret set');
    const svc = await startSvc({ dataDir, args: PRIVATE, env: FAST });
    await post(`${svc.url}/api/convert`, { site_id: site, session_id: 's', revenue: 5 });
    const tries = await rx.waitFor(3);
    await new Promise((r) => setTimeout(r, 400));
    expect(rx.received).toHaveLength(3); // 1 + 2 retries, then failed for good
    const ids = new Set(tries.map((t) => t.headers['x-svc-delivery']));
    expect(ids.size).toBe(1);
    for (const t of tries) expect(t.headers['x-svc-signature']).toBe(hmac(t.body, site));
    const failed = cliJson<{ ok: boolean; status: number; error_class: string; response_excerpt: string; attempt: number }[]>([
      'webhooks', 'deliveries', '--destination', dest, '--failed', '--data', dataDir,
    ]);
    expect(failed.map((f) => [f.attempt, f.status, f.error_class, f.response_excerpt])).toEqual([
      [1, 503, 'http_status', 'down for maintenance'],
      [2, 503, 'http_status', 'down for maintenance'],
      [3, 503, 'http_status', 'down for maintenance'],
    ]);
    const deliveryId = String([...ids][0]);
    expect(query(dataDir, 'SELECT state, attempts FROM deliveries WHERE id = ?', deliveryId)).toEqual([{ state: 'failed', attempts: 3 }]);

    rx.setBehaviour(() => ({ status: 204 }));
    const replay = await cliAsync(['webhooks', 'replay', deliveryId, '--data', dataDir, ...PRIVATE]);
    expect(replay.code).toBe(0);
    expect(replay.stdout).toContain('replayed 1: 1 ok, 0 failed');
    const last = rx.received.at(-1)!;
    expect(last.headers['x-svc-delivery']).toBe(deliveryId);
    expect(last.headers['x-svc-signature']).toBe(hmac(last.body, site));
    expect(query(dataDir, 'SELECT state FROM deliveries WHERE id = ?', deliveryId)).toEqual([{ state: 'delivered' }]);
    await svc.stop();
    await rx.close();
    cleanup(dataDir);
  });

  it('bulk-replays the failed deliveries of a destination, printing one line each when piped', async () => {
    const dataDir = tempDir();
    const site = createSite(dataDir);
    const rx = await startReceiver(() => ({ status: 500 }));
    const { id: dest } = addDestination(dataDir, site, `${rx.url}/x`, 'pageview', 'bulk-secret');
    const svc = await startSvc({ dataDir, args: PRIVATE, env: { ...FAST, SVC_WEBHOOK_RETRY_SCHEDULE: '10ms' } });
    for (let i = 0; i < 5; i++) await post(`${svc.url}/api/events`, { site_id: site, session_id: `b${i}`, type: 'pageview' });
    await rx.waitFor(10);
    await svc.stop();
    rx.setBehaviour(() => ({ status: 200 }));
    const before = rx.received.length;
    const r = await cliAsync(['webhooks', 'replay', '--destination', dest, '--failed', '--data', dataDir, ...PRIVATE]);
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(6);
    expect(lines.slice(0, 5).every((l) => / pageview ok 200 \d+ms$/.test(l))).toBe(true);
    expect(lines[5]).toBe('replayed 5: 5 ok, 0 failed');
    expect(rx.received.length - before).toBe(5);
    for (const x of rx.received.slice(before)) expect(x.headers['x-svc-signature']).toBe(hmac(x.body, 'bulk-secret'));
    await rx.close();
    cleanup(dataDir);
  });

  it('disables a destination that keeps failing, with a health-log entry saying why', async () => {
    const dataDir = tempDir();
    const site = createSite(dataDir);
    const rx = await startReceiver(() => ({ status: 500 }));
    const { id: dest } = addDestination(dataDir, site, `${rx.url}/x`, 'click', 'secret-123');
    const svc = await startSvc({
      dataDir,
      args: PRIVATE,
      env: { ...FAST, SVC_WEBHOOK_RETRY_SCHEDULE: '10ms', SVC_WEBHOOK_DISABLE_AFTER_FAILURES: '4', SVC_WEBHOOK_DISABLE_WINDOW: '0ms' },
    });
    for (let i = 0; i < 6; i++) await post(`${svc.url}/api/events`, { site_id: site, session_id: 'd', type: 'click' });
    const deadline = Date.now() + 10_000;
    let d = cliJson<{ id: string; enabled: boolean; disabled_reason: string }[]>(['webhooks', 'list', '--data', dataDir])[0]!;
    while (d.enabled && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      d = cliJson<typeof d[]>(['webhooks', 'list', '--data', dataDir])[0]!;
    }
    expect(d.enabled).toBe(false);
    expect(d.disabled_reason).toMatch(/^disabled automatically after 4 consecutive failed attempts since .*; last: http_status 500$/);
    const log = cliJson<{ kind: string; error_class: string; message: string }[]>(['webhooks', 'deliveries', '--destination', dest, '--data', dataDir]);
    expect(log.filter((l) => l.kind === 'disabled')).toEqual([expect.objectContaining({ error_class: 'destination_disabled', message: d.disabled_reason })]);
    await new Promise((r) => setTimeout(r, 300));
    const count = rx.received.length;
    await new Promise((r) => setTimeout(r, 300));
    expect(rx.received.length).toBe(count); // nothing more is sent once disabled
    await svc.stop();
    await rx.close();
    cleanup(dataDir);
  });
});

describe('isolation, timeouts, redirects and the destination guard', () => {
  it('a receiver that hangs does not delay another destination, and is cut at 5 s', async () => {
    const dataDir = tempDir();
    const site = createSite(dataDir);
    const slow = await startReceiver(() => 'hang');
    const fast = await startReceiver();
    addDestination(dataDir, site, `${slow.url}/slow`, 'pageview', 'slow-secret');
    addDestination(dataDir, site, `${fast.url}/fast`, 'pageview', 'fast-secret');
    const svc = await startSvc({ dataDir, args: PRIVATE, env: { ...FAST, SVC_WEBHOOK_RETRY_SCHEDULE: '1h', SVC_WEBHOOK_CONCURRENCY: '4' } });
    const t0 = Date.now();
    for (let i = 0; i < 40; i++) await post(`${svc.url}/api/events`, { site_id: site, session_id: `i${i}`, type: 'pageview' });
    await fast.waitFor(40);
    // all 40 reached the fast receiver while the slow one still holds its first requests unanswered
    expect(slow.received.length).toBeLessThanOrEqual(4);
    const log = await (async () => {
      for (;;) {
        const l = cliJson<{ error_class: string; latency_ms: number; destination_id: string }[]>(['webhooks', 'deliveries', '--failed', '--data', dataDir]);
        if (l.length >= 4 || Date.now() - t0 > 15_000) return l;
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    expect(log.length).toBeGreaterThanOrEqual(4);
    for (const l of log.slice(0, 4)) {
      expect(l.error_class).toBe('timeout');
      expect(l.latency_ms).toBeGreaterThanOrEqual(4900);
    }
    await svc.stop();
    await slow.close();
    await fast.close();
    cleanup(dataDir);
  });

  it('never follows a redirect', async () => {
    const dataDir = tempDir();
    const site = createSite(dataDir);
    const rx = await startReceiver((r) => (r.path === '/start' ? { status: 302, headers: { location: '/elsewhere' } } : { status: 200 }));
    addDestination(dataDir, site, `${rx.url}/start`, 'click', 'redirect-secret');
    const svc = await startSvc({ dataDir, args: PRIVATE, env: { ...FAST, SVC_WEBHOOK_RETRY_SCHEDULE: '1h' } });
    await post(`${svc.url}/api/events`, { site_id: site, session_id: 'r', type: 'click' });
    await rx.waitFor(1);
    await new Promise((r) => setTimeout(r, 300));
    expect(rx.received.map((r) => r.path)).toEqual(['/start']);
    const [entry] = cliJson<{ status: number; ok: boolean }[]>(['webhooks', 'deliveries', '--data', dataDir]);
    expect(entry).toMatchObject({ status: 302, ok: false });
    await svc.stop();
    await rx.close();
    cleanup(dataDir);
  });

  it('refuses private destinations at configuration and at delivery time unless explicitly allowed', async () => {
    const dataDir = tempDir();
    const site = createSite(dataDir);
    for (const url of ['http://127.0.0.1:9/x', 'http://localhost:9/x', 'http://169.254.169.254/latest', 'http://[::1]/', 'http://2130706433/', 'ftp://example.com/']) {
      const r = cli(['webhooks', 'add', '--site', site, '--url', url, '--events', 'all', '--secret', 'secret-123', '--data', dataDir]);
      expect(r.code, url).toBe(1);
      expect(r.stderr).toMatch(/^svc: url: /);
    }
    expect(cliJson<unknown[]>(['webhooks', 'list', '--data', dataDir])).toEqual([]);
    const rx = await startReceiver();
    addDestination(dataDir, site, `${rx.url}/x`, 'click', 'secret-123'); // added while allowed
    const svc = await startSvc({ dataDir, env: { ...FAST, SVC_WEBHOOK_RETRY_SCHEDULE: '1h' } }); // serving without the flag
    await post(`${svc.url}/api/events`, { site_id: site, session_id: 'g', type: 'click' });
    let log: { error_class: string }[] = [];
    for (let i = 0; i < 100 && log.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 100));
      log = cliJson(['webhooks', 'deliveries', '--data', dataDir]);
    }
    expect(log).toEqual([expect.objectContaining({ error_class: 'destination_refused' })]);
    expect(rx.received).toHaveLength(0);
    await svc.stop();
    await rx.close();
    cleanup(dataDir);
  });

  it('validates event lists and names the unknown type', () => {
    const dataDir = tempDir();
    const site = createSite(dataDir);
    const r = cli(['webhooks', 'add', '--site', site, '--url', 'https://example.com/h', '--events', 'pageview,nope', '--data', dataDir]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('unknown event type "nope"');
    cleanup(dataDir);
  });
});

describe('durable at-least-once delivery', () => {
  it('delivers every event after a SIGKILL mid-drain, duplicates only under the same delivery id', async () => {
    const dataDir = tempDir();
    const site = createSite(dataDir);
    const rx = await startReceiver(() => new Promise((r) => setTimeout(() => r({ status: 200 }), 5)));
    addDestination(dataDir, site, `${rx.url}/d`, 'pageview', 'durable-secret');
    // The restarted process is a new lease holder: it takes the destination over once the killed one's lease runs out.
    const lease = { SVC_LANE_LEASE_MS: '10000' };
    const svc = await startSvc({ dataDir, args: PRIVATE, env: { ...FAST, ...lease, SVC_WEBHOOK_CONCURRENCY: '2' } });
    const N = 300;
    for (let i = 0; i < N; i += 50) {
      await Promise.all(Array.from({ length: 50 }, (_, j) => post(`${svc.url}/api/events`, { site_id: site, session_id: `k${i + j}`, type: 'pageview', n: i + j })));
    }
    await rx.waitFor(40);
    await svc.kill();
    expect(rx.received.length).toBeLessThan(N);
    const again = await startSvc({ dataDir, args: PRIVATE, env: { ...FAST, ...lease } });
    try {
      const byDelivery = new Map<string, Set<number>>();
      const deadline = Date.now() + 10_000 + 30_000;
      while (Date.now() < deadline) {
        byDelivery.clear();
        for (const r of rx.received) {
          const n = (JSON.parse(r.body) as { properties: { n: number } }).properties.n;
          const id = r.headers['x-svc-delivery'] as string;
          if (!byDelivery.has(id)) byDelivery.set(id, new Set());
          byDelivery.get(id)!.add(n);
          expect(r.headers['x-svc-signature']).toBe(hmac(r.body, 'durable-secret'));
        }
        if (byDelivery.size >= N) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(byDelivery.size).toBe(N);
      const ns = new Set([...byDelivery.values()].flatMap((s) => [...s]));
      expect(ns.size).toBe(N);
      for (const s of byDelivery.values()) expect(s.size).toBe(1); // a delivery id always carries the same event
    } finally {
      // Stopped even when an assertion fails, so no server outlives the test.
      await again.stop();
      await rx.close();
    }
    cleanup(dataDir);
  });
});

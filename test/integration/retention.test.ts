import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, cli, createSite, post, startSvc, stats, tempDir, type Svc } from '../helpers/svc.js';
import { startReceiver } from '../helpers/receiver.js';
import { query } from '../helpers/db.js';

const count = (dataDir: string, sql: string, ...params: unknown[]) => Number(query<{ n: number }>(dataDir, sql, ...params)[0]!.n);

describe('retention clean-up', () => {
  let dataDir: string;
  let site: string;
  let svc: Svc;
  let ok: Awaited<ReturnType<typeof startReceiver>>;
  let down: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    dataDir = tempDir();
    site = createSite(dataDir);
    ok = await startReceiver();
    down = await startReceiver(() => ({ status: 500, body: 'down' }));
    for (const url of [ok.url, down.url]) {
      const r = cli(['webhooks', 'add', '--site', site, '--url', `${url}/h`, '--events', 'pageview', '--data', dataDir, '--allow-private-destinations']);
      expect(r.code, r.stderr).toBe(0);
    }
    // Retention of 8 s (in days), a pass every second.
    svc = await startSvc({
      dataDir,
      args: ['--allow-private-destinations'],
      env: { SVC_RETENTION_DAYS: String(8 / 86_400), SVC_CLEANUP_INTERVAL_MS: '1000', SVC_WEBHOOK_RETRY_SCHEDULE: '50ms', SVC_WEBHOOK_POLL_MS: '50' },
    });
  });

  afterAll(async () => {
    await svc?.stop();
    await ok?.close();
    await down?.close();
    cleanup(dataDir);
  });

  it('deletes delivered work and old log rows after the retention, and keeps failed deliveries', async () => {
    for (let i = 0; i < 30; i++) {
      expect((await post(`${svc.url}/api/events`, { site_id: site, session_id: `r-${i}`, type: 'pageview' })).status).toBe(201);
    }
    await ok.waitFor(30);
    const settled = Date.now() + 10_000;
    while (count(dataDir, "SELECT count(*) AS n FROM deliveries WHERE state = 'pending'") > 0 && Date.now() < settled) await new Promise((r) => setTimeout(r, 100));
    expect(count(dataDir, "SELECT count(*) AS n FROM deliveries WHERE state = 'delivered'")).toBe(30);
    expect(count(dataDir, "SELECT count(*) AS n FROM deliveries WHERE state = 'failed'")).toBe(30);
    expect(count(dataDir, 'SELECT count(*) AS n FROM health_log')).toBeGreaterThanOrEqual(90);
    expect(stats(dataDir, site).outbox_done).toBe(30);

    // Within a few passes after the rows are 8 s old, delivered work and the log are gone.
    const deadline = Date.now() + 30_000;
    while (count(dataDir, "SELECT count(*) AS n FROM deliveries WHERE state = 'delivered'") > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
    }
    while (count(dataDir, 'SELECT count(*) AS n FROM outbox') > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
    expect(count(dataDir, "SELECT count(*) AS n FROM deliveries WHERE state = 'delivered'")).toBe(0);
    expect(count(dataDir, 'SELECT count(*) AS n FROM outbox')).toBe(0);
    expect(count(dataDir, 'SELECT count(*) AS n FROM health_log WHERE created_at < ?', Date.now() - 10_000)).toBe(0);
    // Failed deliveries stay (they can be replayed), and the data itself is never touched.
    expect(count(dataDir, "SELECT count(*) AS n FROM deliveries WHERE state = 'failed'")).toBe(30);
    expect(stats(dataDir, site)).toMatchObject({ events: 30, sessions: 30, outbox_pending: 0, outbox_done: 0 });
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, createSite, post, startSvc, stats, tempDir, type Svc } from '../helpers/svc.js';

let svc: Svc;
let dataDir: string;
let site: string;

beforeAll(async () => {
  dataDir = tempDir();
  site = createSite(dataDir);
  svc = await startSvc({
    dataDir,
    env: { SVC_INGEST_IP_RATE: '1', SVC_INGEST_IP_BURST: '3', SVC_INGEST_SITE_RATE: '1000', SVC_INGEST_SITE_BURST: '1000' },
  });
});
afterAll(async () => {
  await svc.stop();
  cleanup(dataDir);
});

describe('ingestion rate limits', () => {
  it('answers 429 rate_limited with Retry-After and RateLimit headers past the burst, storing nothing', async () => {
    const codes: number[] = [];
    for (let i = 0; i < 3; i++) {
      codes.push((await post(`${svc.url}/api/events`, { site_id: site, session_id: 'rl', type: 'pageview' })).status);
    }
    expect(codes).toEqual([201, 201, 201]);
    // No `svc stats` subprocess between the requests: under load it can take longer than
    // the bucket's refill (1 s), which would let the fourth request through.
    const r = await post(`${svc.url}/api/events`, { site_id: site, session_id: 'rl', type: 'pageview' });
    expect(r.status).toBe(429);
    expect(r.body.error.code).toBe('rate_limited');
    expect(r.body.error.message).toContain('1 requests per second, burst 3');
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(r.headers.get('ratelimit-limit')).toBe('3');
    expect(r.headers.get('ratelimit-remaining')).toBe('0');
    expect(r.headers.get('ratelimit-policy')).toContain('burst=3');
    expect(stats(dataDir, site).events).toBe(3);
  });

  it('limits GET /api/tag/config per client address with its own bucket (a flood of made-up site ids cannot reach the store unbounded)', async () => {
    // The events above emptied the ingestion bucket of this address: the tag's settings have a bucket of their own.
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 8; i++) {
      last = await fetch(`${svc.url}/api/tag/config?site_id=${i % 2 === 0 ? site : `site_unknown${i}`}`);
      statuses.push(last.status);
      if (last.status === 429) break;
      await last.arrayBuffer();
    }
    // Three within the burst (the known site 200, an unknown one 400 unknown_site), then refused; a token that refilled
    // in between (one a second) lets at most one more through.
    expect(statuses.slice(0, 3)).toEqual([200, 400, 200]);
    expect(statuses.at(-1)).toBe(429);
    expect(statuses.length).toBeLessThanOrEqual(5);
    const body = (await last!.json()) as { error: { code: string; message: string; details: { scope: string } } };
    expect(body.error).toMatchObject({ code: 'rate_limited', details: { scope: 'client_address' } });
    expect(body.error.message).toContain('burst 3');
    expect(last!.headers.get('ratelimit-limit')).toBe('3');
  });
});

describe('per-site ingestion rate limit', () => {
  it('refuses a site past its burst with 429 scope site, storing nothing, while another site goes on', async () => {
    const dir = tempDir();
    const a = createSite(dir, 'A');
    const b = createSite(dir, 'B');
    const s = await startSvc({
      dataDir: dir,
      env: { SVC_INGEST_SITE_RATE: '1', SVC_INGEST_SITE_BURST: '2', SVC_INGEST_IP_RATE: '1000', SVC_INGEST_IP_BURST: '1000' },
    });
    const ev = (site: string) => post(`${s.url}/api/events`, { site_id: site, session_id: 'ps', type: 'pageview' });
    expect((await ev(a)).status).toBe(201);
    expect((await ev(a)).status).toBe(201);
    // Every ingestion endpoint draws on the same per-site bucket.
    const r = await post(`${s.url}/api/convert`, { site_id: a, session_id: 'ps', revenue: 5 });
    expect(r.status).toBe(429);
    expect(r.body.error).toMatchObject({ code: 'rate_limited', details: { scope: 'site' } });
    expect(r.body.error.message).toContain('1 requests per second, burst 2');
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(r.headers.get('ratelimit-limit')).toBe('2');
    expect(r.headers.get('ratelimit-remaining')).toBe('0');
    expect(Number(r.headers.get('ratelimit-reset'))).toBeGreaterThanOrEqual(1);
    expect((await ev(b)).status).toBe(201);
    expect(await s.stop()).toBe(0);
    expect(stats(dir, a)).toMatchObject({ events: 2, conversions: 0 });
    expect(stats(dir, b)).toMatchObject({ events: 1 });
    cleanup(dir);
  });
});

describe('SVC_RATE_LIMIT=off', () => {
  it('lets every request through and warns at start', async () => {
    const dir = tempDir();
    const s = createSite(dir);
    const off = await startSvc({ dataDir: dir, env: { SVC_RATE_LIMIT: 'off', SVC_INGEST_IP_RATE: '1', SVC_INGEST_IP_BURST: '1' } });
    const codes = await Promise.all(
      Array.from({ length: 20 }, () => post(`${off.url}/api/events`, { site_id: s, session_id: 'x', type: 'pageview' }).then((r) => r.status)),
    );
    expect(codes.every((c) => c === 201)).toBe(true);
    await off.stop();
    expect(off.stderr()).toContain('SVC_RATE_LIMIT=off');
    cleanup(dir);
  });
});

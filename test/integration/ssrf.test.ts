import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, cli, cliJson, createSite, startSvc, tempDir, type Svc } from '../helpers/svc.js';
import { call, McpClients, mintToken } from '../helpers/mcp-client.js';
import { query } from '../helpers/db.js';

/**
 * Addresses a server must never be made to call: loopback, private, link-local and cloud metadata, in the
 * spellings that slip past naive checks (decimal, octal, hex, short forms, IPv6-mapped, NAT64, userinfo).
 */
const CORPUS = [
  'http://127.0.0.1/',
  'http://127.1/',
  'http://0.0.0.0/',
  'http://0/',
  'http://2130706433/',
  'http://017700000001/',
  'http://0x7f000001/',
  'http://0x7f.0.0.1/',
  'http://localhost/',
  'http://LOCALHOST./',
  'http://sub.localhost/',
  'http://[::1]/',
  'http://[::]/',
  'http://[0:0:0:0:0:0:0:1]/',
  'http://[::ffff:127.0.0.1]/',
  'http://[::ffff:7f00:1]/',
  'http://[::ffff:169.254.169.254]/',
  'http://[64:ff9b::a9fe:a9fe]/',
  'http://[fe80::1]/',
  'http://[fc00::1]/',
  'http://[fd00:ec2::254]/',
  'http://10.0.0.1/',
  'http://10.255.255.255/',
  'http://172.16.0.1/',
  'http://172.31.255.255/',
  'http://192.168.1.1/',
  'http://100.64.0.1/',
  'http://169.254.169.254/latest/meta-data/',
  'http://169.254.170.2/v2/credentials',
  'http://2852039166/',
  'http://0xa9fea9fe/',
  'http://0251.0376.0251.0376/',
  'http://metadata.google.internal/computeMetadata/v1/',
  'http://198.18.0.1/',
  'http://224.0.0.1/',
  'http://255.255.255.255/',
  'http://user:pass@127.0.0.1/',
  'http://example.com@127.0.0.1/',
  'http://127.0.0.1:22/',
  'https://127.0.0.1:443/',
  'ftp://example.com/',
  'file:///etc/passwd',
  'gopher://127.0.0.1:6379/_INFO',
  'javascript:alert(1)',
  'http://[::ffff:a00:1]/',
  'http://[::127.0.0.1]/',
];

describe('SSRF: every surface that takes a URL refuses private, loopback and metadata addresses', () => {
  let dataDir: string;
  let site: string;
  let svc: Svc;
  const mcp = new McpClients(() => svc.url);
  const destinations = () => query<{ n: number }>(dataDir, 'SELECT count(*) AS n FROM destinations')[0]!.n;

  beforeAll(async () => {
    dataDir = tempDir();
    site = createSite(dataDir);
    svc = await startSvc({ dataDir, env: { SVC_RATE_LIMIT: 'off' } }); // private destinations NOT allowed
  });
  afterAll(async () => {
    await mcp.closeAll();
    await svc.stop();
    cleanup(dataDir);
  });

  it('profile API POST /webhooks: 4xx with the JSON error shape for each, nothing stored', async () => {
    const key = cliJson<{ key: string }>(['key', 'mint', '--site', site, '--scopes', 'webhooks:manage', '--data', dataDir]).key;
    for (const url of CORPUS) {
      const res = await fetch(`${svc.url}/api/pulse/v1/webhooks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url, events: ['conversion'] }),
      });
      const body = (await res.json()) as any;
      expect(res.status, url).toBeGreaterThanOrEqual(400);
      expect(res.status, url).toBeLessThan(500);
      expect(typeof body.error.code, url).toBe('string');
    }
    expect(destinations()).toBe(0);
  });

  it('MCP webhooks_create, triggers_endpoint_set (url and test_url) and crawl_start (sitemap_url and site_url): an error for each', async () => {
    const admin = await mcp.connect(mintToken(dataDir, site));
    for (const url of CORPUS) {
      const attempts: [string, Record<string, unknown>][] = [
        ['webhooks_create', { url, events: ['conversion'] }],
        ['triggers_endpoint_set', { url }],
        ['triggers_endpoint_set', { test_url: url }],
        ['crawl_start', { sitemap_url: url }],
        ['crawl_start', { site_url: url }],
      ];
      for (const [tool, args] of attempts) {
        const r = await call(admin, tool, args);
        expect(r.isError, `${tool} ${JSON.stringify(args)}`).toBe(true);
      }
    }
    expect(destinations()).toBe(0);
    expect(query<{ n: number }>(dataDir, 'SELECT count(*) AS n FROM crawls')[0]!.n).toBe(0);
  });

  it('svc webhooks add refuses a sample of them with exit 1 or 2', () => {
    for (const url of ['http://169.254.169.254/latest/meta-data/', 'http://[::ffff:127.0.0.1]/', 'http://2130706433/', 'http://10.0.0.1/']) {
      const r = cli(['webhooks', 'add', '--site', site, '--url', url, '--events', 'conversion', '--data', dataDir]);
      expect([1, 2], url).toContain(r.code);
    }
    expect(destinations()).toBe(0);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { cleanup, cliJson, createSite, startSvc, tempDir, type Svc } from '../helpers/svc.js';
import { query } from '../helpers/db.js';
import { errorOf } from '../helpers/mcp-client.js';

/** Triggered messages go out through the destination guard: without --allow-private-destinations a private endpoint is refused and nothing is stored. */
let svc: Svc;
let dataDir: string;
let site: string;
let client: Client;

beforeAll(async () => {
  dataDir = tempDir();
  site = createSite(dataDir);
  const token = cliJson<{ token: string }>(['token', 'mint', '--site', site, '--scope', 'admin', '--data', dataDir]).token;
  svc = await startSvc({ dataDir });
  client = new Client({ name: 'svc-trigger-guard-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${svc.url}/api/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
});

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await svc?.stop();
  cleanup(dataDir);
});

describe('trigger endpoints and the destination guard', () => {
  it('refuses loopback, private and link-local live and test endpoints, and stores none', async () => {
    for (const args of [
      { url: 'http://127.0.0.1:9/live' },
      { url: 'http://10.1.2.3/live' },
      { url: 'http://169.254.169.254/latest' },
      { url: 'https://8.8.8.8/live', test_url: 'http://[::1]:8080/test' },
      { url: 'ftp://8.8.8.8/live' },
    ]) {
      const r = (await client.callTool({ name: 'triggers_endpoint_set', arguments: args })) as any;
      expect(r.isError, JSON.stringify(args)).toBe(true);
      expect(errorOf(r).code, JSON.stringify(args)).toBe('destination_refused');
      if (args.test_url) expect(errorOf(r).details.field).toBe('test_url');
    }
    expect(query(dataDir, 'SELECT url, test_url FROM trigger_endpoints WHERE site_id = ?', site)).toEqual([]);
    // A public address literal is accepted (no DNS needed).
    const set = (await client.callTool({ name: 'triggers_endpoint_set', arguments: { url: 'https://8.8.8.8/live' } })) as any;
    expect(set.structuredContent).toMatchObject({ url: 'https://8.8.8.8/live', test_url: null });
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import { errorOf, mintToken } from '../helpers/mcp-client.js';
import { cleanup, cliJson, createSite, startSvc, tempDir, type Svc } from '../helpers/svc.js';

/**
 * U+0000 in a query parameter, a path segment or a tool argument: PostgreSQL
 * text cannot hold it (the statement fails), so every surface refuses it as a
 * 4xx naming the field, before anything is read or stored, on both stores.
 * Ingestion bodies are refused by the JSON guard (json-guard tests).
 */
let svc: Svc;
let dir: string;
let site: string;
let key: string;
let token: string;

beforeAll(async () => {
  dir = tempDir();
  site = createSite(dir);
  key = cliJson<{ key: string }>(['key', 'mint', '--site', site, '--scopes', 'profile:read,segment:read', '--data', dir]).key;
  token = mintToken(dir, site);
  svc = await startSvc({ dataDir: dir, env: { SVC_RATE_LIMIT: 'off' } });
}, 60_000);

afterAll(async () => {
  await svc?.stop();
  cleanup(dir);
});

const count = (table: string) => Number(query<{ n: number }>(dir, `SELECT count(*) AS n FROM ${table}`)[0]!.n);

async function get(path: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${svc.url}${path}`, { headers });
  return { status: res.status, body: (await res.json()) as { error: { code: string; message: string; details: { field: string } } } };
}

describe('U+0000 in a string is a 4xx naming the field, and nothing is stored', () => {
  it('GET /api/decide: visitor_id, url', async () => {
    const before = { exposures: count('exposures'), visitors: count('identities') };
    for (const [field, q] of [
      ['visitor_id', `site_id=${site}&visitor_id=ab%00cd&url=%2F`],
      ['url', `site_id=${site}&visitor_id=v1&url=%2Fa%00b`],
    ] as const) {
      const r = await get(`/api/decide?${q}`);
      expect(r, field).toMatchObject({ status: 400, body: { error: { code: 'validation_failed', message: `${field}: strings must not contain U+0000`, details: { field } } } });
    }
    expect({ exposures: count('exposures'), visitors: count('identities') }).toEqual(before);
  });

  it('GET /api/tag/config: site_id', async () => {
    const r = await get('/api/tag/config?site_id=site_%00x');
    expect(r).toMatchObject({ status: 400, body: { error: { code: 'validation_failed', details: { field: 'site_id' } } } });
  });

  it('profile REST API: a query parameter (fast path and router) and a path segment', async () => {
    const auth = { authorization: `Bearer ${key}` };
    for (const q of ['email=a%00b', 'profile_id=p%00', 'external_id=%00']) {
      const r = await get(`/api/pulse/v1/profile?${q}`, auth);
      const field = q.split('=')[0]!;
      expect(r, q).toMatchObject({ status: 400, body: { error: { code: 'bad_request', message: `${field}: strings must not contain U+0000`, details: { field } } } });
    }
    // A conditional request goes through the router, not the fast path.
    const routed = await get('/api/pulse/v1/profile?email=a%00b', { ...auth, 'if-none-match': '"x"' });
    expect(routed).toMatchObject({ status: 400, body: { error: { code: 'bad_request', details: { field: 'email' } } } });
    const members = await get('/api/pulse/v1/segment/seg_%00/members', auth);
    expect(members).toMatchObject({ status: 400, body: { error: { code: 'bad_request', details: { field: 'segmentId' } } } });
  });

  it('MCP tools/call: an argument, nested or a key, and the audit row says invalid', async () => {
    const call = async (name: string, args: Record<string, unknown>) => {
      const res = await fetch(`${svc.url}/api/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
      });
      const text = await res.text();
      const line = text.split('\n').find((l) => l.startsWith('data: '));
      return JSON.parse(line ? line.slice(6) : text).result;
    };
    const segments = count('segments');
    for (const [name, args, field] of [
      ['segments_get', { id: 'seg_a\u0000b' }, 'id'],
      ['profiles_get', { by: 'email', value: 'a\u0000b' }, 'value'],
      ['segments_create', { name: 'x', rule: { trait: 'plan', op: 'eq', value: 'g\u0000' } }, 'rule.value'],
      ['segments_create', { name: 'x', rule: { 'tr\u0000ait': 'plan' } }, 'rule["tr\\u0000ait"]'],
    ] as const) {
      const result = await call(name, args);
      expect(result.isError, name).toBe(true);
      expect(errorOf(result), `${name} ${field}`).toMatchObject({ code: 'validation_failed', details: { field } });
    }
    expect(count('segments')).toBe(segments);
    const audit = query<{ outcome: string }>(dir, 'SELECT outcome FROM mcp_audit ORDER BY id DESC LIMIT 4');
    expect(audit.map((a) => a.outcome)).toEqual(['invalid', 'invalid', 'invalid', 'invalid']);
  });
});

import { createHash } from 'node:crypto';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, cli, cliJson, createSite, post, startSvc, stats, tempDir, type Svc } from '../helpers/svc.js';
import { execute, query } from '../helpers/db.js';
import { call, callOk, errorOf, McpClients, mintToken } from '../helpers/mcp-client.js';

let svc: Svc;
let dataDir: string;
let site: string;
let otherSite: string;
const tok = { admin: '', write: '', writeRO: '', read: '', readRO: '', other: '', areas: '', noDestroy: '' };
const mcp = new McpClients(() => svc.url);

async function rawPost(url: string, headers: Record<string, string>, body: unknown) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: any = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // SSE or empty
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

const INIT = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };
const sha = (s: string) => createHash('sha256').update(s).digest('hex');

/** Row counts of every table a tool could change. */
function counts() {
  const tables = ['profiles', 'identities', 'identity_hashes', 'sessions', 'events', 'scores', 'conversions', 'leads', 'segments', 'segment_members', 'destinations', 'deliveries', 'mcp_tokens', 'outbox'];
  const out: Record<string, unknown> = {};
  for (const t of tables) out[t] = query<{ n: number }>(dataDir, `SELECT count(*) AS n FROM ${t}`)[0]!.n;
  out.lead_status = query(dataDir, 'SELECT id, status FROM leads ORDER BY id');
  out.segment_rows = query(dataDir, 'SELECT id, name, rule, priority FROM segments ORDER BY id');
  out.destination_rows = query(dataDir, 'SELECT id, url, events, enabled, secret_enc FROM destinations ORDER BY id');
  out.revoked = query(dataDir, 'SELECT id, revoked_at FROM mcp_tokens ORDER BY id');
  out.merged = query(dataDir, 'SELECT id, merged_into, traits FROM profiles ORDER BY id');
  out.delivery_states = query(dataDir, 'SELECT id, state FROM deliveries ORDER BY id');
  return out;
}

beforeAll(async () => {
  dataDir = tempDir();
  site = createSite(dataDir);
  otherSite = createSite(dataDir, 'Other');
  tok.admin = mintToken(dataDir, site, ['--scope', 'admin', '--allow-credential-issuance', '--name', 'ops']);
  tok.write = mintToken(dataDir, site, ['--scope', 'write']);
  tok.writeRO = mintToken(dataDir, site, ['--scope', 'write', '--read-only']);
  tok.read = mintToken(dataDir, site, ['--scope', 'read']);
  tok.readRO = mintToken(dataDir, site, ['--scope', 'read', '--read-only']);
  tok.other = mintToken(dataDir, otherSite, ['--scope', 'admin']);
  tok.areas = mintToken(dataDir, site, ['--scope', 'admin', '--areas', 'profiles']);
  tok.noDestroy = mintToken(dataDir, site, ['--scope', 'admin', '--block-destructive', '--propose-only']);
  // The per-token limit has its own server below (small): here one token makes well over the default burst of
  // 120 calls (every mutating tool, twice), and on a fast host the bucket had no time to refill between tests.
  svc = await startSvc({
    dataDir,
    args: ['--allow-private-destinations'],
    env: { SVC_LOG_LEVEL: 'debug', SVC_WEBHOOK_POLL_MS: '50', SVC_MCP_BURST: '100000', SVC_MCP_RATE: '100000' },
  });
  const u = svc.url;
  await post(`${u}/api/events`, { site_id: site, session_id: 'mcp-s1', visitor_id: 'mcp-v1', type: 'pageview' });
  await post(`${u}/api/events`, { site_id: site, session_id: 'mcp-s1', visitor_id: 'mcp-v1', type: 'add_to_cart', sku: 'A1' });
  await post(`${u}/api/identify`, {
    site_id: site,
    session_id: 'mcp-s1',
    visitor_id: 'mcp-v1',
    traits: { email: 'Ada.Lovelace@Example.com', phone: '+44 20 7946 0001', name: 'Ada Lovelace', external_id: 'crm-ada', plan: 'gold' },
  });
  await post(`${u}/api/convert`, { site_id: site, session_id: 'mcp-s1', revenue: 120.5, line_items: [{ sku: 'A1', qty: 1, price: 120.5 }] });
  await post(`${u}/api/score`, { site_id: site, session_id: 'mcp-s1', score: 77 });
  await post(`${u}/api/lead/capture`, { site_id: site, visitor_id: 'mcp-v1', email: 'ada.lovelace@example.com', name: 'Ada Lovelace' });
  await post(`${u}/api/events`, { site_id: site, session_id: 'mcp-s2', visitor_id: 'mcp-v2', type: 'pageview' });
  await post(`${u}/api/identify`, { site_id: site, session_id: 'mcp-s2', visitor_id: 'mcp-v2', traits: { external_id: 'crm-bob', plan: 'silver' } });
  await post(`${u}/api/convert`, { site_id: site, session_id: 'mcp-s2', revenue: 30 });
  await post(`${u}/api/events`, { site_id: otherSite, session_id: 'o-s1', visitor_id: 'o-v1', type: 'pageview' });
});

afterAll(async () => {
  await mcp.closeAll();
  await svc.stop();
  cleanup(dataDir);
});

describe('MCP tokens (svc token)', () => {
  it('prints the plaintext once, stores only its hash and lists without it', () => {
    expect(tok.admin).toMatch(/^mcpt_[A-Za-z0-9_-]{32}$/);
    const list = cliJson<any[]>(['token', 'list', '--site', site, '--data', dataDir]);
    expect(list).toHaveLength(7);
    const ops = list.find((t) => t.name === 'ops');
    expect(ops).toMatchObject({ scope: 'admin', created_by_email: 'owner@localhost', restrictions: { allow_credential_issuance: true, read_only: false } });
    expect(ops.created_at).toMatch(/^\d{4}-/);
    const dump = JSON.stringify(query(dataDir, 'SELECT * FROM mcp_tokens'));
    for (const t of Object.values(tok)) {
      expect(dump).not.toContain(t);
      expect(dump).toContain(sha(t));
      expect(JSON.stringify(list)).not.toContain(t.slice(9));
    }
  });

  it('lets owners and admins mint, refuses members, and checks its flags', () => {
    cliJson(['user', 'add', '--site', site, '--email', 'Mem@Example.com', '--role', 'member', '--name', 'M', '--json', '--data', dataDir]);
    const admin = cliJson<{ id: string; email: string; role: string }>(['user', 'add', '--site', site, '--email', 'adm@example.com', '--role', 'admin', '--json', '--data', dataDir]);
    expect(admin).toMatchObject({ email: 'adm@example.com', role: 'admin' });
    expect(cli(['user', 'add', '--site', site, '--email', 'adm@example.com', '--role', 'admin', '--data', dataDir]).code).toBe(1);
    expect(cli(['user', 'add', '--site', site, '--email', 'x@example.com', '--role', 'owner', '--data', dataDir]).code).toBe(2);
    const users = cliJson<{ email: string; role: string }[]>(['user', 'list', '--site', site, '--json', '--data', dataDir]);
    expect(users.map((u) => [u.email, u.role]).slice(1)).toEqual([['mem@example.com', 'member'], ['adm@example.com', 'admin']]);
    const refused = cli(['token', 'mint', '--site', site, '--scope', 'read', '--as', 'mem@example.com', '--data', dataDir]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('only owners and admins');
    const byAdmin = cliJson<{ token: string; id: string }>(['token', 'mint', '--site', site, '--scope', 'read', '--as', admin.id, '--data', dataDir]);
    expect(query<{ created_by: string }>(dataDir, 'SELECT created_by FROM mcp_tokens WHERE id = ?', byAdmin.id)[0]!.created_by).toBe(admin.id);
    expect(cli(['token', 'revoke', byAdmin.id, '--data', dataDir]).code).toBe(0);
    expect(cli(['token', 'mint', '--site', site, '--scope', 'root', '--data', dataDir]).code).toBe(2);
    expect(cli(['token', 'mint', '--site', site, '--scope', 'read', '--areas', 'nope', '--data', dataDir]).code).toBe(2);
    expect(cli(['token', 'mint', '--site', site, '--scope', 'read', '--expires', '2001-01-01T00:00:00Z', '--data', dataDir]).code).toBe(2);
    expect(cli(['token', 'mint', '--site', 'site_nope', '--scope', 'read', '--data', dataDir]).code).toBe(1);
  });
});

describe('transport and authentication', () => {
  it('initializes and lists every tool with schemas, annotations and the scope it needs', async () => {
    const c = await mcp.connect(tok.read);
    expect(c.getServerVersion()?.name).toBe('svc');
    const { tools } = await c.listTools();
    const names = tools.map((t) => t.name);
    for (const n of ['whoami', 'profiles_get', 'profiles_search', 'profiles_timeline', 'profiles_merge', 'profiles_erase', 'segments_create', 'segments_delete', 'leads_list', 'leads_set_status', 'conversions_revenue_by_day', 'events_recent', 'analytics_summary', 'webhooks_replay', 'access_link_token_mint', 'access_member_invite']) {
      expect(names).toContain(n);
    }
    for (const t of tools) {
      expect(t.description).toMatch(/Scope: (read|write|admin)\./);
      expect(t.description, t.name).not.toMatch(/Requires the|refused to read-only|refused when destructive/i);
      expect(t.inputSchema.type).toBe('object');
      expect(t.inputSchema.$schema, t.name).toBeUndefined();
      expect(t.outputSchema, t.name).toBeUndefined();
      // Hints whose default would say the opposite stay explicit; idempotentHint only where it says something.
      expect(typeof t.annotations?.readOnlyHint, t.name).toBe('boolean');
      expect(typeof t.annotations?.destructiveHint, t.name).toBe('boolean');
      expect(typeof t.annotations?.openWorldHint, t.name).toBe('boolean');
      expect(t.annotations?.idempotentHint === undefined || (t.annotations.idempotentHint && !t.annotations.readOnlyHint), t.name).toBe(true);
    }
    // What read-only and destructive-blocking tokens are refused is said once, in the instructions.
    expect(c.getInstructions()).toContain('A read-only token is refused every tool whose readOnlyHint is false');
    // A standard format stands for zod's regex in the listing; tools_describe keeps both.
    const untilSchema = (tools.find((t) => t.name === 'accounts_hot')!.inputSchema.properties as any).until;
    expect(untilSchema).toMatchObject({ type: 'string', format: 'date-time' });
    expect(untilSchema.pattern).toBeUndefined();
    const described = await callOk(c, 'tools_describe', { name: 'accounts_hot' });
    expect(described.input_schema.properties.until).toMatchObject({ format: 'date-time', pattern: expect.stringMatching(/^\^/) });
    // Output schemas when asked, by query flag or header (and always in tools_describe).
    for (const opts of [{ query: { output_schemas: '1' } }, { headers: { 'x-svc-output-schemas': 'true' } }]) {
      const asked = (await (await mcp.connect(tok.read, opts)).listTools()).tools;
      expect(asked.map((t) => t.name)).toEqual(names);
      for (const t of asked) expect(t.outputSchema?.type, t.name).toBe('object');
    }
    expect((await callOk(c, 'tools_describe', { name: 'events_recent' })).output_schema.type).toBe('object');
    const erase = tools.find((t) => t.name === 'profiles_erase')!;
    expect(erase.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    expect(erase.description).toContain('Scope: admin.');
    const get = tools.find((t) => t.name === 'profiles_get')!;
    expect(get.annotations).toEqual({ readOnlyHint: true, destructiveHint: false, openWorldHint: false });
    expect((get.inputSchema.properties as any).by.enum).toContain('email_sha256');
    expect(tools.find((t) => t.name === 'webhooks_create')!.annotations?.openWorldHint).toBe(true);
  });

  it('answers /api/mcp before express exactly as the express router answers /api/mcp/', async () => {
    const raw = `${svc.url}/api/mcp`;
    const routed = `${svc.url}/api/mcp/`;
    const auth = { authorization: `Bearer ${tok.read}`, 'mcp-protocol-version': '2025-06-18' };
    const strip = (b: any) => (b && typeof b === 'object' && b.error?.data?.request_id ? { ...b, error: { ...b.error, data: { ...b.error.data, request_id: 'x' } } } : b);
    const cases: [Record<string, string>, unknown][] = [
      [{}, { jsonrpc: '2.0', id: 1, method: 'tools/list' }],
      [{ authorization: 'Bearer mcpt_nope' }, { jsonrpc: '2.0', id: 1, method: 'tools/list' }],
      [auth, { jsonrpc: '2.0', id: 'l', method: 'tools/list' }],
      [auth, [{ jsonrpc: '2.0', id: 1, method: 'tools/list' }]],
      [auth, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'whoami', arguments: {} } }],
    ];
    for (const [headers, body] of cases) {
      const a = await rawPost(raw, headers, body);
      const b = await rawPost(routed, headers, body);
      expect(a.status).toBe(b.status);
      expect(a.headers.get('content-type')).toBe(b.headers.get('content-type'));
      expect(a.headers.get('www-authenticate')).toBe(b.headers.get('www-authenticate'));
      expect(a.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
      if (typeof a.body === 'object') expect(strip(a.body)).toEqual(strip(b.body));
      else if (JSON.stringify(body).includes('tools/list')) expect(a.text).toBe(b.text);
      else expect(a.text).toMatch(/"isError":false|"structuredContent"/);
    }
    expect((await rawPost(raw, {}, { jsonrpc: '2.0', id: 1, method: 'tools/list' })).status).toBe(401);
    expect((await rawPost(raw, auth, [{ jsonrpc: '2.0', id: 1, method: 'tools/list' }])).body.error.message).toMatch(/batches are not supported/);
    for (const method of ['GET', 'DELETE']) {
      const a = await fetch(raw, { method, headers: { ...auth, accept: 'text/event-stream' } });
      const b = await fetch(routed, { method, headers: { ...auth, accept: 'text/event-stream' } });
      expect(a.status).toBe(405);
      expect(b.status).toBe(405);
      expect(a.headers.get('allow')).toBe(b.headers.get('allow'));
      expect(await a.text()).toBe(await b.text());
    }
    const big = await fetch(raw, { method: 'POST', headers: { ...auth, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { pad: 'x'.repeat(1024 * 1024 + 10) } }) });
    expect(big.status).toBe(413);
  });

  it('answers a plain tools/list from the cached listing with the very bytes the SDK writes, and the listing follows a change of the token restrictions', async () => {
    const headers = { authorization: `Bearer ${tok.write}`, 'mcp-protocol-version': '2025-06-18' };
    const LIST = { jsonrpc: '2.0', id: 'list-7', method: 'tools/list' };
    // The served answer (a plain request with its Content-Length) ...
    const served = await rawPost(`${svc.url}/api/mcp`, headers, LIST);
    // ... and the SDK's own answer to the same message, streamed to it (chunked, no Content-Length).
    const streamed = await new Promise<{ status: number; type: string | undefined; text: string }>((resolve, reject) => {
      const r = http.request(
        `${svc.url}/api/mcp`,
        { method: 'POST', headers: { ...headers, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'transfer-encoding': 'chunked' } },
        (res) => {
          let text = '';
          res.setEncoding('utf8').on('data', (c: string) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode!, type: res.headers['content-type'], text }));
        },
      );
      r.on('error', reject);
      r.write(JSON.stringify(LIST).slice(0, 10));
      r.end(JSON.stringify(LIST).slice(10));
    });
    expect(served.status).toBe(200);
    expect(streamed.status).toBe(200);
    expect(served.headers.get('content-type')).toBe('text/event-stream');
    expect(streamed.type).toBe('text/event-stream');
    expect(served.text).toBe(streamed.text);
    // Served whole from the serialised listing (Content-Length), where the SDK streams its event.
    expect(served.headers.get('content-length')).toBe(String(Buffer.byteLength(served.text)));
    expect(served.text.startsWith('event: message\ndata: {"result":{"tools":[')).toBe(true);
    expect(served.text.endsWith(',"jsonrpc":"2.0","id":"list-7"}\n\n')).toBe(true);
    const names = (text: string) => (JSON.parse(text.slice(text.indexOf('data: ') + 6)) as { result: { tools: { name: string }[] } }).result.tools.map((t) => t.name);
    const everyTool = names(served.text);
    expect(everyTool.length).toBeGreaterThan(100);
    // Read-only and areas restrictions written to the token row: the next listing is that restriction set's, not the cached one.
    const row = query<{ id: string; restrictions: string }>(dataDir, 'SELECT id, restrictions FROM mcp_tokens WHERE hash = ?', sha(tok.write))[0]!;
    const restricted = { ...JSON.parse(row.restrictions), read_only: true, areas: ['profiles'] };
    execute(dataDir, 'UPDATE mcp_tokens SET restrictions = ? WHERE id = ?', JSON.stringify(restricted), row.id);
    try {
      const after = names((await rawPost(`${svc.url}/api/mcp`, headers, LIST)).text);
      expect(after).toEqual(['profiles_get', 'profiles_search', 'profiles_timeline']);
      const c = await mcp.connect(tok.write);
      expect((await c.listTools()).tools.map((t) => t.name)).toEqual(after);
    } finally {
      execute(dataDir, 'UPDATE mcp_tokens SET restrictions = ? WHERE id = ?', row.restrictions, row.id);
    }
    expect(names((await rawPost(`${svc.url}/api/mcp`, headers, LIST)).text)).toEqual(everyTool);
  });

  it('accepts the token as Authorization: Bearer and as the api_key query parameter, in both protocol eras', async () => {
    const viaQuery = await mcp.connect(tok.read, { carrier: 'query' });
    expect((await callOk(viaQuery, 'whoami')).scope).toBe('read');
    const modern = await mcp.connect(tok.write, { mode: 'auto' });
    expect((await callOk(modern, 'whoami')).scope).toBe('write');
  });

  it('answers 401 with a JSON-RPC error body and WWW-Authenticate for missing, malformed, unknown, revoked and expired tokens', async () => {
    const url = `${svc.url}/api/mcp`;
    const revoked = cliJson<{ token: string; id: string }>(['token', 'mint', '--site', site, '--scope', 'read', '--data', dataDir]);
    expect(cli(['token', 'revoke', revoked.id, '--data', dataDir]).code).toBe(0);
    const expired = cliJson<{ token: string; id: string }>(['token', 'mint', '--site', site, '--scope', 'read', '--expires', new Date(Date.now() + 60_000).toISOString(), '--data', dataDir]);
    execute(dataDir, 'UPDATE mcp_tokens SET expires_at = ? WHERE id = ?', Date.now() - 1000, expired.id);
    const cases: [string, Record<string, string>, string][] = [
      ['missing', {}, 'missing token'],
      ['malformed', { authorization: 'Basic abc' }, 'mcpt_'],
      ['unknown', { authorization: `Bearer mcpt_${'A'.repeat(32)}` }, 'unknown token'],
      ['revoked', { authorization: `Bearer ${revoked.token}` }, 'revoked'],
      ['expired', { authorization: `Bearer ${expired.token}` }, 'expired'],
    ];
    for (const [what, headers, message] of cases) {
      const r = await rawPost(url, headers, INIT);
      expect(r.status, what).toBe(401);
      expect(r.headers.get('www-authenticate'), what).toMatch(/^Bearer realm="svc-mcp"/);
      expect(r.body, what).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32001, data: { code: 'unauthorized' } } });
      expect(r.body.error.message, what).toContain(message);
    }
    const q = await rawPost(`${url}?api_key=mcpt_${'B'.repeat(32)}`, {}, INIT);
    expect(q.status).toBe(401);
    await expect(mcp.connect(`mcpt_${'C'.repeat(32)}`)).rejects.toThrow();
  });

  it('answers malformed JSON-RPC with a protocol error, never a 500', async () => {
    const r = await rawPost(`${svc.url}/api/mcp`, { authorization: `Bearer ${tok.read}` }, { hello: 'world' });
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect(r.status).toBeLessThan(500);
    const bad = await fetch(`${svc.url}/api/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tok.read}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{not json',
    });
    expect(bad.status).toBeGreaterThanOrEqual(400);
    expect(bad.status).toBeLessThan(500);
  });

  it('honours Accept and Content-Type, refuses GET sessions and oversize bodies', async () => {
    const url = `${svc.url}/api/mcp`;
    const auth = { authorization: `Bearer ${tok.read}` };
    const list = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    const noAccept = await fetch(url, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: list });
    expect(noAccept.status).toBe(406);
    const json = await fetch(url, { method: 'POST', headers: { ...auth, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' }, body: list });
    expect(json.status).toBe(200);
    expect(await json.text()).toContain('profiles_get');
    const plain = await fetch(url, { method: 'POST', headers: { ...auth, 'content-type': 'text/plain', accept: 'application/json, text/event-stream' }, body: 'x' });
    expect(plain.status).toBe(415);
    expect((await fetch(url, { headers: { ...auth, accept: 'text/event-stream' } })).status).toBe(405);
    const big = await fetch(url, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { pad: 'a'.repeat(1_100_000) } }),
    });
    expect(big.status).toBe(413);
  });
});

describe('tools over real data', () => {
  it('whoami names the site, scope, restrictions and the personal-data rule', async () => {
    const c = await mcp.connect(tok.readRO);
    expect(await callOk(c, 'whoami')).toMatchObject({ site_id: site, site_name: 'Test shop', scope: 'read', restrictions: { read_only: true }, personal_data: false });
  });

  it('profiles: get by any identifier, without personal data below admin; search by rule; timeline', async () => {
    const r = await mcp.connect(tok.read);
    const byEmail = await callOk(r, 'profiles_get', { by: 'email', value: ' ADA.lovelace@example.com ' });
    expect(byEmail.identity.external_ids).toEqual(['crm-ada']);
    expect(byEmail.identity.email).toBeUndefined();
    expect(JSON.stringify(byEmail)).not.toContain('Lovelace');
    expect(byEmail.activity).toMatchObject({ conversions: 1, revenue: 120.5, leads: 1, sessions: 1 });
    const bySha = await callOk(r, 'profiles_get', { by: 'email_sha256', value: sha('ada.lovelace@example.com') });
    expect(bySha.profile_id).toBe(byEmail.profile_id);
    expect((await callOk(r, 'profiles_get', { by: 'visitor_id', value: 'mcp-v1' })).profile_id).toBe(byEmail.profile_id);
    const missing = await call(r, 'profiles_get', { by: 'external_id', value: 'nobody' });
    expect(missing.isError).toBe(true);
    expect(errorOf(missing).code).toBe('not_found');

    const other = await mcp.connect(tok.other);
    const foreign = await call(other, 'profiles_get', { by: 'profile_id', value: byEmail.profile_id });
    expect(errorOf(foreign).code).toBe('not_found');
    expect((await callOk(other, 'profiles_search', { rule: { trait: 'plan', op: 'exists' } })).profile_ids).toEqual([]);

    const admin = await mcp.connect(tok.admin);
    const full = await callOk(admin, 'profiles_get', { by: 'external_id', value: 'crm-ada' });
    expect(full.identity).toMatchObject({ email: 'ada.lovelace@example.com', name: 'Ada Lovelace' });

    const found = await callOk(r, 'profiles_search', { rule: { trait: 'plan', op: 'eq', value: 'gold' } });
    expect(found.profile_ids).toEqual([byEmail.profile_id]);
    const both = await callOk(r, 'profiles_search', { rule: { conversions: { metric: 'count', op: 'gte', value: 1 } }, limit: 1 });
    expect(both.profile_ids).toHaveLength(1);
    expect(both.next_after).not.toBeNull();
    const page2 = await callOk(r, 'profiles_search', { rule: { conversions: { metric: 'count', op: 'gte', value: 1 } }, limit: 1, after: both.next_after });
    expect(page2.profile_ids).toHaveLength(1);
    expect(page2.next_after).toBeNull();
    const pii = await call(r, 'profiles_search', { rule: { trait: 'email', op: 'exists' } });
    expect(errorOf(pii).code).toBe('insufficient_scope');
    const badRule = await call(r, 'profiles_search', { rule: { all: [{ trait: 'plan', op: 'nope' }] } });
    expect(errorOf(badRule)).toMatchObject({ code: 'validation_failed' });
    expect(errorOf(badRule).details.field).toContain('rule');

    const tl = await callOk(r, 'profiles_timeline', { by: 'external_id', value: 'crm-ada' });
    const kinds = tl.items.map((i: any) => i.kind).sort();
    expect(kinds).toEqual(['conversion', 'event', 'event', 'lead', 'score']);
    expect(tl.items.find((i: any) => i.kind === 'conversion')).toMatchObject({ type: 'USD', value: 120.5 });
    expect(tl.items.find((i: any) => i.kind === 'score').value).toBe(77);
  });

  it('segments: create, get, list, preview, members, update, delete', async () => {
    const w = await mcp.connect(tok.write);
    const seg = await callOk(w, 'segments_create', { name: 'Gold', rule: { trait: 'plan', op: 'eq', value: 'gold' }, priority: 5 });
    expect(seg).toMatchObject({ name: 'Gold', priority: 5, members: 1 });
    expect((await callOk(w, 'segments_get', { id: seg.id })).rule).toEqual({ trait: 'plan', op: 'eq', value: 'gold' });
    expect((await callOk(w, 'segments_list')).segments.map((s: any) => s.id)).toContain(seg.id);
    expect((await callOk(w, 'segments_preview', { rule: { trait: 'plan', op: 'in', value: ['gold', 'silver'] } })).matches).toBe(2);
    const ada = await callOk(w, 'profiles_get', { by: 'external_id', value: 'crm-ada' });
    expect((await callOk(w, 'segments_members', { id: seg.id })).profile_ids).toEqual([ada.profile_id]);
    expect((await callOk(w, 'profiles_get', { by: 'external_id', value: 'crm-ada' })).segments.primary).toBe(seg.id);
    const dup = await call(w, 'segments_create', { name: 'Gold', rule: { trait: 'plan', op: 'exists' } });
    expect(errorOf(dup).code).toBe('conflict');
    const upd = await callOk(w, 'segments_update', { id: seg.id, rule: { trait: 'plan', op: 'exists' } });
    expect(upd.members).toBe(2);
    const del = await call(w, 'segments_delete', { id: seg.id });
    expect(errorOf(del)).toMatchObject({ code: 'insufficient_scope', details: { missing: 'scope:admin' } });
    const a = await mcp.connect(tok.admin);
    expect(await callOk(a, 'segments_delete', { id: seg.id })).toEqual({ removed: seg.id, members: 2 });
    expect(query(dataDir, 'SELECT * FROM segments WHERE id = ?', seg.id)).toHaveLength(0);
    const other = await mcp.connect(tok.other);
    expect(errorOf(await call(other, 'segments_get', { id: upd.id })).code).toBe('not_found');
  });

  it('leads, conversions, events and analytics', async () => {
    const r = await mcp.connect(tok.read);
    const { leads } = await callOk(r, 'leads_list');
    expect(leads).toHaveLength(1);
    expect(leads[0]).toMatchObject({ status: 'new', has_email: true, has_name: true, has_phone: false, kind: 'lead_form' });
    expect(leads[0].email).toBeUndefined();
    expect((await callOk(r, 'leads_list', { status: 'won' })).leads).toHaveLength(0);
    const w = await mcp.connect(tok.write);
    expect(await callOk(w, 'leads_set_status', { id: leads[0].id, status: 'qualified' })).toMatchObject({ id: leads[0].id, status: 'qualified' });
    expect(query<{ status: string }>(dataDir, 'SELECT status FROM leads WHERE id = ?', leads[0].id)[0]!.status).toBe('qualified');
    const badStatus = await call(w, 'leads_set_status', { id: leads[0].id, status: 'married' });
    expect(errorOf(badStatus)).toMatchObject({ code: 'validation_failed', details: { field: 'status' } });
    const a = await mcp.connect(tok.admin);
    expect((await callOk(a, 'leads_get', { id: leads[0].id })).email).toBe('ada.lovelace@example.com');

    const conv = await callOk(r, 'conversions_list');
    expect(conv.conversions.map((c: any) => c.revenue).sort()).toEqual([120.5, 30]);
    expect(conv.conversions.find((c: any) => c.revenue === 120.5).line_items).toEqual([{ sku: 'A1', qty: 1, price: 120.5 }]);
    expect((await callOk(r, 'conversions_list', { min_revenue: 100 })).conversions).toHaveLength(1);
    const rev = await callOk(r, 'conversions_revenue_by_day', { days: 7 });
    expect(rev).toMatchObject({ total_conversions: 2, total_revenue: [{ currency: 'USD', revenue: 150.5 }] });
    expect(rev.days).toEqual([{ day: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/), currency: 'USD', conversions: 2, revenue: 150.5 }]);

    const ev = await callOk(r, 'events_recent', { type: 'pageview' });
    expect(ev.events).toHaveLength(2);
    expect((await callOk(r, 'events_types')).types.find((t: any) => t.type === 'add_to_cart').count).toBe(1);

    const an = await callOk(r, 'analytics_summary', { days: 1 });
    expect(an).toMatchObject({ sessions: 2, visitors: 2, conversions: 2, converting_sessions: 2, conversion_rate: 1, revenue: 150.5, revenue_per_visitor: 75.25, currency: 'USD', revenue_other_currencies: [], leads: 1 });
    // A conversion recorded before the site's currency changed keeps its currency and is never added to the others.
    execute(dataDir, "INSERT INTO conversions (id, site_id, session_id, profile_id, revenue, currency, line_items, created_at) VALUES ('cnv_eur', ?, 'mcp-s1', 'prf_x', 99, 'EUR', '[]', ?)", site, Date.now());
    try {
      expect(await callOk(r, 'analytics_summary', { days: 1 })).toMatchObject({ conversions: 3, revenue: 150.5, revenue_per_visitor: 75.25, currency: 'USD', revenue_other_currencies: [{ currency: 'EUR', revenue: 99 }] });
      const mixed = await callOk(r, 'conversions_revenue_by_day', { days: 7 });
      expect(mixed.total_revenue).toEqual([{ currency: 'EUR', revenue: 99 }, { currency: 'USD', revenue: 150.5 }]);
      expect(mixed.days.map((d: any) => [d.currency, d.conversions, d.revenue])).toEqual([['EUR', 1, 99], ['USD', 2, 150.5]]);
    } finally {
      execute(dataDir, "DELETE FROM conversions WHERE id = 'cnv_eur'");
    }
    const invalid = await call(r, 'analytics_summary', { days: 0 });
    expect(errorOf(invalid)).toMatchObject({ code: 'validation_failed', details: { field: 'days' } });
  });

  it('webhooks: destinations, deliveries and replay', async () => {
    const w = await mcp.connect(tok.write);
    const d = await callOk(w, 'webhooks_create', { url: 'http://127.0.0.1:9/hook', events: ['conversion'], secret: 'a-long-secret' });
    expect(d).toMatchObject({ url: 'http://127.0.0.1:9/hook', events: ['conversion'], has_secret: true, enabled: true });
    expect(JSON.stringify(d)).not.toContain('a-long-secret');
    expect((await callOk(w, 'webhooks_list')).destinations.map((x: any) => x.id)).toContain(d.id);
    expect(await callOk(w, 'webhooks_update', { id: d.id, enabled: false, description: 'paused' })).toMatchObject({ enabled: false, description: 'paused' });
    const badEvents = await call(w, 'webhooks_create', { url: 'http://127.0.0.1:9/x', events: ['nope'] });
    expect(errorOf(badEvents)).toMatchObject({ code: 'validation_failed', details: { field: 'events' } });
    const refusedUrl = await call(w, 'webhooks_create', { url: 'ftp://example.com/x', events: ['all'] });
    expect(errorOf(refusedUrl).code).toBe('destination_refused');
    expect((await callOk(w, 'webhooks_deliveries', { destination_id: d.id })).deliveries).toEqual([]);
    execute(
      dataDir,
      "INSERT INTO deliveries (id, site_id, destination_id, outbox_id, event_type, payload, state, attempts, next_attempt_at, created_at, updated_at) VALUES ('dlv_failed_x', ?, ?, NULL, 'conversion', '{}', 'failed', 8, 0, 1, 1)",
      site,
      d.id,
    );
    expect(await callOk(w, 'webhooks_replay', { delivery_id: 'dlv_failed_x' })).toEqual({ delivery_id: 'dlv_failed_x', requeued: true });
    expect(query<{ state: string }>(dataDir, "SELECT state FROM deliveries WHERE id = 'dlv_failed_x'")[0]!.state).not.toBe('failed');
    const again = await call(w, 'webhooks_replay', { delivery_id: 'dlv_failed_x' });
    expect(['conflict']).toContain(errorOf(again).code);
    const a = await mcp.connect(tok.admin);
    expect(await callOk(a, 'webhooks_delete', { id: d.id })).toEqual({ removed: d.id });
    expect(query(dataDir, 'SELECT id FROM destinations WHERE id = ?', d.id)).toHaveLength(0);
  });

  it('access: link tokens never exceed their minter; tokens list and revoke', async () => {
    const a = await mcp.connect(tok.admin);
    const link = await callOk(a, 'access_link_token_mint', { scope: 'read', name: 'share' });
    expect(link.token).toMatch(/^mcpt_/);
    expect(link.restrictions).toMatchObject({ read_only: true, allow_credential_issuance: false });
    expect(link.connector_path).toBe(`/api/mcp?api_key=${link.token}`);
    const viaLink = await mcp.connect(link.token, { carrier: 'query' });
    expect(await callOk(viaLink, 'whoami')).toMatchObject({ scope: 'read', restrictions: { read_only: true } });
    const list = await callOk(a, 'access_tokens_list');
    expect(list.tokens.map((t: any) => t.id)).toContain(link.id);
    expect(JSON.stringify(list)).not.toContain(link.token);
    expect(await callOk(a, 'access_token_revoke', { token_id: link.id })).toEqual({ revoked: link.id, already_revoked: false });
    const after = await rawPost(`${svc.url}/api/mcp?api_key=${link.token}`, {}, INIT);
    expect(after.status).toBe(401);
    const invite = await callOk(a, 'access_member_invite', { email: 'New.Person@Example.com', role: 'member' });
    expect(invite).toMatchObject({ email: 'new.person@example.com', role: 'member', scope: 'read', restrictions: { read_only: true, allow_credential_issuance: false } });
    expect(query(dataDir, 'SELECT role, account_id FROM users WHERE id = ?', invite.user_id)).toEqual([
      { role: 'member', account_id: query<{ account_id: string }>(dataDir, "SELECT account_id FROM users WHERE role = 'owner'")[0]!.account_id },
    ]);
    const invited = await mcp.connect(invite.token);
    expect(await callOk(invited, 'whoami')).toMatchObject({ token_id: invite.token_id, scope: 'read' });
    expect(errorOf(await call(a, 'access_member_invite', { email: 'new.person@example.com' }))).toMatchObject({ code: 'conflict', details: { field: 'email' } });
    expect(errorOf(await call(a, 'access_member_invite', { email: 'not-an-email' }))).toMatchObject({ code: 'validation_failed', details: { field: 'email' } });
    const memberMint = cli(['token', 'mint', '--site', site, '--scope', 'read', '--as', 'new.person@example.com', '--data', dataDir]);
    expect(memberMint.code).toBe(1);
    const noIssuance = await mcp.connect(tok.areas);
    const refused = await call(noIssuance, 'access_link_token_mint', {});
    expect(errorOf(refused)).toMatchObject({ code: 'insufficient_scope', details: { reason: 'area' } });
    const writeTok = await mcp.connect(tok.noDestroy);
    const r2 = await call(writeTok, 'access_link_token_mint', {});
    expect(errorOf(r2).details.reason).toBe('credential_issuance');
  });

  it('profiles: merge (write) and GDPR erase (admin) really change the rows', async () => {
    const u = svc.url;
    await post(`${u}/api/identify`, { site_id: site, session_id: 'mcp-m1', visitor_id: 'mcp-m1v', traits: { external_id: 'crm-m1', tier: 'a' } });
    await post(`${u}/api/events`, { site_id: site, session_id: 'mcp-m1', visitor_id: 'mcp-m1v', type: 'click' });
    await post(`${u}/api/identify`, { site_id: site, session_id: 'mcp-m2', visitor_id: 'mcp-m2v', traits: { external_id: 'crm-m2', plan: 'bronze' } });
    const w = await mcp.connect(tok.write);
    const p1 = (await callOk(w, 'profiles_get', { by: 'external_id', value: 'crm-m1' })).profile_id;
    const p2 = (await callOk(w, 'profiles_get', { by: 'external_id', value: 'crm-m2' })).profile_id;
    expect(await callOk(w, 'profiles_merge', { from_profile_id: p1, into_profile_id: p2 })).toMatchObject({ merged: p1, into: p2 });
    const merged = await callOk(w, 'profiles_get', { by: 'external_id', value: 'crm-m1' });
    expect(merged.profile_id).toBe(p2);
    expect(merged.meta.merged_profile_ids).toEqual([p1]);
    expect(merged.identity.external_ids.sort()).toEqual(['crm-m1', 'crm-m2']);
    expect(merged.identity.trait_keys).toEqual(['external_id', 'plan', 'tier']);

    const erase = await call(w, 'profiles_erase', { by: 'profile_id', value: p2 });
    expect(errorOf(erase)).toMatchObject({ code: 'insufficient_scope', details: { missing: 'scope:admin' } });
    const blocked = await mcp.connect(tok.noDestroy);
    expect(errorOf(await call(blocked, 'profiles_erase', { by: 'profile_id', value: p2 })).details.reason).toBe('block_destructive');

    const a = await mcp.connect(tok.admin);
    const gone = await callOk(a, 'profiles_erase', { by: 'external_id', value: 'crm-m2' });
    expect(gone.profile_id).toBe(p2);
    expect(gone.removed).toMatchObject({ profiles: 2, sessions: 2, events: 1, identities: 4 });
    for (const [table, col] of [['profiles', 'id'], ['sessions', 'profile_id'], ['events', 'profile_id'], ['identities', 'profile_id']] as const) {
      expect(query(dataDir, `SELECT * FROM ${table} WHERE ${col} IN (?, ?)`, p1, p2), table).toHaveLength(0);
    }
    expect(query(dataDir, "SELECT * FROM identities WHERE value IN ('crm-m1','crm-m2','mcp-m1v','mcp-m2v')")).toHaveLength(0);
    expect(gone.removed.outbox).toBeGreaterThanOrEqual(2);
    for (const needle of [p1, p2, 'crm-m1', 'crm-m2', 'mcp-m1v', 'mcp-m2v']) {
      expect(query(dataDir, 'SELECT id FROM outbox WHERE instr(payload, ?) > 0', needle), needle).toHaveLength(0);
    }
    expect(errorOf(await call(a, 'profiles_get', { by: 'external_id', value: 'crm-m1' })).code).toBe('not_found');
    expect((await callOk(a, 'profiles_erase', { by: 'external_id', value: 'crm-ada' })).removed.leads).toBe(1);
  });
});

describe('policy at the server', () => {
  it('refuses every data-changing tool to a read token and to a read-only write token, and nothing changes', async () => {
    const r = await mcp.connect(tok.read);
    const ro = await mcp.connect(tok.writeRO);
    const { tools } = await r.listTools();
    const mutating = tools.filter((t) => t.annotations?.readOnlyHint === false);
    expect(mutating.length).toBeGreaterThanOrEqual(12);
    const before = { stats: stats(dataDir, site), rows: counts() };
    for (const t of mutating) {
      for (const [who, c] of [['read', r], ['write --read-only', ro]] as const) {
        const res = await call(c, t.name, { id: 'x', name: 'n', rule: { trait: 'plan', op: 'exists' }, by: 'profile_id', value: 'x' });
        expect(res.isError, `${t.name} with ${who}`).toBe(true);
        expect(errorOf(res).code, `${t.name} with ${who}`).toBe('insufficient_scope');
        expect(errorOf(res).details.missing, `${t.name} with ${who}`).toMatch(/^(scope|restriction|area):/);
      }
    }
    expect(stats(dataDir, site)).toEqual(before.stats);
    expect(counts()).toEqual(before.rows);
  });

  it('decides before validating: refused even with invalid arguments; area-limited tokens see only their area', async () => {
    const r = await mcp.connect(tok.read);
    const res = await call(r, 'segments_create', { name: 12345, rule: 'garbage' });
    expect(errorOf(res)).toMatchObject({ code: 'insufficient_scope', details: { reason: 'scope', missing: 'scope:write' } });
    const area = await mcp.connect(tok.areas);
    expect(errorOf(await call(area, 'segments_list'))).toMatchObject({ code: 'insufficient_scope', details: { missing: 'area:segments' } });
    expect((await callOk(area, 'profiles_search', { rule: { trait: 'plan', op: 'exists' } })).profile_ids.length).toBeGreaterThan(0);
  });

  it('writes one audit row per tools/call with token, tool, outcome and duration, never argument values', async () => {
    const marker = 'zz-unique-marker-4711';
    const r = await mcp.connect(tok.readRO);
    const before = query<{ n: number }>(dataDir, 'SELECT count(*) AS n FROM mcp_audit')[0]!.n;
    await call(r, 'events_recent', { type: marker });
    await call(r, 'segments_create', { name: marker, rule: { trait: marker, op: 'exists' } });
    await call(r, 'analytics_summary', { days: marker });
    const rows = query<any>(dataDir, 'SELECT * FROM mcp_audit ORDER BY id DESC LIMIT 3').reverse();
    expect(query<{ n: number }>(dataDir, 'SELECT count(*) AS n FROM mcp_audit')[0]!.n).toBe(before + 3);
    const tokenId = query<{ id: string }>(dataDir, 'SELECT id FROM mcp_tokens WHERE hash = ?', sha(tok.readRO))[0]!.id;
    expect(rows.map((x) => [x.token_id, x.tool, x.outcome, x.error_code])).toEqual([
      [tokenId, 'events_recent', 'ok', null],
      [tokenId, 'segments_create', 'refused', 'insufficient_scope'],
      [tokenId, 'analytics_summary', 'invalid', 'validation_failed'],
    ]);
    for (const row of rows) expect(row.duration_ms).toBeGreaterThanOrEqual(0);
    expect(JSON.stringify(query(dataDir, 'SELECT * FROM mcp_audit'))).not.toContain(marker);
    const a = await mcp.connect(tok.admin);
    const { calls } = await callOk(a, 'access_audit_list', { token_id: tokenId, limit: 3 });
    expect(calls.map((c: any) => [c.tool, c.outcome])).toEqual([
      ['analytics_summary', 'invalid'],
      ['segments_create', 'refused'],
      ['events_recent', 'ok'],
    ]);
    const listed = cliJson<any[]>(['token', 'list', '--site', site, '--data', dataDir]).find((t) => t.id === tokenId);
    expect(listed.last_used_at).toMatch(/^\d{4}-/);
    expect(listed.restrictions.read_only).toBe(true);
  });

  it('never writes a token, an api_key value or an Authorization header to the log', () => {
    const log = svc.stderr();
    for (const t of Object.values(tok)) expect(log).not.toContain(t);
    expect(log.toLowerCase()).not.toContain('bearer mcpt_');
  });
});

describe('rate limit', () => {
  let small: Svc;
  let dir: string;
  let token: string;

  beforeAll(async () => {
    dir = tempDir();
    const s = createSite(dir);
    token = cliJson<{ token: string }>(['token', 'mint', '--site', s, '--scope', 'read', '--data', dir]).token;
    small = await startSvc({ dataDir: dir, env: { SVC_MCP_RATE: '1', SVC_MCP_BURST: '3', SVC_LOG_LEVEL: 'debug' } });
  });

  afterAll(async () => {
    await small.stop();
    cleanup(dir);
  });

  it('answers 429 rate_limited over the per-token limit, with the policy in the message and headers', async () => {
    const url = `${small.url}/api/mcp?api_key=${token}`;
    const statuses: number[] = [];
    let last: Awaited<ReturnType<typeof rawPost>> | undefined;
    for (let i = 0; i < 5; i++) {
      last = await rawPost(url, {}, INIT);
      statuses.push(last.status);
    }
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    expect(last!.body).toMatchObject({ jsonrpc: '2.0', error: { data: { code: 'rate_limited', limit: 1, burst: 3, window_seconds: 60 } } });
    expect(last!.body.error.message).toContain('1 requests per minute, burst 3');
    expect(Number(last!.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(small.stderr()).not.toContain(token);
  });
});

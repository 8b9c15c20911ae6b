import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPORT_LINK_PURPOSE, signReportLink } from '../../src/domain/access/report-link.js';
import { SecretBox } from '../../src/store/secret-box.js';
import { cleanup, createSite, post, startSvc, tempDir, type Svc } from '../helpers/svc.js';
import { query } from '../helpers/db.js';
import { call, callOk, errorOf, McpClients, mintTokenRecord } from '../helpers/mcp-client.js';

/**
 * Signed report links end to end: minted with access_report_link_mint through the MCP endpoint (SDK
 * client), opened with a plain GET and no token, refused when altered, expired, or when the minting
 * token is revoked; the report never carries personal data and the link never reaches the log.
 */
const EMAIL = 'jane.roe@acme.com';
const NAME = 'Jane Roe';
const PHONE = '+1 555 0100';

let svc: Svc;
let dataDir: string;
let site: string;
const tok = { issuer: { token: '', id: '' }, plainAdmin: '', read: '', narrow: '' };
const mcp = new McpClients(() => svc.url);

async function open(path: string): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await fetch(`${svc.url}${path}`);
  return { status: res.status, body: await res.json(), headers: res.headers };
}

beforeAll(async () => {
  dataDir = tempDir();
  site = createSite(dataDir);
  tok.issuer = mintTokenRecord(dataDir, site, ['--scope', 'admin', '--allow-credential-issuance']);
  tok.plainAdmin = mintTokenRecord(dataDir, site, ['--scope', 'admin']).token;
  tok.read = mintTokenRecord(dataDir, site, ['--scope', 'read']).token;
  tok.narrow = mintTokenRecord(dataDir, site, ['--scope', 'admin', '--allow-credential-issuance', '--areas', 'access,accounts']).token;
  svc = await startSvc({ dataDir });
  await post(`${svc.url}/api/events`, { site_id: site, session_id: 'r1', visitor_id: 'vr1', type: 'pageview', url: '/pricing' });
  await post(`${svc.url}/api/identify`, { site_id: site, session_id: 'r1', visitor_id: 'vr1', traits: { email: EMAIL, name: NAME, phone: PHONE } });
  await post(`${svc.url}/api/events`, { site_id: site, session_id: 'r1', visitor_id: 'vr1', type: 'pageview', url: '/demo' });
});

afterAll(async () => {
  await mcp.closeAll();
  await svc?.stop();
  cleanup(dataDir);
});

describe('signed report links', () => {
  let link = '';

  it('mints a link into a read tool and opens it without a token, as that tool answers a read token', async () => {
    const issuer = await mcp.connect(tok.issuer.token);
    const before = Date.now();
    const m = await callOk(issuer, 'access_report_link_mint', { tool: 'accounts_signals', arguments: { account: 'acme.com', days: 7 }, expires_in_minutes: 30 });
    link = m.link;
    expect(m).toMatchObject({ tool: 'accounts_signals', path: `/api/mcp/report?link=${m.link}` });
    expect(m.link).toMatch(/^rpl1\./);
    const expires = Date.parse(m.expires_at);
    expect(expires).toBeGreaterThanOrEqual(before + 30 * 60_000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 30 * 60_000);

    const r = await open(m.path);
    expect(r.status).toBe(200);
    expect(r.headers.get('cache-control')).toBe('no-store');
    expect(r.body.report).toMatchObject({ id: m.id, tool: 'accounts_signals', arguments: { account: 'acme.com', days: 7 }, site_id: site, expires_at: m.expires_at });
    expect(r.body.result.domain).toBe('acme.com');
    expect(r.body.result.current).toMatchObject({ sessions: 1, known_visitors: 1, page_views: 2 });
    const direct = await callOk(await mcp.connect(tok.read), 'accounts_signals', { account: 'acme.com', days: 7 });
    expect(r.body.result.current).toEqual(direct.current);
    const text = JSON.stringify(r.body).toLowerCase();
    for (const pii of [EMAIL, NAME, PHONE, 'jane']) expect(text).not.toContain(pii.toLowerCase());
    // The report ran as a tools/call of the minting token: one audit row, no argument values.
    const audit = query<{ tool: string; outcome: string }>(dataDir, "SELECT tool, outcome FROM mcp_audit WHERE token_id = ? AND tool = 'accounts_signals'", tok.issuer.id);
    expect(audit).toEqual([{ tool: 'accounts_signals', outcome: 'ok' }]);
  });

  it('shows a profile without personal values: the report has the read scope whatever the minter had', async () => {
    const issuer = await mcp.connect(tok.issuer.token);
    const args = { by: 'visitor_id', value: 'vr1' };
    expect(JSON.stringify(await callOk(issuer, 'profiles_get', args))).toContain(EMAIL);
    const m = await callOk(issuer, 'access_report_link_mint', { tool: 'profiles_get', arguments: args });
    const r = await open(m.path);
    expect(r.status).toBe(200);
    expect(r.body.result.profile_id).toMatch(/^prf_/);
    const text = JSON.stringify(r.body);
    for (const pii of [EMAIL, NAME, PHONE]) expect(text).not.toContain(pii);
  });

  it('refuses to mint without credential issuance, for a write tool, an unknown tool, bad arguments or an area the token lacks', async () => {
    const read = await call(await mcp.connect(tok.read), 'access_report_link_mint', { tool: 'accounts_list' });
    expect(errorOf(read)).toMatchObject({ code: 'insufficient_scope', details: { reason: 'scope' } });
    const plain = await call(await mcp.connect(tok.plainAdmin), 'access_report_link_mint', { tool: 'accounts_list' });
    expect(errorOf(plain)).toMatchObject({ code: 'insufficient_scope', details: { reason: 'credential_issuance' } });
    const issuer = await mcp.connect(tok.issuer.token);
    expect(errorOf(await call(issuer, 'access_report_link_mint', { tool: 'accounts_upsert', arguments: { website: 'acme.com' } }))).toMatchObject({
      code: 'validation_failed',
      details: { field: 'tool' },
    });
    expect(errorOf(await call(issuer, 'access_report_link_mint', { tool: 'nope_nope' })).code).toBe('not_found');
    expect(errorOf(await call(issuer, 'access_report_link_mint', { tool: 'accounts_signals', arguments: { account: 'acme.com', days: 0 } }))).toMatchObject({
      code: 'validation_failed',
      details: { field: 'arguments.days' },
    });
    expect(errorOf(await call(issuer, 'access_report_link_mint', { tool: 'accounts_list', expires_in_minutes: 24 * 60 + 1 }))).toMatchObject({
      code: 'validation_failed',
      details: { field: 'expires_in_minutes' },
    });
    const narrow = await call(await mcp.connect(tok.narrow), 'access_report_link_mint', { tool: 'analytics_lift' });
    expect(errorOf(narrow)).toMatchObject({ code: 'insufficient_scope', details: { reason: 'area' } });
  });

  it('answers 401 for a missing, malformed, altered or expired link, and keeps the link out of the log', async () => {
    const missing = await open('/api/mcp/report');
    expect([missing.status, missing.body.error.code, missing.body.error.details.reason]).toEqual([401, 'unauthorized', 'missing']);
    expect((await open('/api/mcp/report?link=hello')).body.error.details.reason).toBe('malformed');
    const [p, body, mac] = link.split('.') as [string, string, string];
    const payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    const altered = Buffer.from(JSON.stringify({ ...payload, a: { account: 'other.com', days: 7 } })).toString('base64url');
    const r = await open(`/api/mcp/report?link=${p}.${altered}.${mac}`);
    expect([r.status, r.body.error.details.reason]).toEqual([401, 'bad_signature']);
    // A link signed with this server's key (the data directory's secret.key, as the server reads it) that expired a second ago.
    const box = SecretBox.forDataDir(dataDir, process.env.SVC_SECRET_KEY);
    const expired = signReportLink({ siteId: site, minterTokenId: tok.issuer.id, tool: 'accounts_list', args: {}, expiresAt: Date.now() - 1000 }, (d) => box.mac(REPORT_LINK_PURPOSE, d));
    const e = await open(`/api/mcp/report?link=${expired.token}`);
    expect([e.status, e.body.error.details.reason]).toEqual([401, 'expired']);
    // The same, still valid, works: the server verifies with the key it was given.
    const fresh = signReportLink({ siteId: site, minterTokenId: tok.issuer.id, tool: 'accounts_list', args: {}, expiresAt: Date.now() + 60_000 }, (d) => box.mac(REPORT_LINK_PURPOSE, d));
    expect((await open(`/api/mcp/report?link=${fresh.token}`)).body.result.accounts.map((a: any) => a.domain)).toEqual(['acme.com']);
    // A report whose arguments the tool refuses answers with the tool's error.
    const badArgs = signReportLink({ siteId: site, minterTokenId: tok.issuer.id, tool: 'accounts_signals', args: { days: 7 }, expiresAt: Date.now() + 60_000 }, (d) => box.mac(REPORT_LINK_PURPOSE, d));
    const b = await open(`/api/mcp/report?link=${badArgs.token}`);
    expect([b.status, b.body.error.code, b.body.error.details.tool]).toEqual([400, 'validation_failed', 'accounts_signals']);
    expect(svc.stderr()).not.toContain(link);
    expect(svc.stderr()).not.toContain(body);
  });

  it('stops working when the minting token is revoked', async () => {
    const own = mintTokenRecord(dataDir, site, ['--scope', 'admin', '--allow-credential-issuance']);
    const m = await callOk(await mcp.connect(own.token), 'access_report_link_mint', { tool: 'accounts_list' });
    expect((await open(m.path)).status).toBe(200);
    await callOk(await mcp.connect(tok.issuer.token), 'access_token_revoke', { token_id: own.id });
    const r = await open(m.path);
    expect([r.status, r.body.error.code, r.body.error.details.reason]).toEqual([401, 'unauthorized', 'minter']);
  });
});

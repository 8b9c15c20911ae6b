import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPORT_LINK_PURPOSE, signReportLink, verifyReportLink } from '../../src/domain/access/report-link.js';
import { reportGrant, type Grant } from '../../src/domain/access/grant.js';
import { SecretBox } from '../../src/store/secret-box.js';

const dir = mkdtempSync(path.join(tmpdir(), 'svc-report-link-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const box = SecretBox.forDataDir(dir, '');
const sign = (d: string) => box.mac(REPORT_LINK_PURPOSE, d);
const T0 = Date.parse('2026-11-25T10:00:00Z');
const link = { siteId: 'site_a', minterTokenId: 'mcpk_a', tool: 'accounts_signals', args: { account: 'acme.com', days: 7 }, expiresAt: T0 + 60_000 };

describe('signed report links', () => {
  it('round-trips the site, minting token, tool, arguments and expiry', () => {
    const { id, token } = signReportLink(link, sign);
    expect(token).toMatch(/^rpl1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    expect(verifyReportLink(token, sign, T0)).toEqual({ ok: true, link: { id, ...link } });
    // Two links of the same report differ.
    expect(signReportLink(link, sign).token).not.toBe(token);
  });

  it('expires at its expiry instant, not a millisecond later', () => {
    const { token } = signReportLink(link, sign);
    expect(verifyReportLink(token, sign, link.expiresAt - 1).ok).toBe(true);
    expect(verifyReportLink(token, sign, link.expiresAt)).toEqual({ ok: false, reason: 'expired' });
  });

  it('refuses an altered payload, a signature of another key or purpose, and malformed tokens', () => {
    const { token } = signReportLink(link, sign);
    const [p, body, mac] = token.split('.') as [string, string, string];
    const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(body, 'base64url').toString()), s: 'site_b' })).toString('base64url');
    expect(verifyReportLink(`${p}.${forged}.${mac}`, sign, T0)).toEqual({ ok: false, reason: 'bad_signature' });
    const other = SecretBox.forDataDir(dir, 'another key');
    expect(verifyReportLink(token, (d) => other.mac(REPORT_LINK_PURPOSE, d), T0)).toEqual({ ok: false, reason: 'bad_signature' });
    expect(verifyReportLink(token, (d) => box.mac('webhook', d), T0)).toEqual({ ok: false, reason: 'bad_signature' });
    expect(verifyReportLink(`${p}.${body}.${mac.slice(0, -2)}`, sign, T0)).toEqual({ ok: false, reason: 'bad_signature' });
    for (const bad of ['', 'rpl1', `rpl2.${body}.${mac}`, `${p}.${body}`, `${p}.${body}.${mac}.x`, `${p}.${body}!.${mac}`]) {
      expect(verifyReportLink(bad, sign, T0), bad).toEqual({ ok: false, reason: 'malformed' });
    }
    // Correctly signed but not a link payload.
    const junk = Buffer.from('{"x":1}').toString('base64url');
    expect(verifyReportLink(`rpl1.${junk}.${sign(`rpl1.${junk}`).toString('base64url')}`, sign, T0)).toEqual({ ok: false, reason: 'malformed' });
  });

  it("grants the read scope with the minter's restrictions, read-only, never credential issuance", () => {
    const minter: Grant = {
      tokenId: 'mcpk_a',
      siteId: 'site_a',
      scope: 'admin',
      createdBy: 'usr_a',
      restrictions: { read_only: false, block_destructive: true, areas: ['accounts', 'access'], allow_credential_issuance: true, propose_only: true },
    };
    expect(reportGrant(minter)).toEqual({
      tokenId: 'mcpk_a',
      siteId: 'site_a',
      scope: 'read',
      createdBy: 'usr_a',
      restrictions: { read_only: true, block_destructive: true, areas: ['accounts', 'access'], allow_credential_issuance: false, propose_only: true },
    });
  });
});

import { describe, expect, it } from 'vitest';
import type { IncomingMessage } from 'node:http';
import { canonicalOrigin, MAX_ANSWERS_PER_SITE, originAllowed, PerSiteAnswers } from '../../src/domain/sites/origins.js';
import { visitorCookie } from '../../src/ingest/origins.js';
import type { SiteRow } from '../../src/store/sites.js';

const site = (over: Partial<SiteRow> = {}): SiteRow => ({
  id: 'site_x',
  account_id: 'acct',
  name: 'Shop',
  domain: 'shop.example.co.uk',
  currency: 'GBP',
  timezone: 'UTC',
  holdout_share: 0,
  consent_required: 0,
  honour_privacy_signals: 0,
  allowed_origins: '["http://localhost:5173"]',
  url_params: '["utm_*"]',
  created_at: 0,
  ...over,
});

const req = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;

describe('origins of a site', () => {
  it("allows the domain, its subdomains, the extra origins and svc's own host; nothing else", () => {
    const s = site();
    for (const o of ['https://shop.example.co.uk', 'http://www.shop.example.co.uk', 'https://a.b.shop.example.co.uk:8443', 'http://localhost:5173']) {
      expect(originAllowed(s, o, 'svc.example.net'), o).toBe(true);
    }
    for (const o of ['https://example.co.uk', 'https://evilshop.example.co.uk', 'https://shop.example.co.uk.evil.io', 'http://localhost:5174', 'null', 'file://', 'chrome-extension://abc']) {
      expect(originAllowed(s, o, 'svc.example.net'), o).toBe(false);
    }
    expect(originAllowed(site({ domain: null, allowed_origins: '[]' }), 'http://127.0.0.1:9000', '127.0.0.1:9000')).toBe(true);
    expect(originAllowed(site({ domain: null, allowed_origins: '[]' }), 'http://127.0.0.1:9001', '127.0.0.1:9000')).toBe(false);
  });

  it('canonicalizes origins and refuses paths, queries and other schemes', () => {
    expect(canonicalOrigin('HTTPS://App.Example.net:443/')).toBe('https://app.example.net');
    expect(canonicalOrigin('http://localhost:5173')).toBe('http://localhost:5173');
    for (const bad of ['https://a.example/x', 'https://a.example?q', 'ftp://a.example', 'a.example', 'https://u:p@a.example']) expect(canonicalOrigin(bad), bad).toBeNull();
  });
});

describe('the visitor cookie svc sets itself', () => {
  it("is set only under the site's own origin, on its registrable domain", () => {
    const s = site();
    const proxied = req({ origin: 'https://www.shop.example.co.uk', host: 'www.shop.example.co.uk' });
    expect(visitorCookie(s, proxied, false, 'v_1')).toBe('svc_vid=v_1; Domain=example.co.uk; Path=/; Max-Age=34560000; SameSite=Lax; Secure');
    expect(visitorCookie(site({ domain: 'example.co.uk' }), proxied, false, 'v_1')).toContain('Domain=example.co.uk');
    // svc on a host of its own cannot set a first-party cookie; an odd visitor id is never echoed.
    expect(visitorCookie(s, req({ origin: 'https://www.shop.example.co.uk', host: 'svc.example.net' }), false, 'v_1')).toBeNull();
    expect(visitorCookie(s, proxied, false, 'v_1; Domain=evil')).toBeNull();
    expect(visitorCookie(s, req({ host: 'www.shop.example.co.uk' }), false, 'v_1')).toBeNull();
    // Behind a trusted proxy the browser's host is X-Forwarded-Host; plain http gets no Secure.
    const fwd = req({ origin: 'http://shop.example.co.uk', host: '127.0.0.1:8787', 'x-forwarded-host': 'shop.example.co.uk' });
    expect(visitorCookie(s, fwd, true, 'v_1')).toBe('svc_vid=v_1; Domain=example.co.uk; Path=/; Max-Age=34560000; SameSite=Lax');
    expect(visitorCookie(s, fwd, false, 'v_1')).toBeNull();
  });

  it('answers again for a site read again (a changed domain or list takes effect), and per origin and host', () => {
    const before = site({ domain: 'old.example.com', allowed_origins: '[]' });
    const after = site({ domain: 'shop.example.co.uk', allowed_origins: '["https://partner.example.org"]' });
    const r = req({ origin: 'https://www.shop.example.co.uk', host: 'www.shop.example.co.uk' });
    expect(originAllowed(before, 'https://www.shop.example.co.uk', 'svc.example.net')).toBe(false);
    expect(originAllowed(after, 'https://www.shop.example.co.uk', 'svc.example.net')).toBe(true);
    expect(originAllowed(before, 'https://partner.example.org', undefined)).toBe(false);
    expect(originAllowed(after, 'https://partner.example.org', undefined)).toBe(true);
    // The same origin under svc's own host is allowed whatever the site says.
    expect(originAllowed(before, 'https://www.shop.example.co.uk', 'www.shop.example.co.uk')).toBe(true);
    expect(visitorCookie(before, r, false, 'v_1')).toBeNull();
    expect(visitorCookie(after, r, false, 'v_1')).toBe('svc_vid=v_1; Domain=example.co.uk; Path=/; Max-Age=34560000; SameSite=Lax; Secure');
    expect(visitorCookie(after, r, false, 'v_2')).toBe('svc_vid=v_2; Domain=example.co.uk; Path=/; Max-Age=34560000; SameSite=Lax; Secure');
  });

  it('computes an answer once per site row, origin and host, and keeps at most MAX_ANSWERS_PER_SITE per row', () => {
    const answers = new PerSiteAnswers<string | null>();
    const s = site();
    let computed = 0;
    const ask = (row: SiteRow, origin: string, host: string | undefined) =>
      answers.get(row, origin, host, () => {
        computed++;
        return origin === 'https://none.test' ? null : `${origin}|${host ?? '-'}`;
      });
    expect(ask(s, 'https://a.test', 'h')).toBe('https://a.test|h');
    expect(ask(s, 'https://a.test', 'h')).toBe('https://a.test|h');
    expect(ask(s, 'https://a.test', undefined)).toBe('https://a.test|-');
    expect(ask(s, 'https://none.test', 'h')).toBeNull();
    expect(ask(s, 'https://none.test', 'h')).toBeNull();
    expect(computed).toBe(3);
    expect(ask(site(), 'https://a.test', 'h')).toBe('https://a.test|h'); // another row object: asked again
    expect(computed).toBe(4);
    for (let i = 0; i < MAX_ANSWERS_PER_SITE; i++) ask(s, `https://o${i}.test`, 'h');
    computed = 0;
    expect(ask(s, 'https://a.test', 'h')).toBe('https://a.test|h'); // emptied when full: asked again
    expect(computed).toBe(1);
  });

  it('is not set on a privacy signal when the site honours them', () => {
    const gpc = req({ origin: 'https://shop.example.co.uk', host: 'shop.example.co.uk', 'sec-gpc': '1' });
    expect(visitorCookie(site(), gpc, false, 'v_1')).not.toBeNull();
    expect(visitorCookie(site({ honour_privacy_signals: 1 }), gpc, false, 'v_1')).toBeNull();
  });
});

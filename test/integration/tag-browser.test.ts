import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { cleanup, cliJson, createSite, ROOT, startSvc, tempDir, type Svc } from '../helpers/svc.js';
import { query, storeStats } from '../helpers/db.js';

/**
 * The browser tag in a real browser: Debian's Chromium (apt-get install chromium) driven by
 * playwright-core, one browser for the whole file. svc runs `svc demo`; a second local server
 * is a customer's site on another origin (the consent, CORS and svc-down pages).
 */
const CHROMIUM = '/usr/bin/chromium';
const HAS_CHROMIUM = existsSync(CHROMIUM);
if (!HAS_CHROMIUM) console.warn(`tag-browser: SKIPPED, ${CHROMIUM} is missing (apt-get update && apt-get install -y chromium)`);
const OUT = path.join(ROOT, 'test-results');

let svc: Svc;
let dataDir: string;
let demoSite: string;
let consentSite: string;
let nightSite: string;
let browser: Browser;
let pages: Server;
let pagesOrigin: string;

/** A customer page on the second origin that loads the tag from svc for `site`. */
function customerPage(site: string): string {
  return `<!doctype html><html><head><title>customer</title><script async src="${svc.url}/tag.js" data-site="${site}"></script></head>
<body><section data-svc-zone="hero"><h2>Default hero</h2></section></body></html>`;
}

const events = (site: string, type: string) =>
  query<{ visitor_id: string; body: string }>(dataDir, 'SELECT visitor_id, body FROM events WHERE site_id = ? AND type = ? ORDER BY id', site, type).map((r) => ({
    visitor: r.visitor_id,
    body: JSON.parse(r.body) as Record<string, any>,
  }));

/** The page is hidden (tab switched): web-vitals reports, the tag sends its web_vitals event. */
const hide = (page: Page) =>
  page.evaluate(() => {
    const doc = (globalThis as any).document;
    Object.defineProperty(doc, 'visibilityState', { value: 'hidden', configurable: true });
    doc.dispatchEvent(new Event('visibilitychange', { bubbles: true }));
  });

const svcCookies = async (ctx: BrowserContext) => (await ctx.cookies()).filter((c) => c.name.startsWith('svc_'));

describe.skipIf(!HAS_CHROMIUM)('the browser tag in Chromium', () => {
  beforeAll(async () => {
    pages = createServer((req, res) => {
      const site = new URL(req.url ?? '/', 'http://x').searchParams.get('site') ?? '';
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
      res.end(customerPage(site));
    });
    await new Promise<void>((r) => pages.listen(0, '127.0.0.1', r));
    pagesOrigin = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`;
    dataDir = tempDir();
    consentSite = createSite(dataDir, 'Consent shop');
    cliJson(['site', 'update', consentSite, '--consent-required', 'yes', '--allowed-origins', pagesOrigin, '--data', dataDir]);
    // A site on the customer origin with the default time zone (UTC), for the session and queue tests.
    nightSite = createSite(dataDir, 'Night shop');
    cliJson(['site', 'update', nightSite, '--allowed-origins', pagesOrigin, '--data', dataDir]);
    svc = await startSvc({ dataDir, command: 'demo' });
    demoSite = /svc demo site (\S+)/.exec(svc.stderr())![1]!;
    // The first decision of a site loads its snapshot; on a loaded machine that may exceed the tag's 1.5 s budget.
    expect((await fetch(`${svc.url}/api/decide?site_id=${demoSite}&visitor_id=warm-up&url=%2Fdemo`)).status).toBe(200);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    mkdirSync(OUT, { recursive: true });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    if (svc) expect(await svc.stop()).toBe(0);
    await new Promise((r) => pages?.close(r));
    if (dataDir) cleanup(dataDir);
  });

  it('fills the demo shop from /api/decide, keeps its cookies, reports renders and web vitals', async () => {
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${svc.url}/demo?utm_source=mail&email=jane%40example.com#top`);
    const [hero] = query<{ id: string }>(dataDir, "SELECT id FROM variants WHERE site_id = ? AND name = 'Autumn sale hero'", demoSite);
    await page.waitForSelector(`[data-svc-zone="hero"][data-svc-variant="${hero!.id}"]`);
    expect(await page.textContent('[data-svc-zone="hero"] h2')).toBe('Autumn sale: 20% off every roast');

    const cookies = Object.fromEntries((await svcCookies(ctx)).map((c) => [c.name, c]));
    expect(Object.keys(cookies).sort()).toEqual(['svc_sid', 'svc_vid']);
    expect(cookies.svc_vid).toMatchObject({ sameSite: 'Lax', httpOnly: false, path: '/' });
    expect(cookies.svc_vid!.value).toMatch(/^v_[0-9a-f]{32}$/);
    // 400 days for the visitor, 30 minutes of inactivity for the session.
    expect(cookies.svc_vid!.expires - Date.now() / 1000).toBeGreaterThan(399 * 86_400);
    expect(cookies.svc_sid!.expires - Date.now() / 1000).toBeLessThanOrEqual(30 * 60);
    const visitor = cookies.svc_vid!.value;
    const session = cookies.svc_sid!.value.split('.')[0];
    expect(await page.evaluate(() => [(globalThis as any).svc.visitorId(), (globalThis as any).svc.sessionId()])).toEqual([visitor, session]);

    // The pageview went out without the fragment and the parameters the site does not keep.
    await expect.poll(() => events(demoSite, 'pageview').length, { timeout: 20_000 }).toBe(1);
    const [pv] = events(demoSite, 'pageview');
    expect(pv).toMatchObject({ visitor, body: { session_id: session, url: `${svc.url}/demo?utm_source=mail`, title: 'svc demo shop' } });
    expect(pv!.body.idempotency_key).toMatch(/^k_[0-9a-f]{32}$/);
    await expect.poll(() => events(demoSite, 'variant_render').map((e) => e.body.variant_id), { timeout: 20_000 }).toContain(hero!.id);
    expect(events(demoSite, 'variant_render').every((e) => e.body.ok === true)).toBe(true);

    await page.click('button[data-sku="filter-500"]');
    await expect.poll(() => events(demoSite, 'add_to_cart').map((e) => e.body.sku), { timeout: 20_000 }).toEqual(['filter-500']);
    await page.fill('input[name="email"]', 'demo@example.com');
    await page.click('form#newsletter button');
    await expect.poll(async () => (await storeStats(dataDir, demoSite)).leads, { timeout: 20_000 }).toBe(1);

    const shot = path.join(OUT, 'demo-shop.png');
    await page.screenshot({ path: shot, fullPage: true });
    console.log(`tag-browser: screenshot of the demo shop at ${shot}`);

    await hide(page);
    await expect.poll(() => events(demoSite, 'web_vitals').length, { timeout: 20_000 }).toBe(1);
    const [vitals] = events(demoSite, 'web_vitals');
    expect(vitals!.visitor).toBe(visitor);
    expect(vitals!.body.variant_ids).toContain(hero!.id);
    expect(['lcp', 'cls', 'inp'].some((m) => typeof vitals!.body[m] === 'number')).toBe(true);
    expect(await storeStats(dataDir, demoSite)).toMatchObject({ profiles: 1, sessions: 1 });

    // The layout test keys on the visitor id: the same arm after a reload.
    const armsBefore = query<{ arm_id: string }>(dataDir, 'SELECT DISTINCT arm_id FROM exposures WHERE site_id = ? AND visitor_id = ? AND arm_id IS NOT NULL', demoSite, visitor);
    const banner = await page.innerHTML('[data-svc-zone="banner"]');
    await page.reload();
    await page.waitForFunction(() => (globalThis as any).svc?.visitorId());
    await expect.poll(() => events(demoSite, 'pageview').length, { timeout: 20_000 }).toBe(2);
    await page.waitForFunction((h) => (globalThis as any).document.querySelector('[data-svc-zone="hero"]')?.getAttribute('data-svc-variant') === h, hero!.id);
    expect(await page.innerHTML('[data-svc-zone="banner"]')).toBe(banner);
    expect(await page.evaluate(() => (globalThis as any).svc.visitorId())).toBe(visitor);
    const armsAfter = query<{ arm_id: string }>(dataDir, 'SELECT DISTINCT arm_id FROM exposures WHERE site_id = ? AND visitor_id = ? AND arm_id IS NOT NULL', demoSite, visitor);
    expect(armsBefore).toHaveLength(1);
    expect(armsAfter).toEqual(armsBefore);
    expect(errors).toEqual([]);
    await ctx.close();
  }, 180_000);

  it('sends a pageview on single-page navigation and splits large identifies under the 32 KB cap', async () => {
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    await page.goto(`${svc.url}/demo`);
    await page.waitForFunction(() => (globalThis as any).svc?.visitorId());
    const visitor = await page.evaluate(() => (globalThis as any).svc.visitorId() as string);
    const mine = (type: string) => events(demoSite, type).filter((e) => e.visitor === visitor);
    await expect.poll(() => mine('pageview').length, { timeout: 30_000 }).toBe(1);
    await page.evaluate(() => (globalThis as any).history.pushState({}, '', '/demo/checkout?ref=x&utm_medium=cpc'));
    await expect.poll(() => mine('pageview').map((e) => e.body.url), { timeout: 30_000 }).toEqual([`${svc.url}/demo`, `${svc.url}/demo/checkout?utm_medium=cpc`]);
    // 150 traits of 400 characters: about 64 KB, so at least two requests (and at most 100 traits each).
    const traits = Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`t${i}`, 'x'.repeat(400)]));
    expect(await page.evaluate((t) => (globalThis as any).svc.identify(t), traits)).toBe(true);
    const stored = () =>
      query<{ traits: string }>(dataDir, "SELECT p.traits FROM profiles p JOIN identities i ON i.profile_id = p.id WHERE i.site_id = ? AND i.kind = 'visitor' AND i.value = ?", demoSite, visitor);
    await expect.poll(() => Object.keys(JSON.parse(stored()[0]?.traits ?? '{}')).length, { timeout: 30_000 }).toBe(150);
    expect(JSON.parse(stored()[0]!.traits).t149).toBe('x'.repeat(400));
    await ctx.close();
  }, 120_000);

  it('sets no cookie and sends nothing until consent; withdrawing deletes the cookies', async () => {
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    const requests: string[] = [];
    page.on('request', (r) => requests.push(new URL(r.url()).pathname));
    const ready = page.waitForEvent('console', { predicate: (m) => m.text() === 'ready', timeout: 20_000 });
    await page.addInitScript(() => (globalThis as any).addEventListener('svc:ready', () => console.log('ready')));
    await page.goto(`${pagesOrigin}/?site=${consentSite}`);
    await ready;
    expect(await svcCookies(ctx)).toEqual([]);
    expect(await page.evaluate(() => [(globalThis as any).svc.visitorId(), (globalThis as any).svc.track('click')])).toEqual([null, false]);
    expect(requests.filter((p) => p.startsWith('/api/') || p === '/tag.js')).toEqual(['/tag.js', '/api/tag/config']);
    expect((await storeStats(dataDir, consentSite)).events).toBe(0);

    await page.evaluate(() => (globalThis as any).svc.consent(true));
    expect((await svcCookies(ctx)).map((c) => c.name).sort()).toEqual(['svc_consent', 'svc_sid', 'svc_vid']);
    await expect.poll(() => events(consentSite, 'pageview').length, { timeout: 20_000 }).toBe(1);

    await page.evaluate(() => (globalThis as any).svc.consent(false));
    expect(await svcCookies(ctx)).toEqual([]);
    expect(await page.evaluate(() => (globalThis as any).svc.track('click'))).toBe(false);
    await ctx.close();
  });

  it("is refused (403) on an origin that is not the site's, and stores nothing", async () => {
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    // svc answers 403 without Access-Control-Allow-Origin: Chromium fails the request for the page.
    const refused = page.waitForEvent('requestfailed', (r) => r.url().includes('/api/tag/config'));
    await page.goto(`${pagesOrigin}/?site=${demoSite}`);
    await refused;
    const direct = await fetch(`${svc.url}/api/tag/config?site_id=${demoSite}`, { headers: { origin: pagesOrigin } });
    expect(direct.status).toBe(403);
    expect(((await direct.json()) as any).error.code).toBe('forbidden_origin');
    const before = (await storeStats(dataDir, demoSite)).events;
    const sent = await page.evaluate(
      (u) =>
        fetch(`${u}/api/events`, { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: JSON.stringify({ site_id: (globalThis as any).document.querySelector('script').dataset.site, session_id: 's', type: 'pageview' }) })
          .then((r) => `status ${r.status}`)
          .catch(() => 'blocked'),
      svc.url,
    );
    // The browser does not let the page read the refusal: no Access-Control-Allow-Origin for it.
    expect(sent).toBe('blocked');
    expect((await storeStats(dataDir, demoSite)).events).toBe(before);
    expect(await page.textContent('[data-svc-zone="hero"] h2')).toBe('Default hero');
    await ctx.close();
  });

  it("starts a new session at the site's midnight and when the idle session cookie is gone, keeping the visitor", async () => {
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    // The page's clock one minute before today's midnight UTC (the site's time zone): a past time, which
    // ingestion accepts, so the events of both days are stored.
    const midnight = new Date();
    midnight.setUTCHours(0, 0, 0, 0);
    const day = (d: Date) => d.toISOString().slice(0, 10).replace(/-/g, '');
    const before = new Date(midnight.getTime() - 60_000);
    await page.clock.install({ time: before });
    await page.goto(`${pagesOrigin}/?site=${nightSite}`);
    await page.waitForFunction(() => (globalThis as any).svc?.sessionId());
    const [visitor, s1] = await page.evaluate(() => [(globalThis as any).svc.visitorId(), (globalThis as any).svc.sessionId()] as string[]);
    expect((await svcCookies(ctx)).find((c) => c.name === 'svc_sid')?.value).toBe(`${s1}.${day(before)}`);

    await page.clock.fastForward(120_000);
    expect(await page.evaluate(() => (globalThis as any).svc.track('after_midnight'))).toBe(true);
    const s2 = await page.evaluate(() => (globalThis as any).svc.sessionId() as string);
    expect(s2).toMatch(/^s_[0-9a-f]{32}$/);
    expect(s2).not.toBe(s1);
    expect((await svcCookies(ctx)).find((c) => c.name === 'svc_sid')?.value).toBe(`${s2}.${day(midnight)}`);

    // The session cookie lasts 30 idle minutes (the browser's clock, not the page's): gone, the next event opens
    // a third session; the visitor cookie stays.
    await ctx.clearCookies({ name: 'svc_sid' });
    expect(await page.evaluate(() => (globalThis as any).svc.track('after_idle'))).toBe(true);
    const s3 = await page.evaluate(() => (globalThis as any).svc.sessionId() as string);
    expect([s1, s2]).not.toContain(s3);
    expect(await page.evaluate(() => (globalThis as any).svc.visitorId())).toBe(visitor);

    const mine = () =>
      query<{ type: string; session_id: string; ts: number }>(dataDir, 'SELECT type, session_id, ts FROM events WHERE site_id = ? AND visitor_id = ? ORDER BY id', nightSite, visitor);
    await expect.poll(() => mine().map((e) => `${e.type}:${e.session_id}`).sort(), { timeout: 20_000 }).toEqual(
      [`after_idle:${s3}`, `after_midnight:${s2}`, `pageview:${s1}`].sort(),
    );
    // Each stored at the page's time: the pageview on the day before, the rest after midnight.
    const ts = Object.fromEntries(mine().map((e) => [e.type, Number(e.ts)]));
    expect(ts.pageview).toBeLessThan(midnight.getTime());
    expect(ts.after_midnight).toBeGreaterThanOrEqual(midnight.getTime());
    expect(query<{ n: number }>(dataDir, 'SELECT COUNT(*) AS n FROM sessions WHERE site_id = ? AND id IN (?, ?, ?)', nightSite, s1, s2, s3)[0]!.n).toBe(3);
    await ctx.close();
  }, 120_000);

  it('keeps what it could not send while offline and sends each item once when back online, or from the next page', async () => {
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    await page.goto(`${pagesOrigin}/?site=${nightSite}`);
    await page.waitForFunction(() => (globalThis as any).svc?.visitorId());
    const visitor = await page.evaluate(() => (globalThis as any).svc.visitorId() as string);
    const mine = (type: string) => events(nightSite, type).filter((e) => e.visitor === visitor);
    await expect.poll(() => mine('pageview').length, { timeout: 20_000 }).toBe(1);
    const queued = () => page.evaluate(() => JSON.parse((globalThis as any).localStorage.getItem('svc_q') ?? '[]').map((i: any) => i.b.n) as number[]);

    // Offline: three events wait in the queue, kept in localStorage.
    await ctx.setOffline(true);
    for (let n = 0; n < 3; n++) expect(await page.evaluate((k) => (globalThis as any).svc.track('offline_click', { n: k }), n)).toBe(true);
    await expect.poll(queued, { timeout: 10_000 }).toEqual([0, 1, 2]);
    expect(mine('offline_click')).toEqual([]);
    // Back online: the browser's online event sends them, in order, each once.
    await ctx.setOffline(false);
    await expect.poll(() => mine('offline_click').map((e) => e.body.n), { timeout: 20_000 }).toEqual([0, 1, 2]);
    await expect.poll(queued, { timeout: 10_000 }).toEqual([]);

    // svc unreachable: what this page could not send waits in localStorage, and the next page sends it.
    await page.route('**/api/events', (route) => route.abort('connectionrefused'));
    for (let n = 3; n < 5; n++) expect(await page.evaluate((k) => (globalThis as any).svc.track('offline_click', { n: k }), n)).toBe(true);
    await expect.poll(queued, { timeout: 10_000 }).toEqual([3, 4]);
    const keys = await page.evaluate(() => JSON.parse((globalThis as any).localStorage.getItem('svc_q')).map((i: any) => i.b.idempotency_key) as string[]);
    await page.unroute('**/api/events');
    await page.goto(`${pagesOrigin}/?site=${nightSite}&page=2`);
    // The beacons sent at page hide travel side by side, so 3 and 4 may be stored in either order (each event
    // keeps the page's own time); the online flush above sends one at a time, in order.
    const byN = () => mine('offline_click').sort((a, b) => a.body.n - b.body.n);
    await expect.poll(() => byN().map((e) => e.body.n), { timeout: 20_000 }).toEqual([0, 1, 2, 3, 4]);
    expect(byN().slice(3).map((e) => e.body.idempotency_key)).toEqual(keys);
    await expect.poll(queued, { timeout: 10_000 }).toEqual([]);
    // Nothing arrives twice (the beacon at page hide and the next page's flush do not both send an item).
    await new Promise((r) => setTimeout(r, 500));
    expect(mine('offline_click')).toHaveLength(5);
    await ctx.close();
  }, 120_000);

  it('leaves the page as it is when svc is down', async () => {
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    // The tag was loaded (cached) but every API call fails.
    await page.route('**/api/**', (route) => route.abort('connectionrefused'));
    const failed = page.waitForEvent('requestfailed', (r) => r.url().includes('/api/tag/config'));
    await page.goto(`${svc.url}/demo`);
    await failed;
    expect(await page.textContent('[data-svc-zone="hero"] h2')).toBe('Welcome to the demo shop');
    expect(await page.getAttribute('[data-svc-zone="hero"]', 'data-svc-variant')).toBeNull();
    await page.click('button[data-sku="espresso-250"]');
    expect(await svcCookies(ctx)).toEqual([]);
    expect(errors).toEqual([]);
    await ctx.close();
  });
});

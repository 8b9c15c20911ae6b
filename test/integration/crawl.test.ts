import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/client';
import { cleanup, cli, createSite, startSvc, tempDir, type Svc } from '../helpers/svc.js';
import { startReceiver } from '../helpers/receiver.js';
import { execute, query } from '../helpers/db.js';
import { callErr, callOk, mcpClient, mintToken, until } from '../helpers/mcp-client.js';
import { validatePayload } from '../../src/webhooks/catalogue.js';

/** A small web site on loopback whose files a test can change. */
async function startSite() {
  const files = new Map<string, { status?: number; body: string | Buffer; type?: string; location?: string; delayMs?: number }>();
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    hits.push(`${req.headers['user-agent'] ?? ''} ${req.url ?? ''}`);
    const f = files.get(req.url ?? '/');
    if (!f) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    const headers: Record<string, string> = { 'content-type': f.type ?? 'text/html' };
    if (f.location) headers.location = f.location;
    setTimeout(() => res.writeHead(f.status ?? 200, headers).end(f.body), f.delayMs ?? 0);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { origin, files, hits, close: () => new Promise((r) => server.close(r)) };
}

const urlset = (entries: [string, string?][]) =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${entries
    .map(([loc, lastmod]) => `<url><loc>${loc}</loc>${lastmod ? `<lastmod>${lastmod}</lastmod>` : ''}</url>`)
    .join('')}</urlset>`;

const PRIVATE = ['--allow-private-destinations'];

describe('sitemap crawl through MCP', () => {
  let svc: Svc;
  let dataDir: string;
  let siteId: string;
  let client: Client;
  let web: Awaited<ReturnType<typeof startSite>>;
  let rx: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    web = await startSite();
    rx = await startReceiver();
    dataDir = tempDir();
    siteId = createSite(dataDir);
    const add = cli(['webhooks', 'add', '--site', siteId, '--url', `${rx.url}/hooks`, '--events', 'all', '--data', dataDir, ...PRIVATE, '--json']);
    expect(add.code, add.stderr).toBe(0);
    const o = web.origin;
    web.files.set('/robots.txt', { type: 'text/plain', body: `User-agent: *\nDisallow: /private\n\nSitemap: ${o}/sitemap_index.xml\n` });
    web.files.set(
      '/sitemap_index.xml',
      {
        type: 'application/xml',
        body: `<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>${o}/sitemap-products.xml.gz</loc></sitemap><sitemap><loc>${o}/sitemap-pages.xml</loc></sitemap></sitemapindex>`,
      },
    );
    web.files.set('/sitemap-products.xml.gz', {
      type: 'application/gzip',
      body: gzipSync(urlset([[`${o}/p/1`, '2024-01-01'], [`${o}/p/2`, '2024-01-01'], [`${o}/p/3`]])),
    });
    web.files.set('/sitemap-pages.xml', {
      type: 'application/xml',
      body: urlset([[`${o}/`], [`${o}/about`], [`${o}/private/admin`], [`${o}/missing`], ['http://elsewhere.example/x']]),
    });
    for (const p of ['/', '/about', '/p/1', '/p/2', '/p/3', '/p/4', '/private/admin']) web.files.set(p, { body: `<html><body>${p}</body></html>` });
    // A page someone made by hand for /about: the crawl reuses it and leaves it as it is.
    execute(
      dataDir,
      "INSERT INTO pages (id, site_id, name, match_type, pattern, source, created_at, updated_at) VALUES ('page_manual_about', ?, 'About (manual)', 'exact', '/about', 'manual', 1, 1)",
      siteId,
    );
    svc = await startSvc({ dataDir, args: PRIVATE, env: { SVC_WEBHOOK_POLL_MS: '50' } });
    client = await mcpClient(svc.url, mintToken(dataDir, siteId, ['--scope', 'write']));
  });

  afterAll(async () => {
    await client?.close().catch(() => undefined);
    await svc?.stop();
    await web?.close();
    await rx?.close();
    cleanup(dataDir);
  });

  const finished = (crawlId: string) =>
    until(
      () => callOk(client, 'crawl_status', { crawl_id: crawlId }),
      (s) => s.state === 'finished' || s.state === 'failed',
    );

  const completedEvents = () =>
    rx.received.filter((r) => r.headers['x-svc-event'] === 'crawl.completed').map((r) => JSON.parse(r.body) as Record<string, unknown>);

  it('finds robots.txt sitemaps, follows the index into gzip and plain children, fetches allowed pages', async () => {
    const started = await callOk(client, 'crawl_start', { site_url: web.origin });
    expect(started).toMatchObject({ state: 'queued', origin: web.origin, max_urls: 5000, fetch_pages: true, requested_by: expect.stringMatching(/^token:/) });
    const s = await finished(started.crawl_id);
    expect(s.error).toBeNull();
    expect(s).toMatchObject({ state: 'finished', sitemap_url: `${web.origin}/sitemap_index.xml`, sitemaps_fetched: 3, truncated: false, complete: true, warnings: [] });
    expect(s.counts).toEqual({ found: 7, crawled: 5, failed: 1, disallowed: 1, skipped: 1, new: 7, changed: 0, unchanged: 0, removed: 0 });
    // robots.txt Disallow: /private was honoured, and every request named svc-crawler.
    expect(web.hits.some((h) => h.endsWith(' /private/admin'))).toBe(false);
    expect(web.hits.every((h) => h.startsWith('svc-crawler/'))).toBe(true);

    const listed = await callOk(client, 'crawl_pages', { crawl_id: started.crawl_id });
    const byUrl = Object.fromEntries(listed.pages.map((p: any) => [p.url.slice(web.origin.length), p]));
    expect(Object.keys(byUrl).sort()).toEqual(['/', '/about', '/missing', '/p/1', '/p/2', '/p/3', '/private/admin']);
    expect(byUrl['/p/1']).toMatchObject({ state: 'new', fetch: 'ok', http_status: 200, lastmod: '2024-01-01', content_hash: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(byUrl['/missing']).toMatchObject({ fetch: 'failed', http_status: 404 });
    expect(byUrl['/private/admin']).toMatchObject({ fetch: 'disallowed', http_status: null });
    expect(byUrl['/about'].page_id).toBe('page_manual_about');
    expect(listed.next_after).toBeNull();

    const pages = query<{ pattern: string; match_type: string; source: string }>(dataDir, 'SELECT pattern, match_type, source FROM pages WHERE site_id = ? ORDER BY pattern', siteId);
    expect(pages).toEqual([
      { pattern: '/', match_type: 'exact', source: 'crawl' },
      { pattern: '/about', match_type: 'exact', source: 'manual' },
      { pattern: '/missing', match_type: 'exact', source: 'crawl' },
      { pattern: '/p/1', match_type: 'exact', source: 'crawl' },
      { pattern: '/p/2', match_type: 'exact', source: 'crawl' },
      { pattern: '/p/3', match_type: 'exact', source: 'crawl' },
      { pattern: '/private/admin', match_type: 'exact', source: 'crawl' },
    ]);

    await until(async () => completedEvents().length, (n) => n >= 1);
    const ev = completedEvents()[0]!;
    expect(validatePayload('crawl.completed', ev).success).toBe(true);
    expect(ev).toMatchObject({ crawl_id: started.crawl_id, site_id: siteId, sitemap_url: `${web.origin}/sitemap_index.xml`, urls_found: 7, urls_crawled: 5, urls_failed: 1, urls_new: 7, urls_changed: 0, urls_removed: 0 });
  });

  it('tells new, changed and gone URLs apart on the next crawl, keeping the pages of gone URLs', async () => {
    const o = web.origin;
    web.files.set('/sitemap-products.xml.gz', {
      type: 'application/gzip',
      body: gzipSync(urlset([[`${o}/p/1`, '2024-06-01'], [`${o}/p/2`, '2024-01-01'], [`${o}/p/4`]])),
    });
    web.files.set('/about', { body: '<html><body>About us, rewritten</body></html>' });
    const started = await callOk(client, 'crawl_start', { site_url: o });
    const s = await finished(started.crawl_id);
    expect(s.counts).toEqual({ found: 7, crawled: 5, failed: 1, disallowed: 1, skipped: 1, new: 1, changed: 2, unchanged: 4, removed: 1 });
    const states = async (state: string) =>
      (await callOk(client, 'crawl_pages', { state })).pages.map((p: any) => p.url.slice(o.length));
    expect(await states('new')).toEqual(['/p/4']);
    expect(await states('changed')).toEqual(['/about', '/p/1']);
    expect(await states('gone')).toEqual(['/p/3']);
    const gone = (await callOk(client, 'crawl_pages', { state: 'gone' })).pages[0];
    expect(gone.gone_at).not.toBeNull();
    expect(query(dataDir, "SELECT count(*) AS n FROM pages WHERE site_id = ? AND pattern = '/p/3'", siteId)).toEqual([{ n: 1 }]);

    await until(async () => completedEvents().length, (n) => n >= 2);
    const ev = completedEvents()[1]!;
    expect(validatePayload('crawl.completed', ev).success).toBe(true);
    expect(ev).toMatchObject({ crawl_id: started.crawl_id, urls_found: 7, urls_new: 1, urls_changed: 2, urls_removed: 1 });
  });

  it('stops at the URL cap and then marks nothing gone', async () => {
    const started = await callOk(client, 'crawl_start', { sitemap_url: `${web.origin}/sitemap_index.xml`, max_urls: 2, fetch_pages: false });
    const s = await finished(started.crawl_id);
    expect(s).toMatchObject({ state: 'finished', truncated: true, complete: false });
    expect(s.counts).toMatchObject({ found: 2, crawled: 0, failed: 0, removed: 0 });
    expect((await callOk(client, 'crawl_pages', { crawl_id: started.crawl_id })).pages.map((p: any) => p.fetch)).toEqual(['skipped', 'skipped']);
  });

  it('follows a redirect to the sitemap (each hop guarded) and runs one crawl per site at a time', async () => {
    // Slow, so the crawl is surely still running when the second crawl_start comes.
    web.files.set('/moved.xml', { status: 301, body: '', location: '/sitemap_index.xml', delayMs: 500 });
    const started = await callOk(client, 'crawl_start', { sitemap_url: `${web.origin}/moved.xml` });
    const busy = await callErr(client, 'crawl_start', { sitemap_url: `${web.origin}/moved.xml` });
    expect(busy.code).toBe('conflict');
    expect(busy.details.crawl_id).toBe(started.crawl_id);
    const s = await finished(started.crawl_id);
    expect(s).toMatchObject({ state: 'finished', sitemap_url: `${web.origin}/moved.xml`, sitemaps_fetched: 3, complete: true });
    // /p/3 was already gone: nothing new is removed, nothing changed since the last complete crawl.
    expect(s.counts).toMatchObject({ found: 7, new: 0, changed: 0, unchanged: 7, removed: 0 });
    expect(web.hits.filter((h) => h.endsWith(' /moved.xml'))).toHaveLength(1);
  });

  it('fails a crawl whose sitemap cannot be read, with the reason', async () => {
    const started = await callOk(client, 'crawl_start', { sitemap_url: `${web.origin}/nope.xml` });
    const s = await finished(started.crawl_id);
    expect(s.state).toBe('failed');
    expect(s.error).toContain('nope.xml answered HTTP 404');
  });

  it('fails a crawl that outlasts its timeout_seconds, with the reason, marking nothing gone', async () => {
    // The sitemap answers after 8 s: past the crawl's 5 s limit, inside the 15 s limit of one request.
    web.files.set('/slow.xml', { type: 'application/xml', body: urlset([[`${web.origin}/p/1`]]), delayMs: 8000 });
    const gone = () => query<{ n: number }>(dataDir, "SELECT count(*) AS n FROM crawl_urls WHERE site_id = ? AND state = 'gone'", siteId);
    const goneBefore = gone();
    const started = await callOk(client, 'crawl_start', { sitemap_url: `${web.origin}/slow.xml`, timeout_seconds: 5 });
    expect(started.timeout_seconds).toBe(5);
    const s = await finished(started.crawl_id);
    expect(s).toMatchObject({ state: 'failed', error: 'the crawl did not finish within 5 s' });
    expect(gone()).toEqual(goneBefore);
    expect(completedEvents().some((e) => e.crawl_id === started.crawl_id)).toBe(false);
  });

  it('gives a running crawl back on shutdown and finishes it after a restart', async () => {
    web.files.set('/p/2', { body: '<html><body>/p/2</body></html>', delayMs: 4000 });
    const started = await callOk(client, 'crawl_start', { site_url: web.origin });
    await until(async () => web.hits.some((h) => h.endsWith(' /p/2')), Boolean);
    await client.close();
    expect(await svc.stop()).toBe(0);
    expect(query(dataDir, 'SELECT state, lease_until, attempts FROM crawls WHERE id = ?', started.crawl_id)).toEqual([{ state: 'running', lease_until: 0, attempts: 0 }]);
    web.files.set('/p/2', { body: '<html><body>/p/2</body></html>' });
    svc = await startSvc({ dataDir, args: PRIVATE, env: { SVC_WEBHOOK_POLL_MS: '50' } });
    client = await mcpClient(svc.url, mintToken(dataDir, siteId, ['--scope', 'write']));
    const s = await finished(started.crawl_id);
    expect(s).toMatchObject({ state: 'finished', attempts: 1 });
    expect(s.counts).toMatchObject({ found: 7, crawled: 5, removed: 0 });
  });

  it('refuses bad input with tool errors and stores nothing', async () => {
    const before = query(dataDir, 'SELECT count(*) AS n FROM crawls');
    expect((await callErr(client, 'crawl_start', { sitemap_url: 'ftp://x/sitemap.xml' })).code).toBe('validation_failed');
    expect((await callErr(client, 'crawl_start', {})).code).toBe('validation_failed'); // no domain, no URL
    expect((await callErr(client, 'crawl_start', { max_urls: 50_001, sitemap_url: `${web.origin}/s.xml` })).code).toBe('validation_failed');
    expect((await callErr(client, 'crawl_status', { crawl_id: 'crawl_nope' })).code).toBe('not_found');
    expect(query(dataDir, 'SELECT count(*) AS n FROM crawls')).toEqual(before);
  });
});

describe('crawl without --allow-private-destinations', () => {
  it('refuses a loopback sitemap with destination_refused', async () => {
    const dataDir = tempDir();
    const siteId = createSite(dataDir);
    const svc = await startSvc({ dataDir });
    const client = await mcpClient(svc.url, mintToken(dataDir, siteId, ['--scope', 'write']));
    try {
      const err = await callErr(client, 'crawl_start', { sitemap_url: 'http://127.0.0.1:9/sitemap.xml' });
      expect(err.code).toBe('destination_refused');
      expect(err.message).toMatch(/crawl refused: 127\.0\.0\.1 is not a publicly routable address/);
      expect((await callErr(client, 'crawl_start', { site_url: 'http://localhost:9/' })).code).toBe('destination_refused');
      expect(query(dataDir, 'SELECT count(*) AS n FROM crawls')).toEqual([{ n: 0 }]);
    } finally {
      await client.close().catch(() => undefined);
      await svc.stop();
      cleanup(dataDir);
    }
  });
});

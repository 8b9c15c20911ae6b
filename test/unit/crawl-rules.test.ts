import { describe, expect, it } from 'vitest';
import { gzipSync } from 'node:zlib';
import { robotsRules } from '../../src/domain/crawl/robots.js';
import { UrlCollector } from '../../src/domain/crawl/collect.js';
import { parseSitemapXml, rootElement } from '../../src/domain/crawl/sitemap.js';
import { crawlOrigin, urlState } from '../../src/domain/crawl/service.js';
import { FetchError, gunzipCapped, isGzip } from '../../src/domain/crawl/fetch.js';

const ROBOTS = 'http://shop.example/robots.txt';

describe('robots.txt', () => {
  const txt = [
    'User-agent: *',
    'Disallow: /private',
    '',
    'User-agent: svc-crawler',
    'Disallow: /checkout',
    'Allow: /checkout/help',
    '',
    'Sitemap: http://shop.example/sitemap_index.xml',
    'Sitemap: /news.xml',
    'Sitemap: http://shop.example/sitemap_index.xml',
  ].join('\n');

  it('applies the svc-crawler group (not *) and its Allow exceptions', () => {
    const r = robotsRules(ROBOTS, 200, txt);
    expect(r.allows('http://shop.example/checkout/pay')).toBe(false);
    expect(r.allows('http://shop.example/checkout/help')).toBe(true);
    expect(r.allows('http://shop.example/private/x')).toBe(true);
    expect(r.allows('http://shop.example/')).toBe(true);
  });

  it('applies * when there is no svc-crawler group', () => {
    const r = robotsRules(ROBOTS, 200, 'User-agent: *\nDisallow: /private\n');
    expect(r.allows('http://shop.example/private/x')).toBe(false);
    expect(r.allows('http://shop.example/public')).toBe(true);
  });

  it('reads the Crawl-delay of the svc-crawler group, capped at 10 s', () => {
    expect(robotsRules(ROBOTS, 200, txt).crawlDelayMs).toBeNull();
    expect(robotsRules(ROBOTS, 200, 'User-agent: svc-crawler\nCrawl-delay: 0.5\n').crawlDelayMs).toBe(500);
    expect(robotsRules(ROBOTS, 200, 'User-agent: *\nCrawl-delay: 2\n').crawlDelayMs).toBe(2000);
    expect(robotsRules(ROBOTS, 200, 'User-agent: *\nCrawl-delay: 3600\n').crawlDelayMs).toBe(10_000);
    expect(robotsRules(ROBOTS, 404, 'User-agent: *\nCrawl-delay: 2\n').crawlDelayMs).toBeNull();
  });

  it('lists Sitemap lines as absolute URLs, once each', () => {
    expect(robotsRules(ROBOTS, 200, txt).sitemaps).toEqual(['http://shop.example/sitemap_index.xml', 'http://shop.example/news.xml']);
  });

  it('allows everything without a robots.txt (4xx, unreachable) and nothing on a 5xx', () => {
    for (const status of [404, 410, null]) {
      const r = robotsRules(ROBOTS, status, 'User-agent: *\nDisallow: /');
      expect(r.allows('http://shop.example/anything')).toBe(true);
      expect(r.sitemaps).toEqual([]);
    }
    const down = robotsRules(ROBOTS, 503, '');
    expect(down.allows('http://shop.example/')).toBe(false);
    expect(down.allows('http://other.example/')).toBe(true);
  });
});

describe('URL collection and the per-crawl cap', () => {
  it('takes URLs of the crawled origin once each, without fragments, up to the cap', () => {
    const c = new UrlCollector('http://shop.example', 3);
    expect(c.add('http://shop.example/a', '2024-01-01')).toBe(true);
    expect(c.add('http://shop.example/a#top', null)).toBe(true);
    expect(c.add('https://shop.example/b', null)).toBe(true); // another origin (scheme)
    expect(c.add('http://elsewhere.example/c', null)).toBe(true);
    expect(c.add('not a url', null)).toBe(true);
    expect(c.add('http://shop.example/b?x=1', null)).toBe(true);
    expect(c.add('http://shop.example/c', null)).toBe(true);
    expect(c.truncated).toBe(false);
    expect(c.add('http://shop.example/a', null)).toBe(true); // duplicate at the cap: still fine
    expect(c.truncated).toBe(false);
    expect(c.add('http://shop.example/d', null)).toBe(false);
    expect(c.truncated).toBe(true);
    expect(c.skipped).toBe(3);
    expect(c.urls).toEqual([
      { url: 'http://shop.example/a', pattern: '/a', lastmod: '2024-01-01' },
      { url: 'http://shop.example/b?x=1', pattern: '/b?x=1', lastmod: null },
      { url: 'http://shop.example/c', pattern: '/c', lastmod: null },
    ]);
  });
});

describe('sitemap parsing', () => {
  it('finds the root element past the prolog and comments', () => {
    expect(rootElement('\uFEFF<?xml version="1.0"?>\n<!-- <urlset> --><sitemapindex xmlns="x">')).toBe('sitemapindex');
    expect(rootElement('<sm:urlset xmlns:sm="x">')).toBe('urlset');
    expect(rootElement('plain text')).toBeNull();
  });

  it('parses an index and a urlset with the sitemap package, dropping non-http URLs', async () => {
    const idx = await parseSitemapXml(
      '<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>http://shop.example/a.xml.gz</loc></sitemap><sitemap><loc>http://shop.example/b.xml</loc><lastmod>2024-05-01</lastmod></sitemap></sitemapindex>',
    );
    expect(idx).toEqual({ kind: 'index', sitemaps: [{ url: 'http://shop.example/a.xml.gz', lastmod: null }, { url: 'http://shop.example/b.xml', lastmod: '2024-05-01' }] });
    const set = await parseSitemapXml(
      '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>http://shop.example/p?a=1&amp;b=2</loc><lastmod>2024-01-02T10:00:00Z</lastmod></url><url><loc>javascript:alert(1)</loc></url></urlset>',
    );
    expect(set).toEqual({ kind: 'urlset', urls: [{ url: 'http://shop.example/p?a=1&b=2', lastmod: '2024-01-02T10:00:00Z' }] });
    await expect(parseSitemapXml('<html></html>')).rejects.toThrow('not a sitemap: the root element is <html>');
  });

  it('gunzips with an output cap', async () => {
    const gz = gzipSync(Buffer.from('<urlset/>'));
    expect(isGzip(gz)).toBe(true);
    expect(isGzip(Buffer.from('<urlset/>'))).toBe(false);
    expect((await gunzipCapped(gz, 100, 'u')).toString()).toBe('<urlset/>');
    const bomb = gzipSync(Buffer.alloc(1_000_000));
    await expect(gunzipCapped(bomb, 10_000, 'http://x/s.gz')).rejects.toThrow(FetchError);
    await expect(gunzipCapped(bomb, 10_000, 'http://x/s.gz')).rejects.toThrow('larger than 10000 bytes uncompressed');
  });
});

describe('URL states', () => {
  const prev = { state: 'unchanged' as const, lastmod: '2024-01-01', content_hash: 'h1', last_crawl_id: 'crawl_1' };
  it('new, changed by lastmod or content hash, unchanged', () => {
    expect(urlState(undefined, { lastmod: null, content_hash: null }, 'crawl_2')).toBe('new');
    expect(urlState({ ...prev, state: 'gone' }, { lastmod: '2024-01-01', content_hash: 'h1' }, 'crawl_2')).toBe('new');
    expect(urlState(prev, { lastmod: '2024-01-01', content_hash: 'h1' }, 'crawl_2')).toBe('unchanged');
    expect(urlState(prev, { lastmod: '2024-02-01', content_hash: 'h1' }, 'crawl_2')).toBe('changed');
    expect(urlState(prev, { lastmod: null, content_hash: 'h1' }, 'crawl_2')).toBe('changed');
    expect(urlState(prev, { lastmod: '2024-01-01', content_hash: 'h2' }, 'crawl_2')).toBe('changed');
    expect(urlState({ ...prev, content_hash: null }, { lastmod: '2024-01-01', content_hash: 'h2' }, 'crawl_2')).toBe('unchanged');
    expect(urlState(prev, { lastmod: '2024-01-01', content_hash: null }, 'crawl_2')).toBe('unchanged');
  });
  it('keeps the state a resumed crawl already gave the URL', () => {
    expect(urlState({ ...prev, state: 'new', last_crawl_id: 'crawl_2' }, { lastmod: '2024-01-01', content_hash: 'h1' }, 'crawl_2')).toBe('new');
    expect(urlState({ ...prev, state: 'changed', last_crawl_id: 'crawl_2' }, { lastmod: '2024-01-01', content_hash: 'h1' }, 'crawl_2')).toBe('changed');
  });
  it('crawls the site URL origin, else the sitemap origin, else the site domain over https', () => {
    expect(crawlOrigin('http://127.0.0.1:9/base/', 'http://127.0.0.1:8080/sitemap.xml', 'shop.example')).toBe('http://127.0.0.1:9');
    expect(crawlOrigin(null, 'http://127.0.0.1:8080/sitemap.xml', 'shop.example')).toBe('http://127.0.0.1:8080');
    expect(crawlOrigin(null, null, 'shop.example')).toBe('https://shop.example');
    expect(crawlOrigin(null, null, 'http://shop.example/')).toBe('http://shop.example');
    expect(crawlOrigin(null, null, null)).toBeNull();
    expect(crawlOrigin(null, null, '  ')).toBeNull();
  });
});

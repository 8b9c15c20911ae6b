import { createHash } from 'node:crypto';
import { setTimeout as sleepTimer } from 'node:timers/promises';
import type { FetchOutcome } from '../../store/crawl.js';
import { FetchError, guardedGet, gunzipCapped, isGzip, type GuardedFetch } from './fetch.js';
import { robotsRules, ROBOTS_MAX_BYTES, type RobotsRules } from './robots.js';
import { parseSitemapXml, SITEMAP_MAX_BYTES } from './sitemap.js';
import { UrlCollector, type ListedUrl } from './collect.js';

/** Sitemap files one crawl reads at most, and how deep indexes may nest. */
export const MAX_SITEMAP_FILES = 1_000;
export const MAX_SITEMAP_DEPTH = 4;
/** Bytes of a page read to hash it (its first megabyte). */
export const PAGE_MAX_BYTES = 1024 * 1024;
/** Pages fetched at once. */
export const PAGE_CONCURRENCY = 8;
/** Time limit of one request. */
export const REQUEST_TIMEOUT_MS = 15_000;

export interface CrawlPlan {
  origin: string;
  requestedSitemapUrl: string | null;
  maxUrls: number;
  fetchPages: boolean;
}

export interface CrawledUrl extends ListedUrl {
  fetch: FetchOutcome;
  http_status: number | null;
  fetch_error: string | null;
  /** sha256 (hex) of the first PAGE_MAX_BYTES of the page, when fetched with a 2xx. */
  content_hash: string | null;
}

export interface CrawlOutcome {
  /** The sitemap the crawl started from (the first root). */
  sitemapUrl: string;
  sitemapsFetched: number;
  truncated: boolean;
  /** Every sitemap was read and the cap was not reached. */
  complete: boolean;
  skipped: number;
  warnings: string[];
  urls: CrawledUrl[];
}

/** Waits `ms`, or throws when the crawl is stopped first. */
async function sleep(ms: number, signal: AbortSignal): Promise<void> {
  try {
    await sleepTimer(ms, undefined, { signal });
  } catch {
    throw new FetchError('the crawl was stopped', 'timeout');
  }
}

async function loadRobots(origin: string, f: GuardedFetch): Promise<RobotsRules> {
  const url = `${origin}/robots.txt`;
  try {
    const r = await guardedGet(url, f, { maxBytes: ROBOTS_MAX_BYTES, overflow: 'truncate', accept: 'text/plain' });
    return robotsRules(url, r.status, r.body.toString('utf8'));
  } catch (err) {
    if (err instanceof FetchError && (err.kind === 'refused' || f.signal.aborted)) throw err;
    return robotsRules(url, null, '');
  }
}

async function loadSitemap(url: string, f: GuardedFetch) {
  const r = await guardedGet(url, f, { maxBytes: SITEMAP_MAX_BYTES, overflow: 'error', accept: 'application/xml, text/xml, application/gzip, */*' });
  if (r.status < 200 || r.status > 299) throw new FetchError(`${url} answered HTTP ${r.status}`, 'network');
  const body = isGzip(r.body) ? await gunzipCapped(r.body, SITEMAP_MAX_BYTES, url) : r.body;
  return parseSitemapXml(body.toString('utf8'));
}

/** Fetches one page (GET, first PAGE_MAX_BYTES) unless robots.txt disallows it. */
async function fetchPage(u: ListedUrl, robots: RobotsRules, f: GuardedFetch): Promise<CrawledUrl> {
  if (!robots.allows(u.url)) return { ...u, fetch: 'disallowed', http_status: null, fetch_error: null, content_hash: null };
  try {
    const r = await guardedGet(u.url, f, { maxBytes: PAGE_MAX_BYTES, overflow: 'truncate', accept: 'text/html, */*' });
    if (r.status >= 200 && r.status < 300) {
      return { ...u, fetch: 'ok', http_status: r.status, fetch_error: null, content_hash: createHash('sha256').update(r.body).digest('hex') };
    }
    return { ...u, fetch: 'failed', http_status: r.status, fetch_error: `HTTP ${r.status}`, content_hash: null };
  } catch (err) {
    if (f.signal.aborted) throw err;
    return { ...u, fetch: 'failed', http_status: null, fetch_error: (err as Error).message.slice(0, 300), content_hash: null };
  }
}

/**
 * Crawls a site: robots.txt of the origin (rules for svc-crawler, listed
 * sitemaps), then the sitemaps (the requested one, else those robots.txt
 * lists, else <origin>/sitemap.xml), following indexes breadth first up to
 * MAX_SITEMAP_DEPTH, gzip or plain; then, when asked, each listed page the
 * rules allow (PAGE_CONCURRENCY at a time, or one at a time with the site's Crawl-delay). Every request goes through the
 * destination guard. Fails when no root sitemap could be read; a child
 * sitemap that fails is a warning and makes the crawl incomplete.
 */
export async function crawlSite(plan: CrawlPlan, f: GuardedFetch): Promise<CrawlOutcome> {
  const robots = await loadRobots(plan.origin, f);
  const roots = plan.requestedSitemapUrl !== null ? [plan.requestedSitemapUrl] : robots.sitemaps.length > 0 ? robots.sitemaps : [`${plan.origin}/sitemap.xml`];
  const collector = new UrlCollector(plan.origin, plan.maxUrls);
  const warnings: string[] = [];
  const visited = new Set<string>();
  let queue = roots.map((url) => ({ url, depth: 0 }));
  let fetched = 0;
  let rootsRead = 0;
  let complete = true;
  const rootErrors: string[] = [];
  while (queue.length > 0 && !collector.truncated) {
    const next: typeof queue = [];
    for (const item of queue) {
      if (collector.truncated) break;
      if (visited.has(item.url)) continue;
      if (visited.size >= MAX_SITEMAP_FILES) {
        warnings.push(`more than ${MAX_SITEMAP_FILES} sitemap files; the rest were not read`);
        complete = false;
        break;
      }
      visited.add(item.url);
      let parsed;
      try {
        parsed = await loadSitemap(item.url, f);
      } catch (err) {
        if (f.signal.aborted || (err instanceof FetchError && err.kind === 'refused' && item.depth === 0)) throw err;
        const msg = `sitemap ${item.url}: ${(err as Error).message}`.slice(0, 400);
        if (item.depth === 0) rootErrors.push(msg);
        else warnings.push(msg);
        complete = false;
        continue;
      }
      fetched++;
      if (item.depth === 0) rootsRead++;
      if (parsed.kind === 'index') {
        if (item.depth + 1 > MAX_SITEMAP_DEPTH) {
          warnings.push(`sitemap ${item.url}: indexes nested deeper than ${MAX_SITEMAP_DEPTH}; not followed`);
          complete = false;
          continue;
        }
        for (const s of parsed.sitemaps) next.push({ url: s.url, depth: item.depth + 1 });
      } else {
        for (const u of parsed.urls) if (!collector.add(u.url, u.lastmod)) break;
      }
    }
    queue = next;
  }
  if (rootsRead === 0) throw new Error(rootErrors.join('; ') || 'no sitemap could be read');
  warnings.unshift(...rootErrors);
  const listed = collector.urls;
  const urls: CrawledUrl[] = new Array<CrawledUrl>(listed.length);
  if (plan.fetchPages) {
    // A Crawl-delay means one page at a time with that pause between them; else PAGE_CONCURRENCY at once.
    const delay = robots.crawlDelayMs;
    let i = 0;
    const worker = async () => {
      while (i < listed.length) {
        const k = i++;
        if (delay !== null && k > 0) await sleep(delay, f.signal);
        urls[k] = await fetchPage(listed[k]!, robots, f);
      }
    };
    await Promise.all(Array.from({ length: Math.min(delay !== null ? 1 : PAGE_CONCURRENCY, listed.length) }, worker));
  } else {
    listed.forEach((u, k) => (urls[k] = { ...u, fetch: robots.allows(u.url) ? 'skipped' : 'disallowed', http_status: null, fetch_error: null, content_hash: null }));
  }
  return {
    sitemapUrl: roots[0]!,
    sitemapsFetched: fetched,
    truncated: collector.truncated,
    complete: complete && !collector.truncated,
    skipped: collector.skipped,
    warnings: warnings.slice(0, 50),
    urls,
  };
}

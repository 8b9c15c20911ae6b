import type { Dispatcher } from 'undici';
import { AppError } from '../../errors/app-error.js';
import type { Store } from '../../store/store.js';
import type { CrawlRow, CrawlUrlRow, UrlState } from '../../store/crawl.js';
import { CATALOGUE } from '../../webhooks/catalogue.js';
import { checkDestinationUrl } from '../../outbound/guard.js';
import { crawlSite, REQUEST_TIMEOUT_MS, type CrawledUrl } from './crawler.js';
import { crawlUrlView, crawlView, type CrawlPagesView, type CrawlView } from './views.js';

/** URL rows written per transaction. */
const WRITE_CHUNK = 500;

/**
 * The state of a listed URL against what the site's URL table holds: new when
 * unknown or gone before; changed when its lastmod differs (absent on both
 * sides counts as equal) or both crawls hashed the page and the hashes differ;
 * else unchanged. A URL this crawl already wrote (a crawl resumed after a
 * crash) keeps the state it got.
 */
export function urlState(prev: Pick<CrawlUrlRow, 'state' | 'lastmod' | 'content_hash' | 'last_crawl_id'> | undefined, next: { lastmod: string | null; content_hash: string | null }, crawlId: string): Exclude<UrlState, 'gone'> {
  if (!prev || (prev.state === 'gone' && prev.last_crawl_id !== crawlId)) return 'new';
  if (prev.last_crawl_id === crawlId) return prev.state === 'gone' ? 'new' : prev.state;
  if ((prev.lastmod ?? null) !== (next.lastmod ?? null)) return 'changed';
  if (prev.content_hash !== null && next.content_hash !== null && prev.content_hash !== next.content_hash) return 'changed';
  return 'unchanged';
}

/** The origin a site is crawled at: the site URL's, else the sitemap URL's, else https://<site domain>. */
export function crawlOrigin(siteUrl: string | null, sitemapUrl: string | null, domain: string | null): string | null {
  if (siteUrl !== null) return new URL(siteUrl).origin;
  if (sitemapUrl !== null) return new URL(sitemapUrl).origin;
  if (domain === null || domain.trim() === '') return null;
  const d = domain.trim();
  try {
    return new URL(/^https?:\/\//i.test(d) ? d : `https://${d}`).origin;
  } catch {
    return null;
  }
}

export interface StartCrawl {
  siteId: string;
  siteUrl: string | null;
  sitemapUrl: string | null;
  maxUrls: number;
  fetchPages: boolean;
  timeoutMs: number;
  allowPrivate: boolean;
  actor: string;
}

/**
 * Validates a crawl request and queues it: the sitemap URL (or the site's
 * domain) must pass the destination guard now, so a private address is
 * refused at once with destination_refused. Every fetch of the crawl is
 * checked again when it happens. A site has one crawl queued or running at a time.
 */
export async function queueCrawl(store: Store, req: StartCrawl): Promise<CrawlRow> {
  for (const [field, value] of [['site_url', req.siteUrl], ['sitemap_url', req.sitemapUrl]] as const) {
    if (value === null) continue;
    let u: URL;
    try {
      u = new URL(value);
    } catch {
      throw new AppError('validation_failed', `${field}: not an absolute URL`, { field });
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new AppError('validation_failed', `${field}: http or https only`, { field });
  }
  const site = await store.sites.get(req.siteId);
  const origin = crawlOrigin(req.siteUrl, req.sitemapUrl, site?.domain ?? null);
  if (origin === null) {
    throw new AppError('validation_failed', 'the site has no domain: pass site_url or sitemap_url, or set the site domain', { field: 'site_url' });
  }
  const targets: [string, string][] = [[req.siteUrl !== null ? 'site_url' : req.sitemapUrl !== null ? 'sitemap_url' : 'site.domain', `${origin}/robots.txt`]];
  if (req.sitemapUrl !== null) targets.push(['sitemap_url', req.sitemapUrl]);
  for (const [field, url] of targets) {
    const check = await checkDestinationUrl(url, { allowPrivate: req.allowPrivate });
    if (!check.ok) throw new AppError('destination_refused', `crawl refused: ${check.reason}`, { field, reason: check.reason });
  }
  return store.write(async (tx) => {
    // One crawl per site at a time: two would race to mark each other's URLs gone.
    const busy = await tx.crawl.active(req.siteId);
    if (busy) throw new AppError('conflict', `crawl ${busy.id} of this site is ${busy.state}; wait for it to finish`, { crawl_id: busy.id, state: busy.state });
    return tx.crawl.insert({
      siteId: req.siteId,
      requestedSitemapUrl: req.sitemapUrl,
      origin,
      maxUrls: req.maxUrls,
      fetchPages: req.fetchPages,
      timeoutMs: req.timeoutMs,
      allowPrivate: req.allowPrivate,
      requestedBy: req.actor,
      now: Date.now(),
    });
  });
}

async function writeUrls(store: Store, crawl: CrawlRow, urls: readonly CrawledUrl[]): Promise<void> {
  for (let i = 0; i < urls.length; i += WRITE_CHUNK) {
    const chunk = urls.slice(i, i + WRITE_CHUNK);
    await store.write(async (tx) => {
      const now = Date.now();
      const prev = await tx.crawl.urls(crawl.site_id, chunk.map((u) => u.url));
      for (const u of chunk) {
        const old = prev.get(u.url);
        // A page that was not fetched this time keeps the hash it had, so a later fetch compares against it.
        const hash = u.content_hash ?? old?.content_hash ?? null;
        const state = urlState(old, { lastmod: u.lastmod, content_hash: u.content_hash }, crawl.id);
        // Looked up every time: a page someone deleted since is made again while the sitemap lists it.
        const pageId = await tx.crawl.ensurePage(crawl.site_id, u.pattern, now);
        await tx.crawl.upsertUrl({
          site_id: crawl.site_id,
          url: u.url,
          page_id: pageId,
          state,
          lastmod: u.lastmod,
          content_hash: hash,
          fetch_outcome: u.fetch,
          http_status: u.http_status,
          fetch_error: u.fetch_error,
          first_crawl_id: old?.first_crawl_id ?? crawl.id,
          last_crawl_id: crawl.id,
          first_seen_at: old?.first_seen_at ?? now,
          last_seen_at: now,
        });
      }
    });
  }
}

/**
 * Runs a claimed crawl: crawls the site, records each listed URL (its page,
 * state and fetch outcome) in chunks, then in one transaction marks the URLs
 * no longer listed as gone (only when the crawl read every sitemap and stayed
 * under its cap), stores the counts, marks the crawl finished and emits
 * crawl.completed. Throws on failure (the runner records it).
 */
export async function runCrawlJob(store: Store, crawl: CrawlRow, deps: { dispatcher: Dispatcher; allowPrivate: boolean; signal: AbortSignal }): Promise<void> {
  const timeout = AbortSignal.timeout(crawl.timeout_ms);
  const signal = AbortSignal.any([deps.signal, timeout]);
  let outcome;
  try {
    outcome = await crawlSite(
      { origin: crawl.origin, requestedSitemapUrl: crawl.requested_sitemap_url, maxUrls: crawl.max_urls, fetchPages: crawl.fetch_pages === 1 },
      { dispatcher: deps.dispatcher, allowPrivate: deps.allowPrivate && crawl.allow_private === 1, signal, timeoutMs: REQUEST_TIMEOUT_MS },
    );
  } catch (err) {
    if (timeout.aborted && !deps.signal.aborted) throw new Error(`the crawl did not finish within ${crawl.timeout_ms / 1000} s`);
    throw err;
  }
  if (deps.signal.aborted) return;
  const o = outcome;
  await store.write((tx) =>
    tx.crawl.progress(crawl.id, { sitemapUrl: o.sitemapUrl, sitemapsFetched: o.sitemapsFetched, truncated: o.truncated, complete: o.complete, urlsSkipped: o.skipped, warnings: o.warnings }),
  );
  await writeUrls(store, crawl, o.urls);
  await store.write(async (tx) => {
    const cur = await tx.crawl.get(crawl.id);
    if (cur?.state !== 'running') return;
    const now = Date.now();
    if (o.complete) await tx.crawl.markGone(crawl.site_id, crawl.id, now);
    const c = await tx.crawl.counts(crawl.site_id, crawl.id);
    await tx.crawl.finish(crawl.id, c, now);
    const payload = CATALOGUE['crawl.completed'].schema.parse({
      event: 'crawl.completed',
      site_id: crawl.site_id,
      crawl_id: crawl.id,
      sitemap_url: o.sitemapUrl,
      urls_found: c.urls_found,
      urls_crawled: c.urls_crawled,
      urls_failed: c.urls_failed,
      urls_new: c.urls_new,
      urls_changed: c.urls_changed,
      urls_removed: c.urls_removed,
      timestamp: new Date(now).toISOString(),
    });
    await tx.activity.enqueue(crawl.site_id, 'crawl.completed', payload, now);
  });
}

/** Queues a crawl (see queueCrawl) and shows it; the caller wakes the content-job runner. */
export async function startCrawl(store: Store, req: StartCrawl): Promise<CrawlView> {
  return crawlView(await queueCrawl(store, req));
}

/** Crawl `id` of the site, or its newest crawl; not_found when there is none. */
async function crawlOf(store: Store, siteId: string, id: string | undefined): Promise<CrawlRow> {
  const c = id !== undefined ? await store.crawl.ofSite(siteId, id) : await store.crawl.latest(siteId);
  if (!c) throw new AppError('not_found', id !== undefined ? `no crawl ${id}` : 'the site has not been crawled', { field: 'crawl_id' });
  return c;
}

/** State and counts of crawl `id` (default: the newest). */
export async function crawlStatus(store: Store, siteId: string, id: string | undefined): Promise<CrawlView> {
  return crawlView(await crawlOf(store, siteId, id));
}

/** The URLs of crawl `id` (default: the newest) by URL, after `after`, `limit` at a time. */
export async function crawlPages(
  store: Store,
  siteId: string,
  q: { crawlId?: string | undefined; state?: UrlState | undefined; after: string; limit: number },
): Promise<CrawlPagesView> {
  const c = await crawlOf(store, siteId, q.crawlId);
  const rows = await store.crawl.list(siteId, c.id, { state: q.state, after: q.after, limit: q.limit });
  return { crawl_id: c.id, pages: rows.map(crawlUrlView), next_after: rows.length === q.limit ? rows.at(-1)!.url : null };
}

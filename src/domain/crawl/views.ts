import { z } from 'zod';
import type { CrawlRow, CrawlUrlRow } from '../../store/crawl.js';
import { iso } from '../time.js';

export const URL_STATES = ['new', 'changed', 'unchanged', 'gone'] as const;

/** A crawl as tools show it. */
export const crawlViewSchema = z.object({
  crawl_id: z.string().describe('The crawl (crawl_...).'),
  state: z.enum(['queued', 'running', 'finished', 'failed']).describe('Crawl state.'),
  error: z.string().nullable().describe('Why it failed; null otherwise.'),
  origin: z.string().describe('The crawled origin (scheme, host, port).'),
  requested_sitemap_url: z.string().nullable().describe('The sitemap asked for; null: from robots.txt or /sitemap.xml.'),
  sitemap_url: z.string().nullable().describe('The sitemap the crawl started from.'),
  max_urls: z.number().int().describe('URL cap of the crawl.'),
  fetch_pages: z.boolean().describe('Whether each listed page was fetched.'),
  timeout_seconds: z.number().describe('Time limit of the whole crawl.'),
  sitemaps_fetched: z.number().int().describe('Sitemap files read (indexes included).'),
  truncated: z.boolean().describe('The URL cap was reached: URLs past it were not taken.'),
  complete: z.boolean().describe('Every sitemap was read under the cap; only a complete crawl marks unlisted URLs gone.'),
  warnings: z.array(z.string()).describe('Child sitemaps that could not be read, and similar.'),
  counts: z
    .object({
      found: z.number().int().describe('URLs listed (of the crawled origin).'),
      crawled: z.number().int().describe('Pages fetched with a 2xx.'),
      failed: z.number().int().describe('Pages that could not be fetched or answered non-2xx.'),
      disallowed: z.number().int().describe('Pages robots.txt disallows for svc-crawler (not fetched).'),
      skipped: z.number().int().describe('Listed URLs of another origin, or not URLs (ignored).'),
      new: z.number().int().describe('URLs not listed by the previous crawl.'),
      changed: z.number().int().describe('URLs whose lastmod or content hash changed.'),
      unchanged: z.number().int().describe('URLs as before.'),
      removed: z.number().int().describe('URLs of earlier crawls no longer listed (marked gone; their pages are kept).'),
    })
    .describe('URL counts (final once finished).'),
  requested_by: z.string().describe('Who started it (token:<id>).'),
  attempts: z.number().int().describe('Times a runner took the crawl.'),
  created_at: z.string().describe('ISO 8601.'),
  started_at: z.string().nullable().describe('ISO 8601.'),
  finished_at: z.string().nullable().describe('ISO 8601.'),
});
export type CrawlView = z.input<typeof crawlViewSchema>;

export function crawlView(c: CrawlRow): CrawlView {
  return {
    crawl_id: c.id,
    state: c.state,
    error: c.error,
    origin: c.origin,
    requested_sitemap_url: c.requested_sitemap_url,
    sitemap_url: c.sitemap_url,
    max_urls: c.max_urls,
    fetch_pages: c.fetch_pages === 1,
    timeout_seconds: c.timeout_ms / 1000,
    sitemaps_fetched: c.sitemaps_fetched,
    truncated: c.truncated === 1,
    complete: c.complete === 1,
    warnings: JSON.parse(c.warnings) as string[],
    counts: {
      found: c.urls_found,
      crawled: c.urls_crawled,
      failed: c.urls_failed,
      disallowed: c.urls_disallowed,
      skipped: c.urls_skipped,
      new: c.urls_new,
      changed: c.urls_changed,
      unchanged: c.urls_unchanged,
      removed: c.urls_removed,
    },
    requested_by: c.requested_by,
    attempts: c.attempts,
    created_at: iso(c.created_at)!,
    started_at: iso(c.started_at),
    finished_at: iso(c.finished_at),
  };
}

/** A URL a crawl listed or marked gone. */
export const crawlUrlViewSchema = z.object({
  url: z.string().describe('The listed URL.'),
  page_id: z.string().describe('Its exact-match page.'),
  state: z.enum(URL_STATES).describe('Against the previous crawl.'),
  lastmod: z.string().nullable().describe('lastmod the sitemap gave.'),
  fetch: z.enum(['ok', 'failed', 'disallowed', 'skipped']).describe('Outcome of fetching the page (skipped: fetch_pages was off).'),
  http_status: z.number().int().nullable().describe('HTTP status of the page.'),
  fetch_error: z.string().nullable().describe('Why fetching failed.'),
  content_hash: z.string().nullable().describe('sha256 of the first MB of the page.'),
  first_seen_at: z.string().describe('ISO 8601: first listed.'),
  gone_at: z.string().nullable().describe('ISO 8601: when it stopped being listed.'),
});
export type CrawlUrlView = z.input<typeof crawlUrlViewSchema>;

export function crawlUrlView(u: CrawlUrlRow): CrawlUrlView {
  return {
    url: u.url,
    page_id: u.page_id,
    state: u.state,
    lastmod: u.lastmod,
    fetch: u.fetch_outcome,
    http_status: u.http_status,
    fetch_error: u.fetch_error,
    content_hash: u.content_hash,
    first_seen_at: iso(u.first_seen_at)!,
    gone_at: iso(u.gone_at),
  };
}

/** A page of the URLs of a crawl. */
export const crawlPagesViewSchema = z.object({
  crawl_id: z.string().describe('The crawl listed.'),
  pages: z.array(crawlUrlViewSchema).describe('By URL.'),
  next_after: z.string().nullable().describe('Pass as `after` for the next page; null at the end.'),
});
export type CrawlPagesView = z.input<typeof crawlPagesViewSchema>;

import { z } from 'zod';
import { AppError } from '../../errors/app-error.js';
import type { CrawlRow, CrawlUrlRow } from '../../store/crawl.js';
import { queueCrawl } from '../../domain/crawl/service.js';
import { DEFAULT_MAX_URLS, MAX_URLS_LIMIT } from '../../domain/crawl/collect.js';
import { wakeContentJobs } from '../../workers/content-jobs.js';
import { defineTool, type ToolContext } from '../tool.js';
import { iso, limitInput } from './shared.js';

const area = 'crawl';

const crawlSchema = z.object({
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

function crawlView(c: CrawlRow): z.input<typeof crawlSchema> {
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

const crawlId = z.string().min(1).max(128).describe('The crawl (crawl_...); default: the newest crawl of the site.');

async function crawlOf(ctx: ToolContext, id: string | undefined): Promise<CrawlRow> {
  const c = id !== undefined ? await ctx.store.crawl.ofSite(ctx.grant.siteId, id) : await ctx.store.crawl.latest(ctx.grant.siteId);
  if (!c) throw new AppError('not_found', id !== undefined ? `no crawl ${id}` : 'the site has not been crawled', { field: 'crawl_id' });
  return c;
}

export const crawlStart = defineTool({
  name: 'crawl_start',
  title: 'Crawl the site map',
  description:
    "Starts a sitemap crawl in the background: robots.txt of the origin (its Sitemap lines; its Disallow rules for svc-crawler), then the sitemap (the given URL, else those robots.txt lists, else <site>/sitemap.xml; the site is site_url, else https://<site domain>), following sitemap indexes and gzip. Listed URLs become exact pages (source crawl) and are marked new, changed or unchanged; URLs no longer listed are marked gone (pages are never deleted). Every request goes through the destination guard (private addresses are refused). Poll crawl_status; a finished crawl emits crawl.completed. Scope: write.",
  area,
  scope: 'write',
  flags: { changesData: true, openWorld: true },
  input: z.object({
    site_url: z.string().min(1).max(2048).optional().describe('http(s) base URL of the site to crawl (its robots.txt, its /sitemap.xml, and only its URLs); default: https://<site domain>, or the sitemap URL\'s origin.'),
    sitemap_url: z.string().min(1).max(2048).optional().describe('http(s) URL of a sitemap or sitemap index; default: from robots.txt, else https://<site domain>/sitemap.xml.'),
    max_urls: z.number().int().min(1).max(MAX_URLS_LIMIT).default(DEFAULT_MAX_URLS).describe(`URL cap, 1 to ${MAX_URLS_LIMIT} (default ${DEFAULT_MAX_URLS}).`),
    fetch_pages: z.boolean().default(true).describe('Fetch each listed page (GET of its first MB, robots.txt permitting) to count crawled/failed and detect content changes.'),
    timeout_seconds: z.number().int().min(5).max(1800).default(300).describe('Time limit of the whole crawl, 5 to 1800 s (default 300).'),
  }),
  output: crawlSchema,
  handler: async (ctx, input) => {
    const crawl = await queueCrawl(ctx.store, {
      siteId: ctx.grant.siteId,
      siteUrl: input.site_url ?? null,
      sitemapUrl: input.sitemap_url ?? null,
      maxUrls: input.max_urls,
      fetchPages: input.fetch_pages,
      timeoutMs: input.timeout_seconds * 1000,
      allowPrivate: ctx.allowPrivateDestinations,
      actor: `token:${ctx.grant.tokenId}`,
    });
    wakeContentJobs(ctx.store, ctx.allowPrivateDestinations);
    return crawlView(crawl);
  },
});

export const crawlStatus = defineTool({
  name: 'crawl_status',
  title: 'Crawl status',
  description: 'State and URL counts of a crawl (or the newest one): queued, running, finished or failed with its error. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ crawl_id: crawlId.optional() }),
  output: crawlSchema,
  handler: async (ctx, input) => crawlView(await crawlOf(ctx, input.crawl_id)),
});

const urlSchema = z.object({
  url: z.string().describe('The listed URL.'),
  page_id: z.string().describe('Its exact-match page.'),
  state: z.enum(['new', 'changed', 'unchanged', 'gone']).describe('Against the previous crawl.'),
  lastmod: z.string().nullable().describe('lastmod the sitemap gave.'),
  fetch: z.enum(['ok', 'failed', 'disallowed', 'skipped']).describe('Outcome of fetching the page (skipped: fetch_pages was off).'),
  http_status: z.number().int().nullable().describe('HTTP status of the page.'),
  fetch_error: z.string().nullable().describe('Why fetching failed.'),
  content_hash: z.string().nullable().describe('sha256 of the first MB of the page.'),
  first_seen_at: z.string().describe('ISO 8601: first listed.'),
  gone_at: z.string().nullable().describe('ISO 8601: when it stopped being listed.'),
});

function urlView(u: CrawlUrlRow): z.input<typeof urlSchema> {
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

export const crawlPages = defineTool({
  name: 'crawl_pages',
  title: 'Pages a crawl found',
  description:
    'The URLs a crawl (default: the newest) listed or marked gone, with their page, state (new, changed, unchanged, gone) and fetch outcome, by URL; page on with `after`. A URL belongs to the newest crawl that listed it. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({
    crawl_id: crawlId.optional(),
    state: z.enum(['new', 'changed', 'unchanged', 'gone']).optional().describe('Only URLs in this state.'),
    after: z.string().max(4096).default('').describe('Return URLs after this one (the last URL of the previous page).'),
    limit: limitInput(1000, 100),
  }),
  output: z.object({
    crawl_id: z.string().describe('The crawl listed.'),
    pages: z.array(urlSchema).describe('By URL.'),
    next_after: z.string().nullable().describe('Pass as `after` for the next page; null at the end.'),
  }),
  handler: async (ctx, input) => {
    const c = await crawlOf(ctx, input.crawl_id);
    const rows = await ctx.store.crawl.list(ctx.grant.siteId, c.id, { state: input.state, after: input.after, limit: input.limit });
    return { crawl_id: c.id, pages: rows.map(urlView), next_after: rows.length === input.limit ? rows.at(-1)!.url : null };
  },
});

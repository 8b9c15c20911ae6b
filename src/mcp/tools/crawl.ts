import { z } from 'zod';
import { DEFAULT_MAX_URLS, MAX_URLS_LIMIT } from '../../domain/crawl/collect.js';
import { crawlPages as listCrawlPages, crawlStatus as readCrawlStatus, startCrawl } from '../../domain/crawl/service.js';
import { crawlPagesViewSchema, crawlViewSchema, URL_STATES } from '../../domain/crawl/views.js';
import { wakeContentJobs } from '../../workers/content-jobs.js';
import { defineTool } from '../tool.js';
import { limitInput } from './shared.js';

const area = 'crawl';

const crawlId = z.string().min(1).max(128).describe('The crawl (crawl_...); default: the newest crawl of the site.');

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
  output: crawlViewSchema,
  handler: async (ctx, input) => {
    const crawl = await startCrawl(ctx.store, {
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
    return crawl;
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
  output: crawlViewSchema,
  handler: (ctx, input) => readCrawlStatus(ctx.store, ctx.grant.siteId, input.crawl_id),
});

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
    state: z.enum(URL_STATES).optional().describe('Only URLs in this state.'),
    after: z.string().max(4096).default('').describe('Return URLs after this one (the last URL of the previous page).'),
    limit: limitInput(1000, 100),
  }),
  output: crawlPagesViewSchema,
  handler: (ctx, input) => listCrawlPages(ctx.store, ctx.grant.siteId, { crawlId: input.crawl_id, state: input.state, after: input.after, limit: input.limit }),
});

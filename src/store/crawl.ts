import type { Sql } from './sql.js';
import { JobRows } from './job-rows.js';
import { newId } from './ids.js';
import type { JobState } from './generation.js';

export type UrlState = 'new' | 'changed' | 'unchanged' | 'gone';
export type FetchOutcome = 'ok' | 'failed' | 'disallowed' | 'skipped';

export interface CrawlRow {
  id: string;
  site_id: string;
  requested_sitemap_url: string | null;
  origin: string;
  sitemap_url: string | null;
  max_urls: number;
  fetch_pages: number;
  timeout_ms: number;
  allow_private: number;
  state: JobState;
  error: string | null;
  truncated: number;
  /** 1 when every sitemap was read and the cap was not reached (only then are unlisted URLs marked gone). */
  complete: number;
  /** JSON array of warnings (sitemaps that could not be read, ...). */
  warnings: string;
  sitemaps_fetched: number;
  urls_found: number;
  urls_crawled: number;
  urls_failed: number;
  urls_disallowed: number;
  urls_skipped: number;
  urls_new: number;
  urls_changed: number;
  urls_unchanged: number;
  urls_removed: number;
  attempts: number;
  lease_until: number;
  requested_by: string;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
}

export interface CrawlUrlRow {
  site_id: string;
  url: string;
  page_id: string;
  state: UrlState;
  lastmod: string | null;
  content_hash: string | null;
  fetch_outcome: FetchOutcome;
  http_status: number | null;
  fetch_error: string | null;
  first_crawl_id: string;
  last_crawl_id: string;
  first_seen_at: number;
  last_seen_at: number;
  gone_at: number | null;
}

export type CrawlCounts = Pick<
  CrawlRow,
  'urls_found' | 'urls_crawled' | 'urls_failed' | 'urls_disallowed' | 'urls_new' | 'urls_changed' | 'urls_unchanged' | 'urls_removed'
>;

const IN_CHUNK = 200;

/** Sitemap crawls, the URL state they keep per site, and the crawl's writes to pages. Writes run inside a write operation. */
export class CrawlRepo {
  /** The job rows' lease protocol (claim, renew, release, fail). */
  readonly jobs: JobRows<CrawlRow>;

  constructor(private readonly x: Sql) {
    this.jobs = new JobRows<CrawlRow>(x, 'crawls');
  }

  async insert(c: {
    siteId: string;
    requestedSitemapUrl: string | null;
    origin: string;
    maxUrls: number;
    fetchPages: boolean;
    timeoutMs: number;
    allowPrivate: boolean;
    requestedBy: string;
    now: number;
  }): Promise<CrawlRow> {
    const id = newId('crawl');
    await this.x.run(
      `INSERT INTO crawls (id, site_id, requested_sitemap_url, origin, max_urls, fetch_pages, timeout_ms, allow_private, state, requested_by, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?)`,
      [id, c.siteId, c.requestedSitemapUrl, c.origin, c.maxUrls, c.fetchPages ? 1 : 0, c.timeoutMs, c.allowPrivate ? 1 : 0, c.requestedBy, c.now],
    );
    return (await this.get(id))!;
  }

  get(id: string): Promise<CrawlRow | undefined> {
    return this.x.get<CrawlRow>('SELECT * FROM crawls WHERE id = ?', [id]);
  }

  ofSite(siteId: string, id: string): Promise<CrawlRow | undefined> {
    return this.x.get<CrawlRow>('SELECT * FROM crawls WHERE id = ? AND site_id = ?', [id, siteId]);
  }

  latest(siteId: string): Promise<CrawlRow | undefined> {
    return this.x.get<CrawlRow>('SELECT * FROM crawls WHERE site_id = ? ORDER BY created_at DESC, id DESC LIMIT 1', [siteId]);
  }

  /** A crawl of the site that is queued or running, if any. */
  active(siteId: string): Promise<CrawlRow | undefined> {
    return this.x.get<CrawlRow>("SELECT * FROM crawls WHERE site_id = ? AND state IN ('queued','running') ORDER BY created_at LIMIT 1", [siteId]);
  }

  async progress(id: string, p: { sitemapUrl: string; sitemapsFetched: number; truncated: boolean; complete: boolean; urlsSkipped: number; warnings: readonly string[] }): Promise<void> {
    await this.x.run('UPDATE crawls SET sitemap_url = ?, sitemaps_fetched = ?, truncated = ?, complete = ?, urls_skipped = ?, warnings = ? WHERE id = ?', [
      p.sitemapUrl,
      p.sitemapsFetched,
      p.truncated ? 1 : 0,
      p.complete ? 1 : 0,
      p.urlsSkipped,
      JSON.stringify(p.warnings),
      id,
    ]);
  }

  async finish(id: string, c: CrawlCounts, now: number): Promise<void> {
    await this.x.run(
      `UPDATE crawls SET state = 'finished', error = NULL, urls_found = ?, urls_crawled = ?, urls_failed = ?, urls_disallowed = ?,
         urls_new = ?, urls_changed = ?, urls_unchanged = ?, urls_removed = ?, finished_at = ?, lease_until = 0 WHERE id = ?`,
      [c.urls_found, c.urls_crawled, c.urls_failed, c.urls_disallowed, c.urls_new, c.urls_changed, c.urls_unchanged, c.urls_removed, now, id],
    );
  }

  /** The stored state of these URLs of a site. */
  async urls(siteId: string, urls: readonly string[]): Promise<Map<string, CrawlUrlRow>> {
    const out = new Map<string, CrawlUrlRow>();
    for (let i = 0; i < urls.length; i += IN_CHUNK) {
      const chunk = urls.slice(i, i + IN_CHUNK);
      const rows = await this.x.all<CrawlUrlRow>(`SELECT * FROM crawl_urls WHERE site_id = ? AND url IN (${chunk.map(() => '?').join(', ')})`, [siteId, ...chunk]);
      for (const r of rows) out.set(r.url, r);
    }
    return out;
  }

  /** The exact-match page of a path (created with source 'crawl' when there is none; an existing page is reused as it is). */
  async ensurePage(siteId: string, pattern: string, now: number): Promise<string> {
    await this.x.run(
      `INSERT INTO pages (id, site_id, name, match_type, pattern, source, created_at, updated_at) VALUES (?, ?, ?, 'exact', ?, 'crawl', ?, ?)
       ON CONFLICT (site_id, match_type, pattern) DO NOTHING`,
      [newId('page'), siteId, pattern.slice(0, 200), pattern, now, now],
    );
    const row = await this.x.get<{ id: string }>("SELECT id FROM pages WHERE site_id = ? AND match_type = 'exact' AND pattern = ?", [siteId, pattern]);
    return row!.id;
  }

  async upsertUrl(r: Omit<CrawlUrlRow, 'gone_at'>): Promise<void> {
    await this.x.run(
      `INSERT INTO crawl_urls (site_id, url, page_id, state, lastmod, content_hash, fetch_outcome, http_status, fetch_error, first_crawl_id, last_crawl_id, first_seen_at, last_seen_at, gone_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)
       ON CONFLICT (site_id, url) DO UPDATE SET page_id = excluded.page_id, state = excluded.state, lastmod = excluded.lastmod,
         content_hash = excluded.content_hash, fetch_outcome = excluded.fetch_outcome, http_status = excluded.http_status, fetch_error = excluded.fetch_error,
         last_crawl_id = excluded.last_crawl_id, last_seen_at = excluded.last_seen_at, gone_at = NULL`,
      [r.site_id, r.url, r.page_id, r.state, r.lastmod, r.content_hash, r.fetch_outcome, r.http_status, r.fetch_error, r.first_crawl_id, r.last_crawl_id, r.first_seen_at, r.last_seen_at],
    );
  }

  /** Marks every listed URL of the site that this crawl did not list as gone (owned by this crawl from now on). */
  async markGone(siteId: string, crawlId: string, now: number): Promise<number> {
    const r = await this.x.run(
      "UPDATE crawl_urls SET state = 'gone', gone_at = ?, last_crawl_id = ? WHERE site_id = ? AND last_crawl_id <> ? AND state <> 'gone'",
      [now, crawlId, siteId, crawlId],
    );
    return r.changes;
  }

  /** Counts of the URLs this crawl owns, by state and fetch outcome. */
  async counts(siteId: string, crawlId: string): Promise<CrawlCounts> {
    const rows = await this.x.all<{ state: UrlState; fetch_outcome: FetchOutcome; n: number }>(
      'SELECT state, fetch_outcome, count(*) AS n FROM crawl_urls WHERE site_id = ? AND last_crawl_id = ? GROUP BY state, fetch_outcome',
      [siteId, crawlId],
    );
    const c: CrawlCounts = { urls_found: 0, urls_crawled: 0, urls_failed: 0, urls_disallowed: 0, urls_new: 0, urls_changed: 0, urls_unchanged: 0, urls_removed: 0 };
    for (const r of rows) {
      const n = Number(r.n);
      if (r.state === 'gone') {
        c.urls_removed += n;
        continue;
      }
      c.urls_found += n;
      if (r.state === 'new') c.urls_new += n;
      else if (r.state === 'changed') c.urls_changed += n;
      else c.urls_unchanged += n;
      if (r.fetch_outcome === 'ok') c.urls_crawled += n;
      else if (r.fetch_outcome === 'failed') c.urls_failed += n;
      else if (r.fetch_outcome === 'disallowed') c.urls_disallowed += n;
    }
    return c;
  }

  /** URLs a crawl owns (listed or marked gone by it), by URL after `after`. */
  list(siteId: string, crawlId: string, f: { state?: UrlState | undefined; after: string; limit: number }): Promise<CrawlUrlRow[]> {
    return f.state === undefined
      ? this.x.all<CrawlUrlRow>('SELECT * FROM crawl_urls WHERE site_id = ? AND last_crawl_id = ? AND url > ? ORDER BY url LIMIT ?', [siteId, crawlId, f.after, f.limit])
      : this.x.all<CrawlUrlRow>('SELECT * FROM crawl_urls WHERE site_id = ? AND last_crawl_id = ? AND state = ? AND url > ? ORDER BY url LIMIT ?', [
          siteId,
          crawlId,
          f.state,
          f.after,
          f.limit,
        ]);
  }
}

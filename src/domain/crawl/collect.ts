/** Default and largest number of URLs one crawl takes from its sitemaps. */
export const DEFAULT_MAX_URLS = 5_000;
export const MAX_URLS_LIMIT = 50_000;

export interface ListedUrl {
  url: string;
  /** The page pattern of the URL: its path and query. */
  pattern: string;
  lastmod: string | null;
}

/**
 * Collects the URLs of a crawl: only URLs of the crawled origin (sitemaps.org:
 * a sitemap lists URLs of its own host), without fragments, each once (the
 * first listing wins), up to `max`; past the cap the crawl is truncated.
 */
export class UrlCollector {
  private readonly seen = new Map<string, ListedUrl>();
  truncated = false;
  skipped = 0;

  constructor(
    private readonly origin: string,
    readonly max: number,
  ) {}

  /** Adds one listed URL; returns false once the cap is reached (the URL was not taken). */
  add(raw: string, lastmod: string | null): boolean {
    let u: URL;
    try {
      u = new URL(raw);
    } catch {
      this.skipped++;
      return true;
    }
    if (u.origin !== this.origin) {
      this.skipped++;
      return true;
    }
    u.hash = '';
    const url = u.toString();
    if (this.seen.has(url)) return true;
    if (this.seen.size >= this.max) {
      this.truncated = true;
      return false;
    }
    this.seen.set(url, { url, pattern: `${u.pathname}${u.search}`, lastmod });
    return true;
  }

  get urls(): ListedUrl[] {
    return [...this.seen.values()];
  }
}

import { createRequire } from 'node:module';
import { CRAWLER_TOKEN } from './fetch.js';

// robots-parser is CommonJS (module.exports = the function) while its types declare a default export.
type RobotsParser = (
  url: string,
  robotstxt: string,
) => { isAllowed(url: string, ua?: string): boolean | undefined; getSitemaps(): string[]; getCrawlDelay(ua?: string): number | undefined };
const robotsParser = createRequire(import.meta.url)('robots-parser') as RobotsParser;

/** What a site's robots.txt tells svc's crawler. */
export interface RobotsRules {
  /** Whether svc-crawler may fetch `url` (rules for svc-crawler, else for `*`). */
  allows(url: string): boolean;
  /** Sitemap lines, as absolute URLs, in file order, without duplicates. */
  sitemaps: string[];
  /** How robots.txt was obtained: its HTTP status, or null when it could not be fetched. */
  status: number | null;
  /** Crawl-delay for svc-crawler in ms (capped at MAX_CRAWL_DELAY_MS), or null. */
  crawlDelayMs: number | null;
}

/** Longest Crawl-delay honoured; a longer one is treated as this. */
export const MAX_CRAWL_DELAY_MS = 10_000;

/** Largest robots.txt read (Google reads 500 KiB). */
export const ROBOTS_MAX_BYTES = 500 * 1024;

/**
 * Rules of a robots.txt answer. A 2xx body is parsed with robots-parser; a 4xx
 * (no robots.txt) or an unreachable file allows everything; a 5xx disallows
 * everything (the site says it is unavailable), as Google treats them. URLs of
 * another origin than the robots.txt are allowed (their own robots.txt rules them).
 */
export function robotsRules(robotsUrl: string, status: number | null, body: string): RobotsRules {
  const origin = new URL(robotsUrl).origin;
  if (status !== null && status >= 500) {
    return { allows: (url) => new URL(url).origin !== origin, sitemaps: [], status, crawlDelayMs: null };
  }
  const ok = status !== null && status >= 200 && status < 300;
  const robots = robotsParser(robotsUrl, ok ? body : '');
  const sitemaps: string[] = [];
  for (const s of robots.getSitemaps()) {
    try {
      const u = new URL(s, robotsUrl).toString();
      if (!sitemaps.includes(u)) sitemaps.push(u);
    } catch {
      // not a URL: ignored
    }
  }
  return {
    allows: (url) => new URL(url).origin !== origin || robots.isAllowed(url, CRAWLER_TOKEN) !== false,
    sitemaps,
    status,
    crawlDelayMs: delayMs(robots.getCrawlDelay(CRAWLER_TOKEN)),
  };
}

function delayMs(seconds: number | undefined): number | null {
  if (seconds === undefined || !Number.isFinite(seconds) || seconds <= 0) return null;
  return Math.min(Math.round(seconds * 1000), MAX_CRAWL_DELAY_MS);
}

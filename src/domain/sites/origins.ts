import type { SiteRow } from '../../store/sites.js';

/**
 * Which browser origins may call the public paths of a site (ingestion,
 * /api/decide, the tag's settings): its `domain` and every subdomain of it
 * (http or https), the extra origins an admin allowed, and the origin svc is
 * itself served under (a page of svc, or svc reverse-proxied under the site).
 * Requests without Origin (servers) are not browser requests and pass.
 */

/** The JSON array of strings a site column holds (allowed_origins, url_params); [] when unreadable. */
export function jsonList(text: string): string[] {
  try {
    const v: unknown = JSON.parse(text);
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
  } catch {
    return [];
  }
}

/** An origin in its canonical form (scheme://host[:port], lower case, default port dropped), or null. */
export function canonicalOrigin(text: string): string | null {
  try {
    const u = new URL(text);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
    if (u.pathname !== '/' || u.search || u.hash || u.username || u.password) return null;
    return u.origin;
  } catch {
    return null;
  }
}

/**
 * Answers kept per site row, keyed by the request's origin and host: a browser sends the same few on
 * every request, and an answer parses a URL and the allowed list (about 2 µs). A site read again
 * (its cache's TTL, a change) is a new row object, so its answers start over; at most
 * MAX_ANSWERS_PER_SITE are kept per row (a client inventing origins empties them, no more).
 */
export class PerSiteAnswers<T> {
  private readonly bySite = new WeakMap<SiteRow, Map<string, T>>();

  get(site: SiteRow, origin: string, host: string | undefined, compute: () => T): T {
    // A header value holds no newline, so the key tells every (origin, host) pair apart.
    const key = host === undefined ? origin : `${origin}\n${host}`;
    let answers = this.bySite.get(site);
    const hit = answers?.get(key);
    if (hit !== undefined || answers?.has(key)) return hit as T;
    const value = compute();
    if (answers === undefined) this.bySite.set(site, (answers = new Map()));
    else if (answers.size >= MAX_ANSWERS_PER_SITE) answers.clear();
    answers.set(key, value);
    return value;
  }
}

export const MAX_ANSWERS_PER_SITE = 256;

const allowedAnswers = new PerSiteAnswers<boolean>();

/** Whether a browser `origin` may call the site's public paths (`host`: the request's own host). */
export function originAllowed(site: SiteRow, origin: string, host: string | undefined): boolean {
  return allowedAnswers.get(site, origin, host, () => decideOriginAllowed(site, origin, host));
}

function decideOriginAllowed(site: SiteRow, origin: string, host: string | undefined): boolean {
  let u: URL;
  try {
    u = new URL(origin);
  } catch {
    return false;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return false;
  if (host !== undefined && u.host === host) return true;
  const domain = site.domain?.toLowerCase();
  if (domain && (u.hostname === domain || u.hostname.endsWith(`.${domain}`))) return true;
  return jsonList(site.allowed_origins).includes(u.origin);
}


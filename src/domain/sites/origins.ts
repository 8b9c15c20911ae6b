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

/** Whether a browser `origin` may call the site's public paths (`host`: the request's own host). */
export function originAllowed(site: SiteRow, origin: string, host: string | undefined): boolean {
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


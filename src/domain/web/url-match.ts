import type { MatchType } from '../../store/pages.js';

/**
 * Page URL patterns. A visitor URL is reduced to its path and query string
 * (a full URL, or a path starting with "/"; the scheme, host and fragment are
 * ignored, an empty path is "/"). Then:
 *
 * - exact: a pattern with a query ("/pricing?plan=pro") equals path + query
 *   exactly; a pattern without one ("/pricing") equals the path, whatever the
 *   query (tracking parameters do not change the page).
 * - prefix: the path starts with the pattern ("/blog/" matches "/blog/a/b").
 * - glob: the whole path matches, where `*` is any run of characters except
 *   "/", `**` is any run including "/", and everything else is literal
 *   ("/products/*" matches "/products/shoe" but not "/products/a/b").
 *
 * Matching is case-sensitive, as URL paths are. Patterns start with "/".
 */

export interface UrlParts {
  path: string;
  query: string;
}

/** The path and query ("?a=1", or "") of a URL or path; undefined when it is neither. */
export function urlParts(url: string): UrlParts | undefined {
  let u: URL;
  try {
    u = new URL(url, 'http://svc.invalid');
  } catch {
    return undefined;
  }
  if (!url.startsWith('/') && !/^https?:\/\//i.test(url)) return undefined;
  return { path: u.pathname || '/', query: u.search };
}

const globCache = new Map<string, RegExp>();

function globRegExp(pattern: string): RegExp {
  let re = globCache.get(pattern);
  if (re) return re;
  let src = '^';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*') {
      if (pattern[i + 1] === '*') {
        src += '.*';
        i++;
      } else src += '[^/]*';
    } else src += c.replace(/[.+?^${}()|[\]\\]/g, '\\$&');
  }
  re = new RegExp(`${src}$`, 's');
  if (globCache.size > 5000) globCache.clear();
  globCache.set(pattern, re);
  return re;
}

/** Whether a page pattern matches the URL parts. */
export function matchesPage(matchType: MatchType, pattern: string, url: UrlParts): boolean {
  switch (matchType) {
    case 'exact':
      return pattern.includes('?') ? pattern === url.path + url.query : pattern === url.path;
    case 'prefix':
      return url.path.startsWith(pattern);
    case 'glob':
      return globRegExp(pattern).test(url.path);
  }
}

/** Why a pattern is not acceptable, or null when it is. */
export function patternProblem(matchType: MatchType, pattern: string): string | null {
  if (!pattern.startsWith('/')) return 'a pattern starts with "/" (a path, without scheme and host)';
  if (pattern.length > 2048) return 'a pattern is at most 2048 characters';
  if (/[\s#]/.test(pattern)) return 'a pattern has no spaces and no fragment (#)';
  if (matchType !== 'exact' && pattern.includes('?')) return `a ${matchType} pattern matches the path only: no query (?)`;
  if (matchType !== 'glob' && pattern.includes('*')) return `* is a wildcard only in glob patterns`;
  if (matchType === 'glob' && /\*\*\*/.test(pattern)) return 'a glob has * or **, never three in a row';
  return null;
}

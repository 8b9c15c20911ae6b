/**
 * Page patterns over pageview URLs (the match types of the pages table):
 * - exact: the URL's path equals the pattern; when the pattern has a `?`, path + query equals it.
 * - prefix: the URL's path starts with the pattern.
 * - glob: the URL's path matches the pattern, `*` standing for any run of characters but `/`,
 *   `**` for any run including `/`.
 * A URL is absolute (`https://shop.example/cart?x=1`) or a path (`/cart?x=1`); the fragment is ignored.
 */
export type MatchType = 'exact' | 'prefix' | 'glob';

/** Path and path + query of a pageview URL; null when it is neither an absolute URL nor a path. */
export function urlParts(url: string): { path: string; pathQuery: string } | null {
  let u: URL;
  try {
    u = url.startsWith('/') ? new URL(url, 'http://x.invalid') : new URL(url);
  } catch {
    return null;
  }
  return { path: u.pathname, pathQuery: u.pathname + u.search };
}

const globCache = new Map<string, RegExp>();

function globRegex(pattern: string): RegExp {
  let re = globCache.get(pattern);
  if (re === undefined) {
    let src = '';
    for (let i = 0; i < pattern.length; i++) {
      const c = pattern[i]!;
      if (c === '*') {
        if (pattern[i + 1] === '*') {
          src += '.*';
          i++;
        } else src += '[^/]*';
      } else src += c.replace(/[.+?^${}()|[\]\\]/g, '\\$&');
    }
    re = new RegExp(`^${src}$`, 's');
    if (globCache.size > 1000) globCache.clear();
    globCache.set(pattern, re);
  }
  return re;
}

/** Whether a pageview URL matches a page pattern. */
export function matchesPage(matchType: MatchType, pattern: string, url: string): boolean {
  const parts = urlParts(url);
  if (parts === null) return false;
  switch (matchType) {
    case 'exact':
      return pattern.includes('?') ? parts.pathQuery === pattern : parts.path === pattern;
    case 'prefix':
      return parts.path.startsWith(pattern);
    case 'glob':
      return globRegex(pattern).test(parts.path);
  }
}

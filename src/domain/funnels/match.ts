import { matchesPage as matchesParts, urlParts } from '../web/url-match.js';
import type { MatchType } from '../../store/pages.js';

export type { MatchType };

/**
 * Whether a pageview URL (absolute, or a path) matches a funnel step's page
 * pattern: the page patterns of the web-experience areas (src/domain/web/url-match.ts),
 * so a funnel step and a page with the same pattern match the same URLs.
 */
export function matchesPage(matchType: MatchType, pattern: string, url: string): boolean {
  const parts = urlParts(url);
  return parts !== undefined && matchesParts(matchType, pattern, parts);
}

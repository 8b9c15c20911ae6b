import type { Repos } from '../store/repos.js';
import { safeTimeZone } from './triggers/zoned.js';

/** ISO 8601 of a millisecond timestamp (null stays null): how views show a stored time. */
export const iso = (t: number | null): string | null => (t === null ? null : new Date(t).toISOString());

/** The site's IANA time zone (UTC when unset or unknown): local times of views are in it. */
export async function siteTimeZone(repos: Repos, siteId: string): Promise<string> {
  return safeTimeZone((await repos.sites.get(siteId))?.timezone);
}

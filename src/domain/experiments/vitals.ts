/** Core Web Vitals of web_vitals events, counted per arm of the running tests a visitor was exposed to. */
import type { Repos } from '../../store/repos.js';
import { invalid } from './definition.js';
import { VITAL_LIMITS, VITALS, type Vital } from './rules.js';
import { matchesPage, type UrlParts } from '../web/url-match.js';

export type WebVitals = Partial<Record<Vital, number>>;

/**
 * The properties of a `web_vitals` event (top-level like every event property): lcp and inp in
 * milliseconds, cls unitless, each a finite number from 0 to its limit, at least one of them.
 * Returns null for any other event type; throws validation_failed on a bad web_vitals event.
 */
export function webVitalsOf(event: { type: string } & Record<string, unknown>): WebVitals | null {
  if (event.type !== 'web_vitals') return null;
  const out: WebVitals = {};
  for (const m of VITALS) {
    const v = event[m];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > VITAL_LIMITS[m]) {
      throw invalid(m, `a number from 0 to ${VITAL_LIMITS[m]}${m === 'cls' ? '' : ' (milliseconds)'}`);
    }
    out[m] = v;
  }
  if (Object.keys(out).length === 0) throw invalid('lcp', 'a web_vitals event carries at least one of lcp, inp, cls');
  return out;
}

/** The path and query of an event's URL (a full URL or a path), as page patterns read them; null when it is not one. */
const partsOf = (url: string): UrlParts | null => {
  try {
    const u = new URL(url, 'http://x');
    return { path: u.pathname, query: u.search };
  } catch {
    return null;
  }
};

/**
 * Counts a visitor's page-view vitals for its first arm in each running test (first_arms). When the event names
 * a URL, only tests whose page matches it count it (vitals of other pages say nothing about the test; a visitor
 * with a first arm was shown the test on that page, and every URL of the page shows it its arm). A test without a
 * page (none in practice: a test runs on a zone or a page) counts only events without a URL. The ingestion service
 * calls this in the event's write.
 */
export async function recordWebVitals(tx: Repos, siteId: string, visitorId: string | null, url: unknown, vitals: WebVitals, now: number): Promise<number> {
  if (visitorId === null) return 0;
  const rows = await tx.experiments.runningFirstArms(siteId, visitorId);
  if (rows.length === 0) return 0;
  const parts = typeof url === 'string' ? partsOf(url) : null;
  let n = 0;
  for (const r of rows) {
    if (parts !== null && (r.match_type === null || r.pattern === null || !matchesPage(r.match_type, r.pattern, parts))) continue;
    await tx.experiments.insertVitals({ siteId, experimentId: r.experiment_id, armId: r.arm_id, lcp: vitals.lcp ?? null, inp: vitals.inp ?? null, cls: vitals.cls ?? null, now });
    n++;
  }
  return n;
}

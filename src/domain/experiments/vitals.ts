/** Core Web Vitals of web_vitals events, counted per arm of the running tests a visitor was exposed to. */
import type { Repos } from '../../store/repos.js';
import { invalid } from './definition.js';
import { VITAL_LIMITS, VITALS, type Vital } from './rules.js';

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

const pathOf = (url: string): string | null => {
  try {
    return new URL(url, 'http://x').pathname;
  } catch {
    return null;
  }
};

/**
 * Counts a visitor's page-view vitals for the arm of its first exposure to each running test. When
 * the event names a URL, only tests the visitor was exposed to on that path count it (vitals of
 * other pages say nothing about the test). The ingestion service calls this in the event's write.
 */
export async function recordWebVitals(tx: Repos, siteId: string, visitorId: string | null, url: unknown, vitals: WebVitals, now: number): Promise<number> {
  if (visitorId === null) return 0;
  const rows = await tx.experiments.runningExposures(siteId, visitorId);
  if (rows.length === 0) return 0;
  const path = typeof url === 'string' ? pathOf(url) : null;
  const armOf = new Map<string, string>();
  const onPath = new Set<string>();
  for (const r of rows) {
    if (!armOf.has(r.experiment_id)) armOf.set(r.experiment_id, r.arm_id);
    if (path === null || pathOf(r.url) === path) onPath.add(r.experiment_id);
  }
  let n = 0;
  for (const [experimentId, armId] of armOf) {
    if (!onPath.has(experimentId)) continue;
    await tx.experiments.insertVitals({ siteId, experimentId, armId, lcp: vitals.lcp ?? null, inp: vitals.inp ?? null, cls: vitals.cls ?? null, now });
    n++;
  }
  return n;
}

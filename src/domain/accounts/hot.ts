import type { z } from 'zod';
import type { riseViewSchema } from './views.js';
import type { CompanySignals } from './signals.js';

/** The signals a rise is measured on, with the weight of one unit of rise in the heat score. */
export const HEAT_WEIGHTS = {
  sessions: 1,
  known_visitors: 3,
  page_views: 0.25,
  high_intent_page_views: 2,
  conversions: 10,
  score_avg: 0.1,
} as const;

export type HeatSignal = keyof typeof HEAT_WEIGHTS;

/** A signal that rose (the view schema is the one truth). */
export type Rise = z.infer<typeof riseViewSchema>;

export interface HotAccount {
  domain: string;
  heat: number;
  rises: Rise[];
  current: CompanySignals;
  previous: CompanySignals;
}

/**
 * Heat of a company: the weighted sum of every signal's rise from the
 * previous window to the current one (falls count zero, so a company is hot
 * because something rose, never because another thing fell less). `rises`
 * says why: each signal that rose, largest contribution first.
 */
export function heatOf(current: CompanySignals, previous: CompanySignals): { heat: number; rises: Rise[] } {
  const rises: (Rise & { weight: number })[] = [];
  for (const signal of Object.keys(HEAT_WEIGHTS) as HeatSignal[]) {
    const cur = current[signal];
    const prev = previous[signal];
    if (signal === 'score_avg' && (cur === null || prev === null)) continue;
    const c = cur ?? 0;
    const p = prev ?? 0;
    if (c > p) rises.push({ signal, previous: p, current: c, change: Math.round((c - p) * 100) / 100, weight: HEAT_WEIGHTS[signal] * (c - p) });
  }
  rises.sort((a, b) => b.weight - a.weight || a.signal.localeCompare(b.signal));
  const heat = Math.round(rises.reduce((s, r) => s + r.weight, 0) * 100) / 100;
  return { heat, rises: rises.map(({ weight: _w, ...r }) => r) };
}

/** Companies ranked by heat (highest first, then by domain); companies with no rise or too few sessions now are left out. */
export function rankHot(
  current: ReadonlyMap<string, CompanySignals>,
  previous: ReadonlyMap<string, CompanySignals>,
  empty: () => CompanySignals,
  opts: { minSessions: number; limit: number },
): HotAccount[] {
  const out: HotAccount[] = [];
  for (const [domain, cur] of current) {
    if (cur.sessions < opts.minSessions) continue;
    const prev = previous.get(domain) ?? empty();
    const { heat, rises } = heatOf(cur, prev);
    if (heat <= 0) continue;
    out.push({ domain, heat, rises, current: cur, previous: prev });
  }
  out.sort((a, b) => b.heat - a.heat || (a.domain < b.domain ? -1 : 1));
  return out.slice(0, opts.limit);
}

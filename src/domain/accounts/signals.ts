import type { IpRangeIndex } from './ip-ranges.js';
import type { CompanySignals } from './views.js';

/** How a session was tied to a company: a known contact's corporate email domain, or the operator's IP ranges. */
export type Via = 'contact' | 'ip_range';

/** The facts of a session the aggregation reads (never shown). */
export interface SessionFact {
  session_id: string;
  profile_id: string;
  ip: string | null;
}

/** Company-level visit signals of one window (the view schema is the one truth). */
export type { CompanySignals };

export interface WindowRows {
  sessions: readonly SessionFact[];
  pageviews: readonly (SessionFact & { url: unknown })[];
  scores: readonly (SessionFact & { score: number })[];
  conversions: readonly (SessionFact & { revenue: number | null; currency: string })[];
}

export interface AggregateOptions {
  /** A session is high-intent when its highest score in the window is at least this. */
  threshold: number;
  /** How many pages to list per company. */
  topPages: number;
  currency: string;
}

/** Ties sessions to companies: by the corporate email domain of the session's profile, else by the IP ranges. */
export class Attributor {
  constructor(
    private readonly domainOfProfile: ReadonlyMap<string, string>,
    private readonly ranges: IpRangeIndex | null,
  ) {}

  attribute(s: { profile_id: string; ip: string | null }): { domain: string; via: Via } | null {
    const d = this.domainOfProfile.get(s.profile_id);
    if (d !== undefined) return { domain: d, via: 'contact' };
    const r = this.ranges?.lookup(s.ip);
    return r ? { domain: r.domain, via: 'ip_range' } : null;
  }
}

const REDACTED = ':redacted';

/**
 * The path of a page URL for the pages-most-viewed list: no query, no
 * fragment (they can carry personal data), and any path segment holding an
 * `@` or a long digit run (an email, a phone number) redacted.
 */
export function pagePath(url: unknown): string | null {
  if (typeof url !== 'string' || url === '') return null;
  let path: string;
  try {
    path = new URL(url, 'http://x.invalid').pathname;
  } catch {
    return null;
  }
  const clean = path
    .split('/')
    .map((seg) => (seg.includes('@') || seg.includes('%40') || /\d{7,}/.test(seg) ? REDACTED : seg))
    .join('/');
  return clean.length > 300 ? `${clean.slice(0, 300)}…` : clean;
}

interface Acc {
  sessions: Set<string>;
  ipSessions: Set<string>;
  known: Set<string>;
  pageViews: number;
  highIntentViews: number;
  highIntentSessions: Set<string>;
  pages: Map<string, number>;
  conversions: number;
  revenue: number;
  scoreSum: number;
  scoreN: number;
  scoreMax: number | null;
}

function acc(): Acc {
  return {
    sessions: new Set(),
    ipSessions: new Set(),
    known: new Set(),
    pageViews: 0,
    highIntentViews: 0,
    highIntentSessions: new Set(),
    pages: new Map(),
    conversions: 0,
    revenue: 0,
    scoreSum: 0,
    scoreN: 0,
    scoreMax: null,
  };
}

/**
 * Aggregates one window's rows into per-company signals. A session belongs to
 * the company of its attribution; sessions of no company are ignored. Only
 * counts leave this function: profile ids, emails and IPs stay inside.
 */
export function aggregateSignals(rows: WindowRows, by: Attributor, opts: AggregateOptions): Map<string, CompanySignals> {
  const per = new Map<string, Acc>();
  const get = (domain: string) => {
    let a = per.get(domain);
    if (!a) per.set(domain, (a = acc()));
    return a;
  };
  const seen = (s: SessionFact) => {
    const at = by.attribute(s);
    if (!at) return null;
    const a = get(at.domain);
    a.sessions.add(s.session_id);
    if (at.via === 'contact') a.known.add(s.profile_id);
    else a.ipSessions.add(s.session_id);
    return a;
  };
  const sessionMax = new Map<string, number>();
  for (const s of rows.sessions) seen(s);
  for (const r of rows.scores) {
    if (!Number.isFinite(r.score)) continue;
    const a = seen(r);
    if (!a) continue;
    a.scoreSum += r.score;
    a.scoreN++;
    a.scoreMax = a.scoreMax === null ? r.score : Math.max(a.scoreMax, r.score);
    sessionMax.set(r.session_id, Math.max(sessionMax.get(r.session_id) ?? -Infinity, r.score));
  }
  for (const v of rows.pageviews) {
    const a = seen(v);
    if (!a) continue;
    a.pageViews++;
    if ((sessionMax.get(v.session_id) ?? -Infinity) >= opts.threshold) {
      a.highIntentViews++;
      a.highIntentSessions.add(v.session_id);
    }
    const path = pagePath(v.url);
    if (path !== null) a.pages.set(path, (a.pages.get(path) ?? 0) + 1);
  }
  for (const c of rows.conversions) {
    const a = seen(c);
    if (!a) continue;
    a.conversions++;
    if (c.currency === opts.currency && c.revenue !== null && Number.isFinite(c.revenue)) a.revenue += c.revenue;
  }
  const out = new Map<string, CompanySignals>();
  for (const [domain, a] of per) {
    out.set(domain, {
      sessions: a.sessions.size,
      ip_attributed_sessions: a.ipSessions.size,
      known_visitors: a.known.size,
      page_views: a.pageViews,
      high_intent_page_views: a.highIntentViews,
      high_intent_sessions: a.highIntentSessions.size,
      top_pages: [...a.pages]
        .sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1))
        .slice(0, opts.topPages)
        .map(([path, views]) => ({ path, views })),
      conversions: a.conversions,
      revenue: Math.round(a.revenue * 100) / 100,
      score_avg: a.scoreN === 0 ? null : Math.round((a.scoreSum / a.scoreN) * 100) / 100,
      score_max: a.scoreMax,
    });
  }
  return out;
}

/** The signals of a company with no activity in a window. */
export function emptySignals(): CompanySignals {
  return {
    sessions: 0,
    ip_attributed_sessions: 0,
    known_visitors: 0,
    page_views: 0,
    high_intent_page_views: 0,
    high_intent_sessions: 0,
    top_pages: [],
    conversions: 0,
    revenue: 0,
    score_avg: null,
    score_max: null,
  };
}

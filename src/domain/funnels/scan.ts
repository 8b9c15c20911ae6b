import type { Repos } from '../../store/repos.js';
import type { ScanEvent } from '../../store/stall.js';
import type { FunnelStep } from './schema.js';
import { matchesPage } from './match.js';

/**
 * How far one session got through a funnel: the number of leading steps it did
 * in order. Events are in time order; a session passes step k when, after the
 * event that passed step k−1, it has an event matching step k (the earliest such
 * event is taken, which never loses a later match). Everything happens within
 * the one session; events of other sessions of the same visitor do not count.
 */
export function progress(steps: readonly FunnelStep[], events: readonly { type: string; url: unknown }[]): number {
  let k = 0;
  for (const e of events) {
    if (k === steps.length) break;
    if (stepMatches(steps[k]!, e)) k++;
  }
  return k;
}

export function stepMatches(step: FunnelStep, e: { type: string; url: unknown }): boolean {
  if (step.kind === 'event') return e.type === step.event_type;
  return e.type === 'pageview' && typeof e.url === 'string' && matchesPage(step.match, step.pattern, e.url);
}

/** The event types a scan must read for these funnels. */
export function typesOf(funnels: readonly { steps: readonly FunnelStep[] }[]): string[] {
  const out = new Set<string>();
  for (const f of funnels) for (const s of f.steps) out.add(s.kind === 'page' ? 'pageview' : s.event_type);
  return [...out].sort();
}

/** Counters of one funnel and cohort: per time bucket and step, sessions that passed it; revenue of those sessions. */
export interface FunnelCounts {
  /** reached[b * steps + k]: sessions of bucket b that passed steps 1..k+1. */
  reached: Float64Array;
  /** revenue[k]: revenue of the sessions (all buckets) that passed steps 1..k+1. */
  revenue: Float64Array;
}

export interface ScanFunnel {
  id: string;
  steps: readonly FunnelStep[];
}

export interface ScanOptions {
  siteId: string;
  funnels: readonly ScanFunnel[];
  /** Ascending bucket boundaries (UTC ms): bucket b holds sessions that started in [bounds[b], bounds[b+1]). */
  bounds: readonly number[];
  /** Cohorts of a session; the scan counts it under each key returned. */
  cohortsOf: (s: { maxScore: number | null; segments: readonly string[] }) => readonly string[];
  /** Whether memberships are needed by cohortsOf (skips a query when not). */
  needsSegments: boolean;
  /** Sessions per page (memory is bounded by one page of sessions and their events). */
  pageSize?: number;
}

export interface ScanResult {
  /** funnel id → cohort key → counts. */
  counts: Map<string, Map<string, FunnelCounts>>;
  sessions: number;
  events: number;
  pages: number;
}

/**
 * Streams a site's sessions that started within the bounds, one keyset page at
 * a time (sessions by id), reads each page's events, scores, revenue and
 * segment memberships with a few indexed queries, and folds every session into
 * per-funnel, per-cohort counters. Never holds more than one page in memory.
 */
export async function scanFunnels(store: Repos, opts: ScanOptions): Promise<ScanResult> {
  const pageSize = opts.pageSize ?? 2000;
  const from = opts.bounds[0]!;
  const to = opts.bounds[opts.bounds.length - 1]!;
  const nBuckets = opts.bounds.length - 1;
  const types = typesOf(opts.funnels);
  const counts = new Map<string, Map<string, FunnelCounts>>();
  for (const f of opts.funnels) counts.set(f.id, new Map());
  const result: ScanResult = { counts, sessions: 0, events: 0, pages: 0 };
  if (types.length === 0 || nBuckets < 1) return result;

  const bucketOf = (t: number): number => {
    for (let b = nBuckets - 1; b >= 0; b--) if (t >= opts.bounds[b]!) return b;
    return 0;
  };
  const countsFor = (funnelId: string, cohort: string, steps: number): FunnelCounts => {
    const byCohort = counts.get(funnelId)!;
    let c = byCohort.get(cohort);
    if (c === undefined) {
      c = { reached: new Float64Array(nBuckets * steps), revenue: new Float64Array(steps) };
      byCohort.set(cohort, c);
    }
    return c;
  };

  let after = '';
  for (;;) {
    const last = await store.stall.pageEnd(opts.siteId, after, pageSize);
    if (last === null) break;
    result.pages++;
    const [sessions, events, members] = await Promise.all([
      store.stall.pageSessions(opts.siteId, after, last, from, to),
      store.stall.pageEvents(opts.siteId, after, last, from, to, types),
      opts.needsSegments ? store.stall.pageMemberships(opts.siteId, after, last, from, to) : Promise.resolve([]),
    ]);
    after = last;
    if (sessions.length === 0) continue;
    const bySession = new Map<string, ScanEvent[]>();
    for (const e of events) {
      let list = bySession.get(e.session_id);
      if (list === undefined) bySession.set(e.session_id, (list = []));
      list.push(e);
    }
    const segmentsBySession = new Map<string, string[]>();
    for (const m of members) {
      let list = segmentsBySession.get(m.session_id);
      if (list === undefined) segmentsBySession.set(m.session_id, (list = []));
      list.push(m.segment_id);
    }
    result.events += events.length;
    for (const s of sessions) {
      result.sessions++;
      const cohorts = opts.cohortsOf({ maxScore: s.max_score === null ? null : Number(s.max_score), segments: segmentsBySession.get(s.id) ?? [] });
      if (cohorts.length === 0) continue;
      const evs = bySession.get(s.id) ?? [];
      const b = bucketOf(Number(s.first_seen));
      const revenue = s.revenue === null ? 0 : Number(s.revenue);
      for (const f of opts.funnels) {
        const k = progress(f.steps, evs);
        if (k === 0) continue;
        const n = f.steps.length;
        for (const cohort of cohorts) {
          const c = countsFor(f.id, cohort, n);
          for (let i = 0; i < k; i++) {
            c.reached[b * n + i] = c.reached[b * n + i]! + 1;
            c.revenue[i] = c.revenue[i]! + revenue;
          }
        }
      }
    }
  }
  return result;
}

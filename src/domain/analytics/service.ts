import { AppError } from '../../errors/app-error.js';
import type { Store } from '../../store/store.js';
import { iso } from '../time.js';
import { liftOf, type GroupStats, type VisitorOutcome } from './lift.js';
import type { BySegmentView, LiftView, SummaryView } from './views.js';

const DAY = 86_400_000;

/** The window of the last `days` days, ending now. */
function windowOf(days: number): { since: number; until: number } {
  const until = Date.now();
  return { since: until - days * DAY, until };
}

/**
 * Sessions, visitors, conversions and revenue of the last `days` days:
 * revenue in the site's currency, conversions in other currencies apart.
 */
export async function summary(store: Store, siteId: string, days: number): Promise<SummaryView> {
  const { since, until } = windowOf(days);
  const { revenueByCurrency, ...w } = await store.insights.window(siteId, since, until);
  const currency = (await store.sites.get(siteId))?.currency ?? 'USD';
  const revenue = revenueByCurrency.find((r) => r.currency === currency)?.revenue ?? 0;
  return {
    since: iso(since)!,
    until: iso(until)!,
    ...w,
    conversion_rate: w.sessions === 0 ? 0 : Math.min(1, w.converting_sessions / w.sessions),
    revenue,
    revenue_per_visitor: w.visitors === 0 ? 0 : Math.round((revenue / w.visitors) * 100) / 100,
    currency,
    revenue_other_currencies: revenueByCurrency.filter((r) => r.currency !== currency),
  };
}

/**
 * Personalized visitors against the site's holdout over the last `days`
 * days (optionally only current members of a segment): each group's
 * conversion rate and revenue per visitor, and the relative lifts.
 * Visitors seen in both groups are left out.
 */
export async function lift(store: Store, siteId: string, days: number, segmentId: string | undefined): Promise<LiftView> {
  if (segmentId !== undefined && !(await store.segments.get(siteId, segmentId))) {
    throw new AppError('not_found', `no segment ${segmentId} in this site`, { field: 'segment_id' });
  }
  const site = (await store.sites.get(siteId))!;
  const { since, until } = windowOf(days);
  const exposed = await store.lift.exposedVisitors(siteId, since, until, segmentId);
  const conv = new Map((await store.lift.visitorConversions(siteId, since, until, site.currency)).map((r) => [r.visitor_id, r]));
  const outcomes: VisitorOutcome[] = [];
  let excluded = 0;
  for (const v of exposed) {
    if (v.holdout_max !== v.holdout_min) {
      excluded++;
      continue;
    }
    const c = conv.get(v.visitor_id);
    outcomes.push({ holdout: v.holdout_max === 1, converted: (c?.conversions ?? 0) > 0, revenue: c?.revenue ?? 0 });
  }
  const r = liftOf(outcomes);
  const group = (g: GroupStats) => ({
    visitors: g.visitors,
    converting_visitors: g.converting_visitors,
    conversion_rate: g.conversion_rate,
    revenue: Math.round(g.revenue * 100) / 100,
    revenue_per_visitor: g.revenue_per_visitor,
  });
  return {
    since: iso(since)!,
    until: iso(until)!,
    currency: site.currency,
    holdout_share: site.holdout_share,
    segment_id: segmentId ?? null,
    personalized: group(r.personalized),
    holdout: group(r.holdout),
    excluded_visitors: excluded,
    conversion_rate_lift: r.conversion_rate_lift,
    revenue_per_visitor_lift: r.revenue_per_visitor_lift,
  };
}

/** Sessions, conversions and revenue per segment (by the current members) over the last `days` days, with the site as the baseline. */
export async function bySegment(store: Store, siteId: string, days: number): Promise<BySegmentView> {
  const site = (await store.sites.get(siteId))!;
  const { since, until } = windowOf(days);
  const segs = await store.segments.list(siteId);
  const sess = new Map((await store.lift.segmentSessions(siteId, since, until)).map((r) => [r.segment_id, r]));
  const conv = new Map((await store.lift.segmentConversions(siteId, since, until, site.currency)).map((r) => [r.segment_id, r]));
  const { revenueByCurrency, ...w } = await store.insights.window(siteId, since, until);
  const siteRevenue = revenueByCurrency.find((r) => r.currency === site.currency)?.revenue ?? 0;
  const rate = (a: number, b: number) => (b === 0 ? 0 : Math.min(1, a / b));
  const money = (v: number) => Math.round(v * 100) / 100;
  return {
    since: iso(since)!,
    until: iso(until)!,
    currency: site.currency,
    site: { sessions: w.sessions, visitors: w.visitors, conversion_rate: rate(w.converting_sessions, w.sessions), revenue_per_visitor: w.visitors === 0 ? 0 : money(siteRevenue / w.visitors) },
    segments: segs.map((s) => {
      const a = sess.get(s.id);
      const c = conv.get(s.id);
      const sessions = a?.sessions ?? 0;
      const visitors = a?.visitors ?? 0;
      const revenue = money(c?.revenue ?? 0);
      return {
        segment_id: s.id,
        name: s.name,
        sessions,
        visitors,
        conversions: c?.conversions ?? 0,
        converting_sessions: c?.converting_sessions ?? 0,
        conversion_rate: rate(c?.converting_sessions ?? 0, sessions),
        revenue,
        revenue_per_visitor: visitors === 0 ? 0 : money(revenue / visitors),
      };
    }),
  };
}

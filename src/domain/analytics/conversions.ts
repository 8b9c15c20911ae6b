import type { Store } from '../../store/store.js';
import { iso } from '../time.js';
import type { ConversionView, RevenueByDayView } from './views.js';

const DAY = 86_400_000;

/** Conversions of the site, newest first, with revenue, currency and line items. */
export async function listConversions(
  store: Store,
  siteId: string,
  f: { since?: number | undefined; until?: number | undefined; minRevenue?: number | undefined; limit: number },
): Promise<ConversionView[]> {
  return (await store.insights.conversions({ siteId, ...f })).map((c) => ({
    id: c.id,
    profile_id: c.profile_id,
    session_id: c.session_id,
    revenue: c.revenue,
    currency: c.currency,
    line_items: JSON.parse(c.line_items) as Record<string, unknown>[],
    created_at: iso(c.created_at)!,
  }));
}

/** Conversions and revenue per UTC day and currency over the last `days` days; amounts in different currencies are never added up. */
export async function revenueByDay(store: Store, siteId: string, days: number): Promise<RevenueByDayView> {
  const until = Date.now();
  const since = until - days * DAY;
  const rows = await store.insights.revenueByDay(siteId, since, until);
  return {
    since: iso(since)!,
    until: iso(until)!,
    days: rows,
    total_conversions: rows.reduce((n, d) => n + d.conversions, 0),
    total_revenue: await store.insights.revenueByCurrency(siteId, since, until),
  };
}

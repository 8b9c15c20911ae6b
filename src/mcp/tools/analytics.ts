import { z } from 'zod';
import { AppError } from '../../errors/app-error.js';
import { liftOf, type GroupStats, type VisitorOutcome } from '../../domain/analytics/lift.js';
import { defineTool } from '../tool.js';
import { iso } from './shared.js';

const area = 'analytics';

export const analyticsSummary = defineTool({
  name: 'analytics_summary',
  title: 'Sessions, conversion rate and revenue',
  description:
    "Over the last N days: sessions started, distinct visitors and profiles, conversions, converting sessions, conversion rate (converting sessions / sessions), revenue in the site's currency (and, separately, of conversions recorded in another currency before the site's currency changed), revenue per visitor and leads. Per segment: analytics_by_segment; against the holdout: analytics_lift.",
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ days: z.number().int().min(1).max(366).default(30).describe('Window length in days, ending now (default 30).') }),
  output: z.object({
    since: z.string(),
    until: z.string(),
    sessions: z.number().int(),
    visitors: z.number().int(),
    profiles: z.number().int(),
    conversions: z.number().int(),
    converting_sessions: z.number().int(),
    conversion_rate: z.number().describe('0 to 1; 0 when there were no sessions.'),
    revenue: z.number().describe('Revenue of the conversions recorded in `currency`.'),
    revenue_per_visitor: z.number().describe('revenue / visitors, rounded to cents; 0 without visitors.'),
    currency: z.string().describe("The site's currency (ISO 4217)."),
    revenue_other_currencies: z
      .array(z.object({ currency: z.string(), revenue: z.number() }))
      .describe('Revenue of conversions recorded in other currencies (before the site currency changed); never added to `revenue`.'),
    leads: z.number().int(),
  }),
  handler: async (ctx, input) => {
    const until = Date.now();
    const since = until - input.days * 86_400_000;
    const { revenueByCurrency, ...w } = await ctx.store.insights.window(ctx.grant.siteId, since, until);
    const currency = (await ctx.store.sites.get(ctx.grant.siteId))?.currency ?? 'USD';
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
  },
});

const DAY = 86_400_000;

const relativeLiftView = z.object({
  relative: z.number().nullable().describe('personalized / holdout - 1 (0.12 = +12%); null when undefined (an empty group, or no conversion / revenue in the holdout).'),
  ci_low: z.number().nullable().describe('Lower end of the 95% confidence interval of `relative`.'),
  ci_high: z.number().nullable().describe('Upper end of the 95% confidence interval.'),
  significant: z.boolean().describe('The interval excludes 0.'),
});

const groupView = z.object({
  visitors: z.number().int(),
  converting_visitors: z.number().int(),
  conversion_rate: z.number().nullable().describe('converting visitors / visitors; null without visitors.'),
  revenue: z.number().describe("In the site's currency."),
  revenue_per_visitor: z.number().nullable(),
});

export const analyticsLift = defineTool({
  name: 'analytics_lift',
  title: 'Lift of personalization against the holdout',
  description:
    "Over a window: visitors exposed to personalized decisions against the site's holdout (visitors who always see defaults, share set by sites_settings_update), each group's conversion rate and revenue per visitor, and the relative lift with a 95% confidence interval (delta method on the log of the ratio). A visitor's outcome counts the conversions of their sessions in the window; visitors seen in both groups are left out. Optionally only current members of one segment.",
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({
    days: z.number().int().min(1).max(366).default(30).describe('Window length in days, ending now (default 30).'),
    segment_id: z.string().min(1).max(128).optional().describe('Only visitors whose profile is a member of this segment now.'),
  }),
  output: z.object({
    since: z.string(),
    until: z.string(),
    currency: z.string(),
    holdout_share: z.number().describe("The site's current holdout share."),
    segment_id: z.string().nullable(),
    personalized: groupView,
    holdout: groupView,
    excluded_visitors: z.number().int().describe('Visitors seen both in and out of the holdout (left out).'),
    conversion_rate_lift: relativeLiftView,
    revenue_per_visitor_lift: relativeLiftView,
  }),
  handler: async (ctx, input) => {
    const siteId = ctx.grant.siteId;
    if (input.segment_id !== undefined && !(await ctx.store.segments.get(siteId, input.segment_id))) {
      throw new AppError('not_found', `no segment ${input.segment_id} in this site`, { field: 'segment_id' });
    }
    const site = (await ctx.store.sites.get(siteId))!;
    const until = Date.now();
    const since = until - input.days * DAY;
    const exposed = await ctx.store.lift.exposedVisitors(siteId, since, until, input.segment_id);
    const conv = new Map((await ctx.store.lift.visitorConversions(siteId, since, until, site.currency)).map((r) => [r.visitor_id, r]));
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
      segment_id: input.segment_id ?? null,
      personalized: group(r.personalized),
      holdout: group(r.holdout),
      excluded_visitors: excluded,
      conversion_rate_lift: r.conversion_rate_lift,
      revenue_per_visitor_lift: r.revenue_per_visitor_lift,
    };
  },
});

export const analyticsBySegment = defineTool({
  name: 'analytics_by_segment',
  title: 'Sessions, conversion rate and revenue per segment',
  description:
    "Over a window, per segment (by the current members): sessions started, distinct visitors, conversions, converting sessions, conversion rate (converting sessions / sessions) and revenue per visitor in the site's currency, with the whole site as a baseline row.",
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ days: z.number().int().min(1).max(366).default(30).describe('Window length in days, ending now (default 30).') }),
  output: z.object({
    since: z.string(),
    until: z.string(),
    currency: z.string(),
    site: z.object({ sessions: z.number().int(), visitors: z.number().int(), conversion_rate: z.number(), revenue_per_visitor: z.number() }).describe('Every session of the site: the baseline.'),
    segments: z.array(
      z.object({
        segment_id: z.string(),
        name: z.string(),
        sessions: z.number().int(),
        visitors: z.number().int(),
        conversions: z.number().int(),
        converting_sessions: z.number().int(),
        conversion_rate: z.number().describe('0 to 1; 0 without sessions.'),
        revenue: z.number(),
        revenue_per_visitor: z.number().describe('0 without visitors.'),
      }),
    ),
  }),
  handler: async (ctx, input) => {
    const siteId = ctx.grant.siteId;
    const site = (await ctx.store.sites.get(siteId))!;
    const until = Date.now();
    const since = until - input.days * DAY;
    const segs = await ctx.store.segments.list(siteId);
    const sess = new Map((await ctx.store.lift.segmentSessions(siteId, since, until)).map((r) => [r.segment_id, r]));
    const conv = new Map((await ctx.store.lift.segmentConversions(siteId, since, until, site.currency)).map((r) => [r.segment_id, r]));
    const { revenueByCurrency, ...w } = await ctx.store.insights.window(siteId, since, until);
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
  },
});

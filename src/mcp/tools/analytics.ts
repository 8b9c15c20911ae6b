import { z } from 'zod';
import { bySegment, lift, summary } from '../../domain/analytics/service.js';
import { bySegmentViewSchema, liftViewSchema, summaryViewSchema } from '../../domain/analytics/views.js';
import { defineTool } from '../tool.js';

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
  output: summaryViewSchema,
  handler: (ctx, input) => summary(ctx.store, ctx.grant.siteId, input.days),
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
  output: liftViewSchema,
  handler: (ctx, input) => lift(ctx.store, ctx.grant.siteId, input.days, input.segment_id),
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
  output: bySegmentViewSchema,
  handler: (ctx, input) => bySegment(ctx.store, ctx.grant.siteId, input.days),
});

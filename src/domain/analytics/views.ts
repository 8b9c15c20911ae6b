import { z } from 'zod';

/** Sessions, conversions and revenue of a site over a window. */
export const summaryViewSchema = z.object({
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
});
export type SummaryView = z.input<typeof summaryViewSchema>;

export const relativeLiftViewSchema = z.object({
  relative: z.number().nullable().describe('personalized / holdout - 1 (0.12 = +12%); null when undefined (an empty group, or no conversion / revenue in the holdout).'),
  ci_low: z.number().nullable().describe('Lower end of the 95% confidence interval of `relative`.'),
  ci_high: z.number().nullable().describe('Upper end of the 95% confidence interval.'),
  significant: z.boolean().describe('The interval excludes 0.'),
});

export const groupViewSchema = z.object({
  visitors: z.number().int(),
  converting_visitors: z.number().int(),
  conversion_rate: z.number().nullable().describe('converting visitors / visitors; null without visitors.'),
  revenue: z.number().describe("In the site's currency."),
  revenue_per_visitor: z.number().nullable(),
});

/** Personalized visitors against the holdout over a window. */
export const liftViewSchema = z.object({
  since: z.string(),
  until: z.string(),
  currency: z.string(),
  holdout_share: z.number().describe("The site's current holdout share."),
  segment_id: z.string().nullable(),
  personalized: groupViewSchema,
  holdout: groupViewSchema,
  excluded_visitors: z.number().int().describe('Visitors seen both in and out of the holdout (left out).'),
  conversion_rate_lift: relativeLiftViewSchema,
  revenue_per_visitor_lift: relativeLiftViewSchema,
});
export type LiftView = z.input<typeof liftViewSchema>;

/** Sessions, conversions and revenue per segment over a window, with the site as the baseline. */
export const bySegmentViewSchema = z.object({
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
});
export type BySegmentView = z.input<typeof bySegmentViewSchema>;

/** A conversion with its line items. */
export const conversionViewSchema = z.object({
  id: z.string(),
  profile_id: z.string(),
  session_id: z.string(),
  revenue: z.number().nullable(),
  currency: z.string(),
  line_items: z.array(z.object({ sku: z.string().optional(), qty: z.number().optional(), price: z.number().optional() }).loose()),
  created_at: z.string(),
});
export type ConversionView = z.input<typeof conversionViewSchema>;

/** Conversions and revenue per UTC day and currency over a window, with totals per currency. */
export const revenueByDayViewSchema = z.object({
  since: z.string(),
  until: z.string(),
  days: z.array(z.object({ day: z.string(), currency: z.string(), conversions: z.number().int(), revenue: z.number() })),
  total_conversions: z.number().int(),
  total_revenue: z.array(z.object({ currency: z.string(), revenue: z.number() })).describe('Revenue per currency over the window.'),
});
export type RevenueByDayView = z.input<typeof revenueByDayViewSchema>;

/** A behavioural event (ids and times; never its properties). */
export const eventViewSchema = z.object({ id: z.string().describe('Event id (evt_...), as /api/events answered it.'), type: z.string(), profile_id: z.string(), session_id: z.string(), at: z.string(), received_at: z.string() });
export type EventView = z.input<typeof eventViewSchema>;

/** An event type seen, with its count and latest time. */
export const eventTypeViewSchema = z.object({ type: z.string(), count: z.number().int(), last_at: z.string() });
export type EventTypeView = z.input<typeof eventTypeViewSchema>;

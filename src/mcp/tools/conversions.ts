import { z } from 'zod';
import { defineTool } from '../tool.js';
import { iso, isoInput, limitInput, ms } from './shared.js';

const area = 'conversions';
const DAY = 86_400_000;

export const conversionsList = defineTool({
  name: 'conversions_list',
  title: 'List conversions',
  description: 'Conversions of the site, newest first, with revenue, currency and line items.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({
    since: isoInput.optional(),
    until: isoInput.optional(),
    min_revenue: z.number().min(0).optional().describe('Only conversions with at least this revenue.'),
    limit: limitInput(500, 50),
  }),
  output: z.object({
    conversions: z.array(
      z.object({
        id: z.string(),
        profile_id: z.string(),
        session_id: z.string(),
        revenue: z.number().nullable(),
        currency: z.string(),
        line_items: z.array(z.object({ sku: z.string().optional(), qty: z.number().optional(), price: z.number().optional() }).loose()),
        created_at: z.string(),
      }),
    ),
  }),
  handler: async (ctx, input) => ({
    conversions: (
      await ctx.store.insights.conversions({ siteId: ctx.grant.siteId, since: ms(input.since), until: ms(input.until), minRevenue: input.min_revenue, limit: input.limit })
    ).map((c) => ({
      id: c.id,
      profile_id: c.profile_id,
      session_id: c.session_id,
      revenue: c.revenue,
      currency: c.currency,
      line_items: JSON.parse(c.line_items) as Record<string, unknown>[],
      created_at: iso(c.created_at)!,
    })),
  }),
});

export const revenueByDay = defineTool({
  name: 'conversions_revenue_by_day',
  title: 'Revenue by day',
  description: 'Conversions and revenue per UTC day and currency over the last N days, with totals per currency (amounts in different currencies are never added up).',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ days: z.number().int().min(1).max(366).default(30).describe('Window length in days, ending now (default 30).') }),
  output: z.object({
    since: z.string(),
    until: z.string(),
    days: z.array(z.object({ day: z.string(), currency: z.string(), conversions: z.number().int(), revenue: z.number() })),
    total_conversions: z.number().int(),
    total_revenue: z.array(z.object({ currency: z.string(), revenue: z.number() })).describe('Revenue per currency over the window.'),
  }),
  handler: async (ctx, input) => {
    const until = Date.now();
    const since = until - input.days * DAY;
    const days = await ctx.store.insights.revenueByDay(ctx.grant.siteId, since, until);
    return {
      since: iso(since)!,
      until: iso(until)!,
      days,
      total_conversions: days.reduce((n, d) => n + d.conversions, 0),
      total_revenue: await ctx.store.insights.revenueByCurrency(ctx.grant.siteId, since, until),
    };
  },
});

import { z } from 'zod';
import { listConversions, revenueByDay } from '../../domain/analytics/conversions.js';
import { conversionViewSchema, revenueByDayViewSchema } from '../../domain/analytics/views.js';
import { defineTool } from '../tool.js';
import { isoInput, limitInput, ms } from './shared.js';

const area = 'conversions';

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
  output: z.object({ conversions: z.array(conversionViewSchema) }),
  handler: async (ctx, input) => ({
    conversions: await listConversions(ctx.store, ctx.grant.siteId, { since: ms(input.since), until: ms(input.until), minRevenue: input.min_revenue, limit: input.limit }),
  }),
});

export const conversionsRevenueByDay = defineTool({
  name: 'conversions_revenue_by_day',
  title: 'Revenue by day',
  description: 'Conversions and revenue per UTC day and currency over the last N days, with totals per currency (amounts in different currencies are never added up).',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ days: z.number().int().min(1).max(366).default(30).describe('Window length in days, ending now (default 30).') }),
  output: revenueByDayViewSchema,
  handler: (ctx, input) => revenueByDay(ctx.store, ctx.grant.siteId, input.days),
});

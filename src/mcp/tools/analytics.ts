import { z } from 'zod';
import { defineTool } from '../tool.js';
import { iso } from './shared.js';

const area = 'analytics';

export const analyticsSummary = defineTool({
  name: 'analytics_summary',
  title: 'Sessions, conversion rate and revenue',
  description:
    "Over the last N days: sessions started, distinct visitors and profiles, conversions, converting sessions, conversion rate (converting sessions / sessions), revenue in the site's currency (and, separately, of conversions recorded in another currency before the site's currency changed) and leads.",
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
    return {
      since: iso(since)!,
      until: iso(until)!,
      ...w,
      conversion_rate: w.sessions === 0 ? 0 : Math.min(1, w.converting_sessions / w.sessions),
      revenue: revenueByCurrency.find((r) => r.currency === currency)?.revenue ?? 0,
      currency,
      revenue_other_currencies: revenueByCurrency.filter((r) => r.currency !== currency),
    };
  },
});

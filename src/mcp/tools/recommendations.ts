import { defineTool } from '../tool.js';
import { recommendForSite } from '../../domain/recommend/service.js';
import { recommendQuerySchema, recommendResultSchema } from '../../domain/recommend/schema.js';

const area = 'recommendations';

export const recommendationsCoPurchased = defineTool({
  name: 'recommendations_co_purchased',
  title: 'Frequently bought together',
  description:
    'Items most often bought together with a sku, or with a basket of skus, ranked by shrunk NPMI over per-order co-purchase counts; pairs sharing fewer than min_support orders are left out, and the basket items themselves never appear. An unknown sku gives an empty list.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: recommendQuerySchema,
  output: recommendResultSchema,
  handler: (ctx, input) => recommendForSite(ctx.store, ctx.grant.siteId, input),
});

import { z } from 'zod';
import { DEFAULT_MIN_SUPPORT, SHRINKAGE } from './measure.js';

/** Bounds of a recommend query. */
export const RECOMMEND_LIMITS = { skus: 20, k: 100, defaultK: 10, minSupport: 1_000_000 } as const;

const sku = z.string().min(1).max(256);

/** A recommend query: the single truth for the CLI's flags and the MCP tool's input. */
export const recommendQuerySchema = z.object({
  skus: z
    .array(sku)
    .min(1, 'name at least one sku')
    .max(RECOMMEND_LIMITS.skus, `at most ${RECOMMEND_LIMITS.skus} skus`)
    .describe(`The sku to find companions of, or a basket of up to ${RECOMMEND_LIMITS.skus} skus (companions of the basket as a whole).`),
  k: z
    .number()
    .int()
    .min(1)
    .max(RECOMMEND_LIMITS.k)
    .default(RECOMMEND_LIMITS.defaultK)
    .describe(`How many to return, 1 to ${RECOMMEND_LIMITS.k} (default ${RECOMMEND_LIMITS.defaultK}).`),
  min_support: z
    .number()
    .int()
    .min(1)
    .max(RECOMMEND_LIMITS.minSupport)
    .default(DEFAULT_MIN_SUPPORT)
    .describe(`Orders a pair must share to be considered (default ${DEFAULT_MIN_SUPPORT}); keeps one-off pairs out.`),
});
export type RecommendQuery = z.output<typeof recommendQuerySchema>;

export const recommendationSchema = z.object({
  sku: z.string(),
  score: z.number().describe(`Mean over the basket items of NPMI × n_AB/(n_AB+${SHRINKAGE}); 0 is chance, higher is more associated.`),
  support: z.number().int().describe('n_AB: orders shared with the basket items (summed over them).'),
  orders: z.number().int().describe('n_B: orders containing this sku.'),
  anchor: z.string().describe('The basket item of the strongest pair; lift, confidence and npmi are of that pair.'),
  lift: z.number().describe('N·n_AB/(n_A·n_B).'),
  confidence: z.number().describe('n_AB/n_A: share of the anchor’s orders that also hold this sku.'),
  npmi: z.number().describe('Normalized PMI in [-1, 1].'),
  matched: z.number().int().describe('How many basket items this sku is a companion of.'),
});

export const recommendResultSchema = z.object({
  site_id: z.string(),
  total_orders: z.number().int().describe('N: the site’s orders with at least one sku.'),
  min_support: z.number().int(),
  basket: z.array(z.object({ sku: z.string(), orders: z.number().int().describe('n_A; 0 for a sku never ordered.') })),
  items: z.array(recommendationSchema).describe('Best first; empty when no sku is known or nothing passes the minimum support.'),
});
export type RecommendResult = z.output<typeof recommendResultSchema>;

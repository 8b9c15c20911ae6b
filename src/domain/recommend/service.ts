import type { CopurchaseRepo } from '../../store/copurchase.js';
import { rankCompanions } from './rank.js';
import type { RecommendQuery, RecommendResult } from './schema.js';

/**
 * Co-purchase recommendations of a site from the counts the store keeps per
 * order (see CopurchaseRepo and measure.ts). An unknown sku is not an error:
 * it has no companions, so the list is empty.
 */
export class RecommendService {
  constructor(private readonly counts: Pick<CopurchaseRepo, 'totalOrders' | 'itemOrders' | 'companions'>) {}

  recommend(siteId: string, q: RecommendQuery): RecommendResult {
    const skus = [...new Set(q.skus)];
    const total = this.counts.totalOrders(siteId);
    const anchors = skus.map((sku) => {
      const orders = this.counts.itemOrders(siteId, sku);
      return { sku, orders, companions: orders > 0 ? this.counts.companions(siteId, sku, q.min_support) : [] };
    });
    return {
      site_id: siteId,
      total_orders: total,
      min_support: q.min_support,
      basket: anchors.map((a) => ({ sku: a.sku, orders: a.orders })),
      items: rankCompanions({ total, anchors, k: q.k, minSupport: q.min_support }),
    };
  }
}

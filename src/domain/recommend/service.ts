import { AppError } from '../../errors/app-error.js';
import type { CopurchaseRepo } from '../../store/copurchase.js';
import type { Store } from '../../store/store.js';
import { rankCompanions } from './rank.js';
import type { RecommendQuery, RecommendResult } from './schema.js';

/**
 * Co-purchase recommendations of a site from the counts the store keeps per
 * order (see CopurchaseRepo and measure.ts). An unknown sku is not an error:
 * it has no companions, so the list is empty.
 */
export class RecommendService {
  constructor(private readonly counts: Pick<CopurchaseRepo, 'totalOrders' | 'itemOrders' | 'companions'>) {}

  async recommend(siteId: string, q: RecommendQuery): Promise<RecommendResult> {
    const skus = [...new Set(q.skus)];
    const total = await this.counts.totalOrders(siteId);
    const anchors = [];
    for (const sku of skus) {
      const orders = await this.counts.itemOrders(siteId, sku);
      anchors.push({ sku, orders, companions: orders > 0 ? await this.counts.companions(siteId, sku, q.min_support) : [] });
    }
    return {
      site_id: siteId,
      total_orders: total,
      min_support: q.min_support,
      basket: anchors.map((a) => ({ sku: a.sku, orders: a.orders })),
      items: rankCompanions({ total, anchors, k: q.k, minSupport: q.min_support }),
    };
  }
}

/** Co-purchase recommendations of a site that must exist (not_found otherwise), read from the store's counts: svc recommend and recommendations_co_purchased. */
export async function recommendForSite(store: Store, siteId: string, q: RecommendQuery): Promise<RecommendResult> {
  if (!(await store.sites.get(siteId))) throw new AppError('not_found', `no site ${siteId}`);
  return new RecommendService(store.copurchase).recommend(siteId, q);
}

import type { Sql } from './sql.js';

/**
 * Pairs are counted only for orders of at most this many distinct skus (at most
 * 4,950 pairs, 9,900 rows in both directions). The ingestion schema already caps
 * line_items at 100, so this only guards other callers; a larger order still
 * counts toward the order total and its items' counts.
 */
export const MAX_PAIRED_SKUS = 100;

/** One companion of a sku: the other sku, n_AB (orders with both) and n_B (orders with the other). */
export interface CompanionRow {
  sku: string;
  pair_orders: number;
  orders: number;
}

// Counters as additive upserts (the increment is a parameter, added with excluded.orders): on PostgreSQL a
// group commit's increments of one key are summed into one row of one statement (pg/batch.ts).
const ADD_ORDER =
  'INSERT INTO copurchase_orders (site_id, orders) VALUES (?, ?) ON CONFLICT (site_id) DO UPDATE SET orders = copurchase_orders.orders + excluded.orders';
const ADD_ITEM =
  'INSERT INTO copurchase_items (site_id, sku, orders) VALUES (?, ?, ?) ON CONFLICT (site_id, sku) DO UPDATE SET orders = copurchase_items.orders + excluded.orders RETURNING id';
const ADD_PAIR =
  'INSERT INTO copurchase_pairs (item, other, orders) VALUES (?, ?, ?) ON CONFLICT (item, other) DO UPDATE SET orders = copurchase_pairs.orders + excluded.orders';
const COMPANIONS = `SELECT i.sku AS sku, p.orders AS pair_orders, i.orders AS orders
  FROM copurchase_items a
  JOIN copurchase_pairs p ON p.item = a.id
  JOIN copurchase_items i ON i.id = p.other
  WHERE a.site_id = ? AND a.sku = ? AND p.orders >= ?`;

/**
 * Co-purchase counts per site, kept incrementally by `record` inside the
 * transaction that stores the conversion: N (orders with at least one sku),
 * n_A per sku and n_AB per pair of skus. Pairs are keyed by the skus' integer
 * ids (copurchase_items.id, each of one site) and stored in both directions,
 * so the companions of a sku are one range scan of the primary key.
 */
export class CopurchaseRepo {
  constructor(private readonly x: Sql) {}

  /**
   * Counts one order: its distinct skus (a sku repeated in the basket counts
   * once; quantities do not multiply). An order without skus counts nothing.
   * Call inside the write operation that stores the conversion.
   */
  async record(siteId: string, skus: readonly string[]): Promise<void> {
    const distinct = [...new Set(skus.filter((s) => s.length > 0))];
    if (distinct.length === 0) return;
    await this.x.run(ADD_ORDER, [siteId, 1]);
    const rows = await this.x.getEach<{ id: number }>(
      ADD_ITEM,
      distinct.map((sku) => [siteId, sku, 1]),
    );
    const ids = rows.map((r) => Number(r!.id));
    if (ids.length > MAX_PAIRED_SKUS) return;
    // Key order: the rows of one item are neighbours in the primary key, so its upserts share pages.
    ids.sort((x, y) => x - y);
    const pairs: [number, number, number][] = [];
    for (const a of ids) for (const b of ids) if (a !== b) pairs.push([a, b, 1]);
    await this.x.runEach(ADD_PAIR, pairs);
  }

  /** N: the site's orders with at least one sku. */
  async totalOrders(siteId: string): Promise<number> {
    return (await this.x.get<{ orders: number }>('SELECT orders FROM copurchase_orders WHERE site_id = ?', [siteId]))?.orders ?? 0;
  }

  /** n_A: orders of the site containing the sku (0 when never ordered). */
  async itemOrders(siteId: string, sku: string): Promise<number> {
    return (await this.x.get<{ orders: number }>('SELECT orders FROM copurchase_items WHERE site_id = ? AND sku = ?', [siteId, sku]))?.orders ?? 0;
  }

  /** Every sku bought together with `sku` in at least `minSupport` orders, with n_AB and n_B (unordered). */
  companions(siteId: string, sku: string, minSupport: number): Promise<CompanionRow[]> {
    return this.x.all<CompanionRow>(COMPANIONS, [siteId, sku, minSupport]);
  }
}

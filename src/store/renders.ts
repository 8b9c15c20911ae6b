import type { Sql } from './sql.js';

/** Variant renders the browser tag reports, which the watchdog counts. */
export class RendersRepo {
  constructor(private readonly x: Sql) {}

  async insert(r: { siteId: string; variantId: string; ok: boolean; error: string | null; at: number }): Promise<void> {
    await this.x.run('INSERT INTO variant_renders (site_id, variant_id, ok, error, created_at) VALUES (?, ?, ?, ?, ?)', [
      r.siteId,
      r.variantId,
      r.ok ? 1 : 0,
      r.error,
      r.at,
    ]);
  }

  /** Renders and failures of a variant since `since` (inclusive). */
  async counts(siteId: string, variantId: string, since: number): Promise<{ renders: number; failures: number }> {
    const row = await this.x.get<{ n: number; f: number | null }>(
      'SELECT count(*) AS n, sum(CASE WHEN ok = 0 THEN 1 ELSE 0 END) AS f FROM variant_renders WHERE variant_id = ? AND site_id = ? AND created_at >= ?',
      [variantId, siteId, since],
    );
    return { renders: Number(row?.n ?? 0), failures: Number(row?.f ?? 0) };
  }

  /** The most recent failure messages of a variant since `since`. */
  async recentErrors(siteId: string, variantId: string, since: number, limit: number): Promise<{ error: string | null; created_at: number }[]> {
    return this.x.all(
      'SELECT error, created_at FROM variant_renders WHERE variant_id = ? AND site_id = ? AND created_at >= ? AND ok = 0 ORDER BY created_at DESC, id DESC LIMIT ?',
      [variantId, siteId, since, limit],
    );
  }

  /** Drops renders of a variant older than `before` (the watchdog only ever reads its window). */
  async prune(variantId: string, before: number): Promise<void> {
    await this.x.run('DELETE FROM variant_renders WHERE variant_id = ? AND created_at < ?', [variantId, before]);
  }
}

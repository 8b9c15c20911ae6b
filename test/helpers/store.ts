import { openConfiguredStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import type { Repos } from '../../src/store/repos.js';
import { backendEnv } from './backend.js';

/**
 * Opens the store of a test's data directory the way `svc` does: SQLite
 * (synchronous=normal) by default, the directory's PostgreSQL schema on a `pg`
 * run (see backend.ts).
 */
export function openTestStore(dataDir: string, opts: { poolSize?: number; statementTimeoutMs?: number } = {}): Promise<Store> {
  return openConfiguredStore({
    dataDir,
    synchronous: 'normal',
    databaseUrl: backendEnv(dataDir).SVC_DATABASE_URL,
    databasePoolSize: opts.poolSize ?? 4,
    databaseStatementTimeoutMs: opts.statementTimeoutMs ?? 30_000,
  });
}

/** A published variant of `zoneId` (inserted, approved, published), for tests that decide over it. */
export async function publishedVariant(tx: Repos, v: { siteId: string; zoneId: string; contentId: string; now: number }): Promise<string> {
  const id = await tx.variants.insert({ siteId: v.siteId, zoneId: v.zoneId, contentId: v.contentId, segmentId: null, name: 'v', createdBy: 'test', now: v.now });
  await tx.variants.transition(v.siteId, id, 'draft', 'approved', 'test', v.now);
  await tx.variants.transition(v.siteId, id, 'approved', 'published', 'test', v.now);
  return id;
}

/**
 * A running test `id` on `zoneId` with two arms of weight 1: `arms[0]` the control (the zone's default),
 * `arms[1]` showing `variantId`.
 */
export async function runningTest(
  tx: Repos,
  t: { siteId: string; id: string; pageId: string; zoneId: string; variantId: string; arms: [string, string]; now: number },
): Promise<void> {
  await tx.sql.run(
    "INSERT INTO experiments (id, site_id, name, page_id, zone_id, status, seed, primary_metric, created_by, created_at, updated_at, started_at) VALUES (?, ?, 't', ?, ?, 'running', 'seed', 'conversion', 'test', ?, ?, ?)",
    [t.id, t.siteId, t.pageId, t.zoneId, t.now, t.now, t.now],
  );
  await tx.sql.run(
    "INSERT INTO experiment_arms (id, site_id, experiment_id, label, is_control, variant_id, weight, position) VALUES (?, ?, ?, 'Control', 1, NULL, 1, 0)",
    [t.arms[0], t.siteId, t.id],
  );
  await tx.sql.run(
    "INSERT INTO experiment_arms (id, site_id, experiment_id, label, is_control, variant_id, weight, position) VALUES (?, ?, ?, 'B', 0, ?, 1, 1)",
    [t.arms[1], t.siteId, t.id, t.variantId],
  );
}

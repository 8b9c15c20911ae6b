import type { Store } from '../../../src/store/store.js';

/** bench:decide's site: 10 pages of 5 zones, 10 variants a zone (500 placements), 10 running tests, 5 segments. */
export const PAGES = 10;
export const ZONES_PER_PAGE = 5;
export const VARIANTS_PER_ZONE = 10;
export const TESTS = 10;
export const SEGMENTS = 5;

/** Writes the web-experience configuration of the benchmark site in one transaction (bench:decide, decide-cpu-pg). */
export async function seedDecideSite(store: Store, siteId: string): Promise<void> {
  await store.write(async (tx) => {
    const now = Date.now();
    const defaultContent = await tx.content.insert({ siteId, name: 'default', kind: 'html', body: '<h2>Welcome</h2><p>Default copy of this zone.</p>', now });
    for (let p = 0; p < PAGES; p++) {
      const pageId = await tx.pages.insert({ siteId, name: `Page ${p}`, matchType: p % 2 === 0 ? 'exact' : 'glob', pattern: p % 2 === 0 ? `/p${p}` : `/p${p}/*`, now });
      for (let z = 0; z < ZONES_PER_PAGE; z++) {
        const zoneId = await tx.zones.insert({ siteId, pageId, name: `zone${z}`, selector: `#zone-${z}`, defaultContentId: defaultContent, now });
        const variants: string[] = [];
        for (let v = 0; v < VARIANTS_PER_ZONE; v++) {
          const contentId = await tx.content.insert({ siteId, name: `p${p}z${z}v${v}`, kind: 'html', body: `<h2>Offer ${p}.${z}.${v}</h2><p>${'Copy '.repeat(20)}</p>`, now });
          const variantId = await tx.variants.insert({ siteId, zoneId, contentId, segmentId: null, name: `v${v}`, createdBy: 'bench', now });
          await tx.variants.transition(siteId, variantId, 'draft', 'approved', 'bench', now);
          await tx.variants.transition(siteId, variantId, 'approved', 'published', 'bench', now);
          const segmentId = v % 2 === 0 ? `seg_bench${v % SEGMENTS}` : null;
          await tx.placements.insert({ siteId, zoneId, variantId, segmentId, priority: (v * 7) % 10, enabled: true, now });
          variants.push(variantId);
        }
        if (z === 0 && p < TESTS) {
          const expId = `exp_bench${p}`;
          await tx.sql.run(
            "INSERT INTO experiments (id, site_id, name, page_id, zone_id, status, seed, primary_metric, created_by, created_at, updated_at, started_at) VALUES (?, ?, ?, ?, ?, 'running', ?, 'conversion', 'bench', ?, ?, ?)",
            [expId, siteId, `Test ${p}`, pageId, zoneId, expId, now, now, now],
          );
          await tx.sql.run(
            "INSERT INTO experiment_arms (id, site_id, experiment_id, label, is_control, variant_id, weight, position) VALUES (?, ?, ?, 'Control', 1, NULL, 1, 0)",
            [`arm_bench${p}c`, siteId, expId],
          );
          await tx.sql.run(
            "INSERT INTO experiment_arms (id, site_id, experiment_id, label, is_control, variant_id, weight, position) VALUES (?, ?, ?, 'B', 0, ?, 1, 1)",
            [`arm_bench${p}b`, siteId, expId, variants[1]],
          );
        }
      }
    }
  });
}

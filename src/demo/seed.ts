import type { Store } from '../store/store.js';
import { createContent } from '../domain/web/content.js';
import { createPage } from '../domain/web/pages.js';
import { createPlacement } from '../domain/web/placements.js';
import { createDraft, transitionVariant } from '../domain/web/variants.js';
import { createZone } from '../domain/web/zones.js';
import { createExperiment } from '../domain/experiments/definition.js';
import { startExperiment } from '../domain/experiments/lifecycle.js';

export interface DemoSite {
  siteId: string;
  /** The variant every visitor sees in the hero zone. */
  heroVariantId: string;
  experimentId: string;
  /** The variant of the test's variant arm (the banner zone). */
  bannerVariantId: string;
}

const ACTOR = 'svc demo';

/**
 * The demo site of `svc demo`: the page /demo with two zones: "hero" shows a published
 * variant to everyone (a placement), "banner" runs a layout test, its default content
 * (the control) against a free-shipping banner, half of the visitors each.
 */
export async function seedDemo(store: Store): Promise<DemoSite> {
  return store.write(async (tx) => {
    const now = Date.now();
    const site = await tx.sites.create({ name: 'Demo shop' });
    const siteId = site.id;
    const page = await createPage(tx, siteId, { name: 'Shop front', match_type: 'prefix', pattern: '/demo' }, now);
    const html = async (name: string, body: string) => (await createContent(tx, siteId, { name, kind: 'html', body }, now)).row.id;
    const heroDefault = await html('Hero (default)', '<h2>Welcome to the demo shop</h2><p>Fresh coffee, roasted weekly.</p>');
    const heroSale = await html('Hero: autumn sale', '<h2>Autumn sale: 20% off every roast</h2><p>Personalized by svc: this is the published variant.</p>');
    const bannerDefault = await html('Banner (default)', '<p>Free returns within 30 days.</p>');
    const bannerShipping = await html('Banner: free shipping', '<p><strong>Free shipping</strong> on orders over $30 (layout test arm B).</p>');
    const hero = await createZone(tx, siteId, { page_id: page.id, name: 'hero', selector: '[data-svc-zone="hero"]', default_content_id: heroDefault }, now);
    const banner = await createZone(tx, siteId, { page_id: page.id, name: 'banner', selector: '[data-svc-zone="banner"]', default_content_id: bannerDefault }, now);
    const publish = async (zoneId: string, contentId: string, name: string) => {
      const v = await createDraft(tx, siteId, { zone_id: zoneId, content_id: contentId, name }, ACTOR, now);
      await transitionVariant(tx, siteId, v.id, 'approve', ACTOR, now);
      return (await transitionVariant(tx, siteId, v.id, 'publish', ACTOR, now)).id;
    };
    const heroVariantId = await publish(hero.id, heroSale, 'Autumn sale hero');
    await createPlacement(tx, siteId, { variant_id: heroVariantId, priority: 100, enabled: true }, now);
    const bannerVariantId = await publish(banner.id, bannerShipping, 'Free shipping banner');
    const exp = await createExperiment(
      tx,
      siteId,
      ACTOR,
      {
        name: 'Banner: free shipping vs free returns',
        zone_id: banner.id,
        arms: [
          { label: 'A (default)', control: true, weight: 50 },
          { label: 'B (free shipping)', control: false, variant_id: bannerVariantId, weight: 50 },
        ],
        primary_metric: 'conversion',
        guardrail_metrics: ['lcp', 'inp', 'cls'],
        stop_early: false,
      },
      now,
    );
    await startExperiment(tx, siteId, exp.id, now);
    return { siteId, heroVariantId, experimentId: exp.id, bannerVariantId };
  });
}

import { z } from 'zod';
import { count, defineEvent, id, idOrNull, siteId, timestamp } from './define.js';

const at = '2025-06-02T09:30:00.000Z';

/** generation.finished: ids of the generation and the revision it landed, and counts. */
export const generationFinished = defineEvent({
  id: 'GenerationFinishedEvent',
  description: 'A page generation lands a new revision.',
  personalData: false,
  schema: z.strictObject({
    event: z.literal('generation.finished'),
    site_id: siteId,
    generation_id: id('The generation run.'),
    page_id: id('The generated page.'),
    segment_id: idOrNull('The segment the revision is for; null: everyone.'),
    revision_id: id('The revision the generation landed.'),
    previous_revision_id: idOrNull('The revision it replaces.'),
    sections_generated: count('Sections written by this generation.'),
    sections_unchanged: count('Sections kept from the previous revision.'),
    timestamp,
  }),
  example: {
    event: 'generation.finished',
    site_id: 'site_example',
    generation_id: 'gen_00mbx2k1a3f9c2d4e5f6a7b8',
    page_id: 'page_pricing',
    segment_id: 'seg_00mbw1a2b3c4d5e6f7a8b9c0',
    revision_id: 'rev_00mbx2k1b7d1e0f2a3b4c5d6',
    previous_revision_id: 'rev_00mbw9q3c2e4f6a8b0c2d4e6',
    sections_generated: 6,
    sections_unchanged: 2,
    timestamp: at,
  },
});

/** crawl.completed: URL counts of a sitemap crawl. */
export const crawlCompleted = defineEvent({
  id: 'CrawlCompletedEvent',
  description: 'A sitemap crawl completes.',
  personalData: false,
  schema: z.strictObject({
    event: z.literal('crawl.completed'),
    site_id: siteId,
    crawl_id: id('The crawl.'),
    sitemap_url: z.url({ protocol: /^https?$/ }).describe('The sitemap that was crawled.'),
    urls_found: count('URLs listed by the sitemap.'),
    urls_crawled: count('URLs fetched successfully.'),
    urls_failed: count('URLs that could not be fetched.'),
    urls_new: count('URLs not seen by the previous crawl.'),
    urls_changed: count('URLs whose content changed since the previous crawl.'),
    urls_removed: count('URLs of the previous crawl no longer listed.'),
    timestamp,
  }),
  example: {
    event: 'crawl.completed',
    site_id: 'site_example',
    crawl_id: 'crawl_00mbx2k1a3f9c2d4e5f6a7b8',
    sitemap_url: 'https://www.example.com/sitemap.xml',
    urls_found: 412,
    urls_crawled: 405,
    urls_failed: 7,
    urls_new: 12,
    urls_changed: 38,
    urls_removed: 3,
    timestamp: at,
  },
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/store.js';
import { cleanup, tempDir } from '../helpers/svc.js';
import { openTestStore } from '../helpers/store.js';

/** The job-row protocol of generation jobs and crawls, on whichever store the project runs (SQLite, PostgreSQL). */
let store: Store;
let dir: string;
const SITE = 'site_jobs';

beforeAll(async () => {
  dir = tempDir();
  store = await openTestStore(dir);
  await store.write(async (tx) => {
    await tx.sql.run(
      "INSERT INTO pages (id, site_id, name, match_type, pattern, source, created_at, updated_at) VALUES ('page_j', ?, 'J', 'exact', '/j', 'manual', 1, 1)",
      [SITE],
    );
  });
});

afterAll(async () => {
  await store.close();
  cleanup(dir);
});

const crawl = (now: number) =>
  store.write((tx) =>
    tx.crawl.insert({ siteId: SITE, requestedSitemapUrl: null, origin: 'https://shop.example', maxUrls: 10, fetchPages: true, timeoutMs: 1000, allowPrivate: false, requestedBy: 't', now }),
  );

describe('job rows', () => {
  it('claims the oldest queued crawl once, re-claims it only after its lease runs out, and gives it back on release', async () => {
    const a = await crawl(1000);
    const b = await crawl(2000);
    expect(await store.crawl.jobs.hasClaimable(5000)).toBe(true);
    const first = await store.write((tx) => tx.crawl.jobs.claim(5000, 60_000));
    expect(first).toMatchObject({ id: a.id, state: 'running', attempts: 1, lease_until: 65_000, started_at: 5000 });
    const second = await store.write((tx) => tx.crawl.jobs.claim(5000, 60_000));
    expect(second?.id).toBe(b.id);
    expect(await store.write((tx) => tx.crawl.jobs.claim(5000, 60_000))).toBeUndefined();
    expect(await store.crawl.jobs.hasClaimable(5000)).toBe(false);
    // The lease of `a` runs out (its runner died): it is taken again, attempts counting up.
    const again = await store.write((tx) => tx.crawl.jobs.claim(65_001, 60_000));
    expect(again).toMatchObject({ id: a.id, attempts: 2, started_at: 5000 });
    await store.write((tx) => tx.crawl.jobs.release(a.id));
    expect(await store.write((tx) => tx.crawl.jobs.claim(65_002, 60_000))).toMatchObject({ id: a.id, attempts: 2 });
    await store.write((tx) => tx.crawl.jobs.fail(a.id, 'boom', 70_000));
    expect(await store.crawl.get(a.id)).toMatchObject({ state: 'failed', error: 'boom', finished_at: 70_000, lease_until: 0 });
    expect(await store.crawl.active(SITE)).toMatchObject({ id: b.id });
    await store.write((tx) => tx.crawl.jobs.fail(b.id, 'done with it', 70_000));
    expect(await store.crawl.active(SITE)).toBeUndefined();
  });

  it('claims generation jobs the same way and finishes them with their revision', async () => {
    const job = await store.write((tx) =>
      tx.generation.insertJob({ siteId: SITE, pageId: 'page_j', segmentId: null, kind: 'generate', generator: 'builtin-v1', template: '{}', seed: '', restoreRevisionId: null, state: 'queued', requestedBy: 't', now: 10 }),
    );
    expect(await store.generation.jobs.hasClaimable(20)).toBe(true);
    const claimed = await store.write((tx) => tx.generation.jobs.claim(20, 1000));
    expect(claimed).toMatchObject({ id: job.id, state: 'running', attempts: 1 });
    expect(await store.write((tx) => tx.generation.jobs.claim(500, 1000))).toBeUndefined();
    await store.write((tx) => tx.generation.finish(job.id, { revisionId: 'rev_x', generated: 2, unchanged: 1, now: 600 }));
    // A finished job is never failed afterwards, nor claimed again.
    await store.write((tx) => tx.generation.jobs.fail(job.id, 'late', 700));
    expect(await store.generation.job(job.id)).toMatchObject({ state: 'finished', error: null, revision_id: 'rev_x', sections_generated: 2, sections_unchanged: 1 });
    expect(await store.write((tx) => tx.generation.jobs.claim(1_000_000, 1000))).toBeUndefined();
  });

  it('keeps crawled URL state per site and marks unlisted URLs gone', async () => {
    const c1 = await crawl(100_000);
    const c2 = await crawl(200_000);
    await store.write(async (tx) => {
      for (const path of ['/a', '/b']) {
        const pageId = await tx.crawl.ensurePage(SITE, path, 1);
        await tx.crawl.upsertUrl({ site_id: SITE, url: `https://shop.example${path}`, page_id: pageId, state: 'new', lastmod: null, content_hash: null, fetch_outcome: 'ok', http_status: 200, fetch_error: null, first_crawl_id: c1.id, last_crawl_id: c1.id, first_seen_at: 1, last_seen_at: 1 });
      }
    });
    expect(await store.write((tx) => tx.crawl.ensurePage(SITE, '/j', 1))).toBe('page_j');
    await store.write(async (tx) => {
      const prev = await tx.crawl.urls(SITE, ['https://shop.example/a']);
      const a = prev.get('https://shop.example/a')!;
      await tx.crawl.upsertUrl({ ...a, state: 'unchanged', last_crawl_id: c2.id, last_seen_at: 2 });
      expect(await tx.crawl.markGone(SITE, c2.id, 3)).toBe(1);
      expect(await tx.crawl.markGone(SITE, c2.id, 4)).toBe(0);
    });
    expect(await store.crawl.counts(SITE, c2.id)).toEqual({ urls_found: 1, urls_crawled: 1, urls_failed: 0, urls_disallowed: 0, urls_new: 0, urls_changed: 0, urls_unchanged: 1, urls_removed: 1 });
    const gone = await store.crawl.list(SITE, c2.id, { state: 'gone', after: '', limit: 10 });
    expect(gone.map((u) => [u.url, u.gone_at])).toEqual([['https://shop.example/b', 3]]);
    expect((await store.crawl.list(SITE, c2.id, { after: 'https://shop.example/a', limit: 10 })).map((u) => u.url)).toEqual(['https://shop.example/b']);
    // Ended, so that no queued crawl is left for the claims test, whichever order the tests run in.
    for (const c of [c1, c2]) await store.write((tx) => tx.crawl.jobs.fail(c.id, 'test over', 300_000));
  });
});

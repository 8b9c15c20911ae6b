import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/store.js';
import { IDEMPOTENCY_WINDOW_MS } from '../../src/store/idempotency.js';
import { cleanup, tempDir } from '../helpers/svc.js';
import { openTestStore } from '../helpers/store.js';

/** Idempotency keys of ingestion, on whichever store the project runs (SQLite, PostgreSQL). */
let store: Store;
let dir: string;

beforeAll(async () => {
  dir = tempDir();
  store = await openTestStore(dir);
});

afterAll(async () => {
  await store.close();
  cleanup(dir);
});

const row = (at: number, response = '{"event_id":"evt_1"}') => ({ path: '/api/events', status: 201, response, created_at: at });

describe('idempotency keys', () => {
  it('answers within the window, replaces an expired key and refuses a fresh one', async () => {
    const now = Date.now();
    await store.write((tx) => tx.idempotency.put('site_a', 'k1', row(now - IDEMPOTENCY_WINDOW_MS - 1000, '{"old":true}')));
    // Expired: not an answer, and a new request may take the key.
    expect(await store.idempotency.get('site_a', 'k1', now - IDEMPOTENCY_WINDOW_MS)).toBeUndefined();
    await store.write((tx) => tx.idempotency.put('site_a', 'k1', row(now)));
    expect(await store.idempotency.get('site_a', 'k1', now - IDEMPOTENCY_WINDOW_MS)).toMatchObject({ path: '/api/events', status: 201, response: '{"event_id":"evt_1"}' });
    // A fresh key is not overwritten: the write conflicts (and on PostgreSQL runs again, then finds the row).
    await expect(store.write((tx) => tx.idempotency.put('site_a', 'k1', row(now + 1, '{"second":true}')))).rejects.toMatchObject({ code: '40001' });
    expect((await store.idempotency.get('site_a', 'k1', now - IDEMPOTENCY_WINDOW_MS))!.response).toBe('{"event_id":"evt_1"}');
    // Keys are per site.
    expect(await store.idempotency.get('site_b', 'k1', now - IDEMPOTENCY_WINDOW_MS)).toBeUndefined();
  });

  it('prunes keys past the window in chunks and keeps the rest', async () => {
    const now = Date.now();
    await store.write(async (tx) => {
      for (let i = 0; i < 5; i++) await tx.idempotency.put('site_p', `old-${i}`, row(now - IDEMPOTENCY_WINDOW_MS - 10_000));
      await tx.idempotency.put('site_p', 'new', row(now));
    });
    expect(await store.write((tx) => tx.idempotency.prune(now, 3))).toBe(3);
    expect(await store.write((tx) => tx.idempotency.prune(now, 3))).toBe(2);
    expect(await store.write((tx) => tx.idempotency.prune(now, 3))).toBe(0);
    expect(await store.idempotency.get('site_p', 'new', now - IDEMPOTENCY_WINDOW_MS)).toBeDefined();
  });
});

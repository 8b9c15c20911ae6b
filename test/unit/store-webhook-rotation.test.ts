import { createHmac, randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/store.js';
import { createDestination, rotateSecret, updateDestination } from '../../src/domain/webhooks/destinations.js';
import { signingKeys } from '../../src/webhooks/destinations.js';
import { destinationView } from '../../src/domain/webhooks/views.js';
import { signatureHeaders } from '../../src/outbound/signer.js';
import { cleanup, tempDir } from '../helpers/svc.js';
import { openTestStore } from '../helpers/store.js';

/**
 * Secret rotation over a real store (SQLite, and PostgreSQL in the pg project), with the clock passed in:
 * the grace period's edges, what each surface's owner may reach, and the clean-up of expired keys.
 */
let store: Store;
let dataDir: string;
let siteId: string;
const T0 = Date.UTC(2026, 10, 25, 9, 0, 0);
const HOUR = 3_600_000;
const hex = (body: string, key: string) => createHmac('sha256', key).update(body).digest('hex');
const whsec = () => `whsec_${randomBytes(32).toString('base64')}`;
const body = '{"event":"conversion","site_id":"site_x"}';
const msg = { body, deliveryId: 'dlv_rot', eventType: 'conversion' };
const opts = { allowPrivate: true };

beforeAll(async () => {
  dataDir = tempDir();
  store = await openTestStore(dataDir, { poolSize: 2 });
  siteId = (await store.write((tx) => tx.sites.create({ name: 'Rotation shop' }))).id;
});

afterAll(async () => {
  await store.close();
  cleanup(dataDir);
});

const keysOf = async (id: string) => signingKeys(store, (await store.webhooks.destination(id))!);

describe('rotateSecret', () => {
  it('signs with both keys until the grace period ends, then with the new one only', async () => {
    const old = whsec();
    const d = await createDestination(store, { siteId, url: 'http://127.0.0.1:9/a', events: 'all', secret: old, signingMode: 'standard' }, opts);
    const r = await rotateSecret(store, { id: d.id, owner: {} }, { gracePeriodSeconds: 2 * 3600 }, T0);
    expect(r.previous_secret_expires_at).toBe(new Date(T0 + 2 * HOUR).toISOString());
    expect(r.destination).toMatchObject({ id: d.id, previous_secret_expires_at: r.previous_secret_expires_at, secret_rotated_at: new Date(T0).toISOString() });
    const keys = await keysOf(d.id);
    expect(keys).toEqual({ mode: 'standard', current: r.secret, previous: old, previousUntil: T0 + 2 * HOUR });

    const during = signatureHeaders(keys, msg, T0 + 2 * HOUR - 1);
    expect(during['x-svc-signature']).toBe(hex(body, old));
    expect(during['x-svc-signature-next']).toBe(hex(body, r.secret));
    const after = signatureHeaders(keys, msg, T0 + 2 * HOUR);
    expect(after['x-svc-signature']).toBe(hex(body, r.secret));
    expect(after['x-svc-signature-next']).toBeUndefined();
    expect(after['webhook-signature']).toBe(new Webhook(r.secret).sign('dlv_rot', new Date(T0 + 2 * HOUR), body));

    const row = (await store.webhooks.destination(d.id))!;
    expect(destinationView(row, T0 + HOUR).previous_secret_expires_at).toBe(r.previous_secret_expires_at);
    expect(destinationView(row, T0 + 2 * HOUR).previous_secret_expires_at).toBeNull();
  });

  it('defaults to 24 hours; refuses a second rotation during the grace period unless its grace is 0', async () => {
    const d = await createDestination(store, { siteId, url: 'http://127.0.0.1:9/b', events: 'all', secret: 'svc-mode-secret' }, opts);
    const first = await rotateSecret(store, { id: d.id, owner: {} }, {}, T0);
    expect(first.previous_secret_expires_at).toBe(new Date(T0 + 24 * HOUR).toISOString());
    await expect(rotateSecret(store, { id: d.id, owner: {} }, { gracePeriodSeconds: 60 }, T0 + 23 * HOUR)).rejects.toMatchObject({ code: 'conflict' });
    // Once the grace period is over a new rotation starts one of its own, from the current secret.
    const second = await rotateSecret(store, { id: d.id, owner: {} }, { secret: 'another-svc-secret', gracePeriodSeconds: 60 }, T0 + 24 * HOUR);
    expect(second.secret).toBe('another-svc-secret');
    expect(await keysOf(d.id)).toMatchObject({ current: 'another-svc-secret', previous: first.secret, previousUntil: T0 + 24 * HOUR + 60_000 });
    const dropped = await rotateSecret(store, { id: d.id, owner: {} }, { gracePeriodSeconds: 0 }, T0 + 24 * HOUR + 1);
    expect(dropped.previous_secret_expires_at).toBeNull();
    expect(await keysOf(d.id)).toMatchObject({ current: dropped.secret, previous: null, previousUntil: null });
  });

  it('a destination without a secret rotates from its site_id, which keeps signing X-SVC-Signature during the grace period', async () => {
    const d = await createDestination(store, { siteId, url: 'http://127.0.0.1:9/c', events: 'all' }, opts);
    const r = await rotateSecret(store, { id: d.id, owner: {} }, { gracePeriodSeconds: 60 }, T0);
    const h = signatureHeaders(await keysOf(d.id), msg, T0);
    expect(h['x-svc-signature']).toBe(hex(body, siteId));
    expect(h['x-svc-signature-next']).toBe(hex(body, r.secret));
    expect(r.destination.has_secret).toBe(true);
  });

  it('validates the secret and grace period and reaches only what the owner owns', async () => {
    const d = await createDestination(store, { siteId, url: 'http://127.0.0.1:9/d', events: 'all', secret: whsec(), signingMode: 'standard', apiKeyId: 'key_a' }, opts);
    const current = (await keysOf(d.id)).current;
    const fails = (input: Parameters<typeof rotateSecret>[2], owner = {}) => rotateSecret(store, { id: d.id, owner }, input, T0);
    await expect(fails({ secret: 'not-a-whsec-secret' })).rejects.toMatchObject({ code: 'validation_failed', details: { field: 'secret' } });
    await expect(fails({ secret: current })).rejects.toMatchObject({ code: 'validation_failed', details: { field: 'secret' } });
    await expect(fails({ gracePeriodSeconds: -1 })).rejects.toMatchObject({ details: { field: 'grace_period_seconds' } });
    await expect(fails({ gracePeriodSeconds: 1.5 })).rejects.toMatchObject({ details: { field: 'grace_period_seconds' } });
    await expect(fails({}, { siteId: 'site_other' })).rejects.toMatchObject({ code: 'not_found' });
    await expect(fails({}, { siteId, apiKeyId: 'key_b' })).rejects.toMatchObject({ code: 'not_found' });
    expect((await keysOf(d.id)).current).toBe(current);
    await expect(fails({}, { siteId, apiKeyId: 'key_a' })).resolves.toMatchObject({ destination: { id: d.id } });
  });

  it('a secret set by update replaces the old one at once and ends a grace period; the janitor forgets expired keys', async () => {
    const d = await createDestination(store, { siteId, url: 'http://127.0.0.1:9/e', events: 'all', secret: 'first-svc-secret' }, opts);
    await rotateSecret(store, { id: d.id, owner: {} }, { gracePeriodSeconds: 60 }, T0);
    await updateDestination(store, { id: d.id, owner: {} }, { secret: 'replaced-at-once' }, opts);
    expect(await keysOf(d.id)).toMatchObject({ current: 'replaced-at-once', previous: null, previousUntil: null });

    const e = await createDestination(store, { siteId, url: 'http://127.0.0.1:9/f', events: 'all', secret: 'second-svc-secret' }, opts);
    await rotateSecret(store, { id: e.id, owner: {} }, { gracePeriodSeconds: 60 }, T0);
    const live = await createDestination(store, { siteId, url: 'http://127.0.0.1:9/g', events: 'all', secret: 'third-svc-secret' }, opts);
    await rotateSecret(store, { id: live.id, owner: {} }, { gracePeriodSeconds: 600 }, T0);
    await store.write((tx) => tx.webhooks.clearExpiredPreviousSecrets(T0 + 60_000));
    expect((await store.webhooks.destination(e.id))!).toMatchObject({ previous_secret_enc: null, previous_secret_expires_at: null });
    expect((await keysOf(live.id)).previous).toBe('third-svc-secret');
  });
});

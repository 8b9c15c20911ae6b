import { AppError } from '../../errors/app-error.js';
import { newId } from '../../store/ids.js';
import type { Store } from '../../store/store.js';
import type { FireState } from '../../store/triggers.js';
import { validateDestinationUrl } from '../../webhooks/destinations.js';
import { ownTrigger } from './definitions.js';
import { createFire, logAttempt, messageBody } from './service.js';
import { endpointView, fireView, type EndpointView, type FireList, type FireView, type TestFireResult } from './views.js';
import { siteTimeZone } from '../time.js';

/**
 * Sets the site's endpoints: each URL given is checked as a destination, the
 * secret is sealed; omitted fields stay, null clears.
 */
export async function setTriggerEndpoint(
  store: Store,
  siteId: string,
  by: string,
  input: { url?: string | null | undefined; secret?: string | null | undefined; test_url?: string | null | undefined },
  allowPrivate: boolean,
): Promise<EndpointView> {
  const url = input.url ? await validateDestinationUrl(input.url, allowPrivate) : input.url;
  let testUrl = input.test_url;
  if (testUrl) {
    try {
      testUrl = await validateDestinationUrl(testUrl, allowPrivate);
    } catch (err) {
      if (err instanceof AppError) throw new AppError(err.code, err.message.replace(/^url:/, 'test_url:'), { field: 'test_url' });
      throw err;
    }
  }
  const now = Date.now();
  const row = await store.write(async (tx) => {
    const cur = await tx.triggers.endpoint(siteId);
    const next = {
      site_id: siteId,
      url: url === undefined ? (cur?.url ?? null) : url,
      secret_enc: input.secret === undefined ? (cur?.secret_enc ?? null) : input.secret === null ? null : store.secrets.seal(input.secret),
      test_url: testUrl === undefined ? (cur?.test_url ?? null) : testUrl,
      updated_by: by,
      updated_at: now,
    };
    await tx.triggers.setEndpoint(next);
    return next;
  });
  return endpointView(row);
}

/**
 * Sends one message of a trigger to the site's test endpoint now, for the
 * profile `profileId` names (called once the trigger and endpoint are
 * checked), ignoring cap and quiet hours; waits for the answer and records
 * the test fire and its attempt.
 */
export async function testFire(store: Store, siteId: string, by: string, id: string, profileId: () => Promise<string>, allowPrivate: boolean): Promise<TestFireResult> {
  const t = await ownTrigger(store, siteId, id);
  const endpoint = await store.triggers.endpoint(siteId);
  if (!endpoint?.test_url) throw new AppError('conflict', 'set the test endpoint first (triggers_endpoint_set test_url)', { field: 'id' });
  const pid = await profileId();
  const now = Date.now();
  const fire = {
    id: newId('fire'),
    site_id: siteId,
    trigger_id: t.id,
    profile_id: pid,
    mode: 'test' as const,
    reason: 'test',
    state: 'pending' as const,
    due_at: now,
    deferred: 0,
    next_attempt_at: now,
    created_by: by,
    created_at: now,
  };
  await store.write((tx) => tx.triggers.insertFire(fire));
  const body = await messageBody(store, t, fire, now);
  const { createGuardedDispatcher } = await import('../../outbound/guard.js');
  const { sendFire } = await import('./send.js');
  const http = createGuardedDispatcher({ allowPrivate, connections: 1 });
  let r;
  try {
    r = await sendFire(http, store, endpoint, endpoint.test_url, fire, body);
  } finally {
    await http.close().catch(() => undefined);
  }
  const error = r.ok ? null : `${r.errorClass}: ${r.message ?? ''}`.slice(0, 500);
  await store.write(async (tx) => {
    await tx.triggers.recordTest(fire.id, { ok: r.ok, status: r.status, error, now: Date.now() });
    await logAttempt(tx, fire, 1, r, Date.now());
  });
  return { fire: fireView((await store.triggers.fire(siteId, fire.id))!, await siteTimeZone(store, siteId)), ok: r.ok, status: r.status, error, latency_ms: r.latencyMs };
}

/**
 * Fires a trigger by hand for the profile `profileId` names, through the live
 * endpoint (refused until it is set): no frequency cap; quiet hours defer it
 * unless ignored.
 */
export async function fireTrigger(store: Store, siteId: string, by: string, id: string, profileId: () => Promise<string>, ignoreQuietHours: boolean): Promise<FireView> {
  const t = await ownTrigger(store, siteId, id);
  const endpoint = await store.triggers.endpoint(siteId);
  if (!endpoint?.url) throw new AppError('conflict', 'set the live endpoint first (triggers_endpoint_set)', { field: 'id' });
  const pid = await profileId();
  const fire = await store.write((tx) => createFire(tx, t, pid, 'manual', Date.now(), { by, ignoreQuietHours }));
  return fireView(fire!, await siteTimeZone(store, siteId));
}

/** Fires of the site, newest first, with the site's time zone their local due times are in. */
export async function listFires(
  store: Store,
  siteId: string,
  f: { triggerId?: string | undefined; profileId?: string | undefined; state?: FireState | undefined; limit: number },
): Promise<FireList> {
  const tz = await siteTimeZone(store, siteId);
  const rows = await store.triggers.fires({ siteId, ...f });
  return { fires: rows.map((r) => fireView(r, tz)), timezone: tz };
}

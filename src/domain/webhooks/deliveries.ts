import type { Dispatcher } from 'undici';
import { AppError } from '../../errors/app-error.js';
import type { Store } from '../../store/store.js';
import type { DeliveryRow } from '../../store/webhooks.js';
import { newId } from '../../store/ids.js';
import { isEventType, samplePayload, type EventType } from '../../webhooks/catalogue.js';
import { sendToDestination } from '../../webhooks/destinations.js';
import type { webhookPolicy } from '../../webhooks/policy.js';

/**
 * Deliveries sent again: a replay queued for the running dispatcher (MCP), a
 * replay sent at once (the CLI), and a signed test send.
 */

/**
 * Puts a delivery of the site that failed for good back in the queue; the
 * running dispatcher sends it again with a fresh signature and the same id.
 */
export async function requeueFailedDelivery(store: Store, siteId: string, deliveryId: string): Promise<{ delivery_id: string; requeued: boolean }> {
  const d = await store.webhooks.delivery(deliveryId);
  if (!d || d.site_id !== siteId) throw new AppError('not_found', `no delivery ${deliveryId}`, { field: 'delivery_id' });
  if (d.state !== 'failed') throw new AppError('conflict', `delivery ${d.id} is ${d.state}; only failed deliveries are replayed`, { field: 'delivery_id', state: d.state });
  const requeued = await store.write((tx) => tx.webhooks.requeue(d.id, Date.now()));
  return { delivery_id: d.id, requeued };
}

/** What a replay sends again: one delivery, or those of a destination matching the filters. */
export type ReplayTarget =
  | { deliveryId: string }
  | {
      destinationId: string;
      since?: number | undefined;
      until?: number | undefined;
      eventType?: string | undefined;
      failedOnly?: boolean | undefined;
    };

/** A delivery picked for a replay. */
export type ReplayDelivery = DeliveryRow;

/** The deliveries a replay sends again (not_found when the delivery or the destination does not exist). */
export async function replayTargets(store: Store, target: ReplayTarget): Promise<ReplayDelivery[]> {
  if ('deliveryId' in target) {
    const d = await store.webhooks.delivery(target.deliveryId);
    if (!d) throw new AppError('not_found', `no delivery ${target.deliveryId}`);
    return [d];
  }
  if (!(await store.webhooks.destination(target.destinationId))) throw new AppError('not_found', `no destination ${target.destinationId}`);
  const { destinationId, since, until, eventType, failedOnly } = target;
  return store.webhooks.deliveries({ destinationId, since, until, eventType, failedOnly });
}

/**
 * Sends each delivery again at once with fresh signatures, `concurrency` at
 * a time, and records every attempt (kind replay) as the dispatcher would.
 * `onResult` hears each one with a line for the operator.
 */
export async function replayDeliveries(
  store: Store,
  http: Dispatcher,
  targets: readonly ReplayDelivery[],
  policy: ReturnType<typeof webhookPolicy>,
  opts: { concurrency: number; onResult: (ok: boolean, line: string) => void },
): Promise<void> {
  const { recordAttempt } = await import('../../webhooks/dispatcher.js');
  let next = 0;
  const worker = async () => {
    while (next < targets.length) {
      const d = targets[next++]!;
      const dest = await store.webhooks.destination(d.destination_id);
      if (!dest) {
        opts.onResult(false, `${d.id} destination ${d.destination_id} no longer exists`);
        continue;
      }
      const r = await sendToDestination(http, store, dest, { body: d.payload, eventType: d.event_type, deliveryId: d.id });
      await store.write((tx) => recordAttempt(tx, dest, d, r, policy, 'replay'));
      opts.onResult(r.ok, `${d.id} ${d.event_type} ${r.ok ? 'ok' : 'failed'} ${r.status ?? r.errorClass} ${r.latencyMs}ms`);
    }
  };
  await Promise.all(Array.from({ length: Math.min(opts.concurrency, Math.max(1, targets.length)) }, worker));
}

/** The outcome of a test send, as the CLI prints it. */
export interface TestSendView {
  event: EventType;
  delivery_id: string;
  ok: boolean;
  status: number | null;
  latency_ms: number;
  error_class: string | null;
  message: string | null;
}

/**
 * Sends a signed sample event (of `event`, else the first type the
 * destination subscribes to) and logs the outcome as a test in its health log.
 */
export async function testSend(store: Store, http: Dispatcher, destinationId: string, event: EventType | undefined): Promise<TestSendView> {
  const dest = await store.webhooks.destination(destinationId);
  if (!dest) throw new AppError('not_found', `no destination ${destinationId}`);
  const subscribed = (JSON.parse(dest.events) as string[]).filter(isEventType);
  const type: EventType = event ?? subscribed[0] ?? 'profile.identified';
  const body = JSON.stringify(samplePayload(type, dest.site_id));
  const deliveryId = newId('test');
  const r = await sendToDestination(http, store, dest, { body, eventType: type, deliveryId });
  await store.write((tx) =>
    tx.webhooks.logAttempt({ site_id: dest.site_id, integration: 'webhook', destination_id: dest.id, delivery_id: null, event_type: type, kind: 'test', attempt: null }, r, Date.now()),
  );
  return { event: type, delivery_id: deliveryId, ok: r.ok, status: r.status, latency_ms: r.latencyMs, error_class: r.errorClass, message: r.message };
}

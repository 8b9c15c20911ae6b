import { z } from 'zod';
import { AppError } from '../errors/app-error.js';
import type { Store } from '../store/store.js';
import type { DestinationRow } from '../store/webhooks.js';
import { EVENT_TYPES, isEventType } from './catalogue.js';
import { endpointKey, type SigningKeys } from '../outbound/signer.js';
import type { AttemptResult } from '../outbound/sender.js';
import type { Dispatcher } from 'undici';

/** Field rules of a destination, shared by the CLI and the profile REST API. */
export const destinationUrlSchema = z.string().min(1).max(2048).describe('Publicly routable http(s) URL.');
export const destinationSecretSchema = z.string().min(8).max(256).describe('Signing secret; without one deliveries are signed with the public site_id.');
export const destinationDescriptionSchema = z.string().max(500);

/** Parses an event subscription list: `all` or a comma-separated list of catalogue event types. */
export function parseEventList(input: string | readonly string[]): string[] {
  const items = (typeof input === 'string' ? input.split(',') : [...input]).map((s) => s.trim()).filter(Boolean);
  if (items.length === 0) throw new AppError('validation_failed', 'events: name at least one event type, or all', { field: 'events' });
  if (items.includes('all')) return ['all'];
  const unknown = items.filter((e) => !isEventType(e));
  if (unknown.length > 0) {
    throw new AppError('validation_failed', `events: unknown event type ${unknown.map((u) => JSON.stringify(u)).join(', ')}; known: ${EVENT_TYPES.join(', ')}, or all`, {
      field: 'events',
      unknown,
    });
  }
  return [...new Set(items)];
}

/** Whether a destination receives events of this type. */
export function subscribes(d: DestinationRow, eventType: string): boolean {
  const events = JSON.parse(d.events) as string[];
  return events.includes('all') || events.includes(eventType);
}

/**
 * The keys a destination signs with: its secret (or the public site_id when it
 * has none), its signing mode, and the key before its last rotation with the
 * end of that rotation's grace period.
 */
export function signingKeys(store: Store, d: DestinationRow): SigningKeys {
  return {
    mode: d.signing_mode,
    current: endpointKey(store.secrets, d.secret_enc, d.site_id),
    previous: d.previous_secret_enc ? store.secrets.open(d.previous_secret_enc) : null,
    previousUntil: d.previous_secret_expires_at,
  };
}

/**
 * One signed attempt to a destination with its current keys (the CLI's replay
 * and test send; the dispatcher keeps each destination's keys on its lane).
 * Never throws; undici loads only when it is called.
 */
export async function sendToDestination(
  http: Dispatcher,
  store: Store,
  d: DestinationRow,
  msg: { body: string; eventType: string; deliveryId: string },
): Promise<AttemptResult> {
  const { sendSigned } = await import('../outbound/sender.js');
  return sendSigned({ dispatcher: http, url: d.url, signing: signingKeys(store, d), ...msg });
}

/** Whether two versions of a destination sign differently (secret, mode or rotation changed). */
export function signingChanged(a: DestinationRow, b: DestinationRow): boolean {
  return (
    a.secret_enc !== b.secret_enc ||
    a.signing_mode !== b.signing_mode ||
    a.previous_secret_enc !== b.previous_secret_enc ||
    a.previous_secret_expires_at !== b.previous_secret_expires_at
  );
}

/** Refuses a destination URL that is not http(s) or not publicly routable (unless private ones are allowed). */
export async function validateDestinationUrl(url: string, allowPrivate: boolean): Promise<string> {
  const { checkDestinationUrl } = await import('../outbound/guard.js'); // undici loads only when needed
  const check = await checkDestinationUrl(url, { allowPrivate });
  if (!check.ok) throw new AppError('destination_refused', `url: ${check.reason}`, { field: 'url' });
  return check.url.toString();
}

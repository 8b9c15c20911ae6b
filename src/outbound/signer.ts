import { z } from 'zod';
import { sign } from './signing.js';
import { signStandard, standardKey } from './standard.js';

/**
 * How a destination signs: `svc` sends SPEC's X-SVC-Signature only; `standard`
 * adds the Standard Webhooks headers (webhook-id, webhook-timestamp,
 * webhook-signature) to it.
 */
export const signingModeSchema = z
  .enum(['svc', 'standard'])
  .describe(
    'svc: X-SVC-Signature only (default). standard: also the Standard Webhooks headers webhook-id, webhook-timestamp and webhook-signature (needs a secret).',
  );

export type SigningMode = z.infer<typeof signingModeSchema>;

/** The keys a destination signs with at a given moment. */
export interface SigningKeys {
  mode: SigningMode;
  /** The key of the current secret (the site_id when the destination has none). */
  current: string;
  /** The key before the last rotation, valid until `previousUntil` (ms); null when there is none. */
  previous: string | null;
  previousUntil: number | null;
}

/** What opens and seals stored secrets (the store's secret box). */
export interface SecretOpener {
  open(sealed: string): string;
  seal(plaintext: string): string;
}

/**
 * The key an endpoint (a webhook destination, the site's trigger endpoint)
 * signs with: its secret when it has one, else its site's public site_id. The
 * one place this rule lives.
 */
export function endpointKey(box: Pick<SecretOpener, 'open'>, secretEnc: string | null, siteId: string): string {
  return secretEnc ? box.open(secretEnc) : siteId;
}

/** {@link endpointKey} sealed, as a rotation keeps it as the previous key. */
export function sealedEndpointKey(box: Pick<SecretOpener, 'seal'>, secretEnc: string | null, siteId: string): string {
  return secretEnc ?? box.seal(siteId);
}

/** Keys of a destination that was never rotated, in svc mode (trigger endpoints sign this way). */
export function svcKeys(key: string): SigningKeys {
  return { mode: 'svc', current: key, previous: null, previousUntil: null };
}

/** Whether a rotation's grace period is running at `now`: the old key still signs. */
export function inGrace(keys: SigningKeys, now: number): boolean {
  return keys.previous !== null && keys.previousUntil !== null && now < keys.previousUntil;
}

/**
 * The signature headers of one delivery attempt at `now` (ms), in the order
 * they are sent. Every delivery carries X-SVC-Signature (hex HMAC-SHA256 of the
 * raw body), X-SVC-Event and X-SVC-Delivery. During a rotation's grace period
 * X-SVC-Signature stays keyed by the old key and X-SVC-Signature-Next carries
 * the new one. In standard mode webhook-id is the delivery id (stable across
 * retries), webhook-timestamp the attempt's time in seconds, and
 * webhook-signature `v1,<new>` followed, during a grace period, by `v1,<old>`.
 */
export function signatureHeaders(keys: SigningKeys, msg: { body: string; deliveryId: string; eventType: string }, now: number): Record<string, string> {
  const old = inGrace(keys, now) ? keys.previous : null;
  const headers: Record<string, string> = { 'x-svc-signature': sign(msg.body, old ?? keys.current) };
  if (old !== null) headers['x-svc-signature-next'] = sign(msg.body, keys.current);
  headers['x-svc-event'] = msg.eventType;
  headers['x-svc-delivery'] = msg.deliveryId;
  if (keys.mode === 'standard') {
    const timestamp = Math.floor(now / 1000);
    const signed = (key: string) => `v1,${signStandard({ id: msg.deliveryId, timestamp, body: msg.body, key: standardKey(key) })}`;
    headers['webhook-id'] = msg.deliveryId;
    headers['webhook-timestamp'] = String(timestamp);
    headers['webhook-signature'] = old !== null ? `${signed(keys.current)} ${signed(old)}` : signed(keys.current);
  }
  return headers;
}

import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** Standard Webhooks secrets are `whsec_` followed by the base64 of the key bytes. */
export const STANDARD_SECRET_PREFIX = 'whsec_';
/** How far a `webhook-timestamp` may be from the receiver's clock, either way (the Standard Webhooks default). */
export const STANDARD_TOLERANCE_SECONDS = 300;
/** Key sizes Standard Webhooks recommends for a new secret. */
export const STANDARD_KEY_BYTES = { min: 24, max: 64 } as const;

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const TIMESTAMP = /^\d{1,12}$/;

/** The key bytes of a `whsec_<base64>` secret, or null when the text is not of that form. */
export function decodeStandardSecret(secret: string): Buffer | null {
  if (!secret.startsWith(STANDARD_SECRET_PREFIX)) return null;
  const b64 = secret.slice(STANDARD_SECRET_PREFIX.length);
  if (b64.length === 0 || !BASE64.test(b64)) return null;
  return Buffer.from(b64, 'base64');
}

/**
 * The HMAC key of the Standard Webhooks signature for a destination secret:
 * the decoded bytes of a `whsec_<base64>` secret, else the UTF-8 bytes of the
 * secret's text (so a secret set before the destination switched to standard
 * keeps working; its Standard Webhooks form is `toStandardSecret(secret)`).
 */
export function standardKey(secret: string): Buffer {
  return decodeStandardSecret(secret) ?? Buffer.from(secret, 'utf8');
}

/**
 * A secret as Standard Webhooks libraries take it: a `whsec_<base64>` secret
 * as it is, any other as `whsec_` + base64 of its UTF-8 bytes.
 *
 * @example
 * toStandardSecret('3f1c9a…') // 'whsec_M2YxYzlh…'
 */
export function toStandardSecret(secret: string): string {
  return decodeStandardSecret(secret) ? secret : STANDARD_SECRET_PREFIX + Buffer.from(secret, 'utf8').toString('base64');
}

/** Whether a secret is `whsec_<base64>` of 24 to 64 bytes: the form a new secret of a standard destination must have. */
export function isNewStandardSecret(secret: string): boolean {
  const key = decodeStandardSecret(secret);
  return key !== null && key.length >= STANDARD_KEY_BYTES.min && key.length <= STANDARD_KEY_BYTES.max;
}

/** A new random secret, `whsec_` + base64 of 32 bytes: valid for both signing modes. */
export function generateSecret(): string {
  return STANDARD_SECRET_PREFIX + randomBytes(32).toString('base64');
}

/** base64 HMAC-SHA256 of `id.timestamp.body` (the body's raw bytes) under `key`: one `v1,` signature without its prefix. */
export function signStandard(input: { id: string; timestamp: number; body: string | Uint8Array; key: Uint8Array }): string {
  return createHmac('sha256', input.key).update(`${input.id}.${input.timestamp}.`, 'utf8').update(input.body).digest('base64');
}

export type StandardFailure = 'malformed' | 'timestamp_out_of_tolerance' | 'no_matching_signature';

/** The outcome of a check: valid, or why not. */
export type StandardVerification = { valid: true } | { valid: false; reason: StandardFailure };

/**
 * Checks a Standard Webhooks delivery: `signature` is the `webhook-signature`
 * header (space-separated `v1,<base64>` values; one match is enough, other
 * versions are ignored), `id` and `timestamp` the `webhook-id` and
 * `webhook-timestamp` headers. The timestamp must be within `toleranceSeconds`
 * (default 300) of `now` (ms, default the clock), either way. `secret` is
 * `whsec_<base64>` (another text is keyed by its UTF-8 bytes, as svc signs it).
 * Constant-time; never throws.
 *
 * @example
 * verifyStandardSignature({ body: rawBody, id: h['webhook-id'], timestamp: h['webhook-timestamp'], signature: h['webhook-signature'], secret })
 * // { valid: true } or { valid: false, reason: 'timestamp_out_of_tolerance' }
 */
export function verifyStandardSignature(input: {
  body: string | Uint8Array;
  id: string | null | undefined;
  timestamp: string | number | null | undefined;
  signature: string | null | undefined;
  secret: string;
  now?: number;
  toleranceSeconds?: number;
}): StandardVerification {
  const { body, id, signature, secret } = input;
  const ts = typeof input.timestamp === 'number' ? String(input.timestamp) : input.timestamp;
  if (typeof id !== 'string' || id.length === 0 || typeof ts !== 'string' || !TIMESTAMP.test(ts) || typeof signature !== 'string') {
    return { valid: false, reason: 'malformed' };
  }
  if (typeof secret !== 'string' || secret.length === 0 || (typeof body !== 'string' && !(body instanceof Uint8Array))) {
    return { valid: false, reason: 'malformed' };
  }
  const tolerance = input.toleranceSeconds ?? STANDARD_TOLERANCE_SECONDS;
  const nowSeconds = Math.floor((input.now ?? Date.now()) / 1000);
  const timestamp = Number(ts);
  if (Math.abs(nowSeconds - timestamp) > tolerance) return { valid: false, reason: 'timestamp_out_of_tolerance' };
  const expected = Buffer.from(signStandard({ id, timestamp, body, key: standardKey(secret) }), 'base64');
  for (const part of signature.split(' ')) {
    const comma = part.indexOf(',');
    if (comma < 0 || part.slice(0, comma) !== 'v1') continue;
    const given = part.slice(comma + 1);
    if (!BASE64.test(given)) continue;
    const bytes = Buffer.from(given, 'base64');
    if (bytes.length === expected.length && timingSafeEqual(bytes, expected)) return { valid: true };
  }
  return { valid: false, reason: 'no_matching_signature' };
}

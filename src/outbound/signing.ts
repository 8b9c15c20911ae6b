import { createHmac, timingSafeEqual } from 'node:crypto';

const HEX_SHA256 = /^[0-9a-fA-F]{64}$/;

/**
 * The X-SVC-Signature of a delivery: lowercase hex HMAC-SHA256 of the raw body
 * (a string is taken as UTF-8), keyed by the destination's secret, or by the
 * site_id when the destination has no secret.
 *
 * @example
 * sign('{"event":"conversion"}', 'whsec_…') // '5f2c…' (64 hex characters)
 */
export function sign(rawBody: string | Buffer, key: string): string {
  return createHmac('sha256', key).update(rawBody).digest('hex');
}

/**
 * Checks an X-SVC-Signature header against the raw body of a delivery, in
 * constant time. Pass the body exactly as received (the bytes, not re-serialized
 * JSON). Hex is accepted in either case. Returns false, and never throws, for a
 * missing, malformed or wrong-length signature, an empty secret or a body that
 * is not a string or bytes.
 *
 * @example
 * // express: app.post('/hooks', express.raw({ type: 'application/json' }), (req, res) => {
 * if (!verifySignature({ body: req.body, signature: req.get('x-svc-signature'), secret })) return res.sendStatus(401);
 */
export function verifySignature(input: {
  body: string | Uint8Array;
  signature: string | null | undefined;
  secret: string;
}): boolean {
  const { body, signature, secret } = input;
  if (typeof signature !== 'string' || !HEX_SHA256.test(signature)) return false;
  if (typeof secret !== 'string' || secret.length === 0) return false;
  if (typeof body !== 'string' && !(body instanceof Uint8Array)) return false;
  const expected = createHmac('sha256', secret).update(body).digest();
  return timingSafeEqual(expected, Buffer.from(signature, 'hex'));
}

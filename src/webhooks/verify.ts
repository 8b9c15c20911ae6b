import { verifySignature } from '../outbound/signing.js';
import { STANDARD_TOLERANCE_SECONDS, verifyStandardSignature, type StandardFailure } from '../outbound/standard.js';

/** Request headers as node:http, express or the Fetch API hold them. */
export type WebhookHeaders = { get(name: string): string | null } | Record<string, string | readonly string[] | undefined>;

export type WebhookScheme = 'svc' | 'standard';

/** The outcome of `verifyWebhook`: which scheme was checked, and why it failed when it did. */
export type WebhookVerification =
  | { valid: true; scheme: WebhookScheme }
  | { valid: false; scheme: WebhookScheme; reason: 'missing_headers' | StandardFailure };

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof headers.get === 'function') return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  const record = headers as Record<string, string | readonly string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? value.join(', ') : (value as string | undefined);
}

/**
 * Checks a delivery under either scheme, from its raw body and headers.
 * `scheme: 'auto'` (the default) checks the Standard Webhooks headers when
 * `webhook-signature` is present (timestamp within `toleranceSeconds`, default
 * 300, of `now`), else X-SVC-Signature. Under svc a delivery sent during a
 * secret rotation is valid when either X-SVC-Signature (old secret) or
 * X-SVC-Signature-Next (new secret) matches, so a receiver that knows only one
 * of the two secrets accepts it; under standard any `v1,` value may match.
 * Constant-time; never throws.
 *
 * @example
 * // express: app.post('/hooks', express.raw({ type: 'application/json' }), (req, res) => {
 * const check = verifyWebhook({ body: req.body, headers: req.headers, secret: process.env.SVC_WEBHOOK_SECRET });
 * if (!check.valid) return res.status(401).json(check);
 */
export function verifyWebhook(input: {
  body: string | Uint8Array;
  headers: WebhookHeaders;
  secret: string;
  scheme?: WebhookScheme | 'auto';
  now?: number;
  toleranceSeconds?: number;
}): WebhookVerification {
  const { body, headers, secret } = input;
  const standardSignature = header(headers, 'webhook-signature');
  const scheme: WebhookScheme = input.scheme === 'svc' || input.scheme === 'standard' ? input.scheme : standardSignature !== undefined ? 'standard' : 'svc';
  if (scheme === 'standard') {
    const id = header(headers, 'webhook-id');
    const timestamp = header(headers, 'webhook-timestamp');
    if (standardSignature === undefined || id === undefined || timestamp === undefined) return { valid: false, scheme, reason: 'missing_headers' };
    const r = verifyStandardSignature({
      body,
      id,
      timestamp,
      signature: standardSignature,
      secret,
      now: input.now,
      toleranceSeconds: input.toleranceSeconds ?? STANDARD_TOLERANCE_SECONDS,
    });
    return r.valid ? { valid: true, scheme } : { valid: false, scheme, reason: r.reason };
  }
  const signatures = [header(headers, 'x-svc-signature'), header(headers, 'x-svc-signature-next')].filter((s) => s !== undefined);
  if (signatures.length === 0) return { valid: false, scheme, reason: 'missing_headers' };
  // Both are checked whatever the first gives, so the time taken does not tell which secret matched.
  const matches = signatures.map((signature) => verifySignature({ body, signature, secret }));
  return matches.includes(true) ? { valid: true, scheme } : { valid: false, scheme, reason: 'no_matching_signature' };
}

import type { Dispatcher } from 'undici';
import type { MetaConfig, MetaSecrets } from './connections.js';
import type { ConversionSignals } from './signals.js';
import { excerpt, networkOutcome, okOutcome, post, sendBisecting, type JobOutcome } from './http.js';

/** Meta refuses a request with more events than this. */
export const META_BATCH_MAX = 1000;
/** Meta refuses an event whose event_time is older than 7 days. */
export const META_MAX_AGE_MS = 7 * 86_400_000;

export interface MetaEvent {
  event_name: 'Purchase';
  event_time: number;
  event_id: string;
  action_source: 'website';
  event_source_url: string;
  user_data: {
    em?: string[];
    ph?: string[];
    external_id?: string[];
    client_ip_address?: string;
    client_user_agent?: string;
    fbc?: string;
  };
  custom_data: {
    value?: number;
    currency?: string;
    content_ids: string[];
    contents: { id: string; quantity: number; item_price: number }[];
    content_type: 'product';
    order_id: string;
    num_items: number;
  };
}

/**
 * The Conversions API event of a conversion: `Purchase`, event_id = the
 * conversion id (Meta de-duplicates it against the browser pixel's event with
 * the same id), event_time in Unix seconds, hashed user data, unhashed IP,
 * user agent and fbc (`fb.1.{ms the fbclid was first seen}.{fbclid}`), and the
 * line items as contents. A conversion without revenue carries no value.
 */
export function metaEvent(s: ConversionSignals, cfg: MetaConfig, siteDomain: string | null): MetaEvent {
  const user: MetaEvent['user_data'] = {};
  if (s.em) user.em = [s.em];
  if (s.ph_digits) user.ph = [s.ph_digits];
  if (s.external_id) user.external_id = [s.external_id];
  if (s.ip) user.client_ip_address = s.ip;
  if (s.user_agent) user.client_user_agent = s.user_agent;
  if (s.fbclid) user.fbc = `fb.1.${s.fbclid_at ?? s.at}.${s.fbclid}`;
  const contents = s.items.map((i) => ({ id: i.sku, quantity: Math.round(i.qty), item_price: i.price })).filter((c) => c.quantity > 0);
  const custom: MetaEvent['custom_data'] = {
    content_ids: [...new Set(contents.map((c) => c.id))],
    contents,
    content_type: 'product',
    order_id: s.conversion_id,
    num_items: contents.reduce((n, c) => n + c.quantity, 0),
  };
  if (s.value !== null) {
    custom.value = s.value;
    custom.currency = s.currency;
  }
  return {
    event_name: 'Purchase',
    event_time: Math.floor(s.at / 1000),
    event_id: s.conversion_id,
    action_source: 'website',
    event_source_url: s.url ?? cfg.event_source_url ?? (siteDomain ? `https://${siteDomain}/` : ''),
    user_data: user,
    custom_data: custom,
  };
}

/** Why Meta would refuse this event, checked before sending so it cannot sink a whole batch; null when it is sendable. */
export function metaEventProblem(e: MetaEvent, now: number): string | null {
  if (now / 1000 - e.event_time > META_MAX_AGE_MS / 1000) return 'event_time is more than 7 days old; Meta refuses it';
  if (!e.event_source_url) return 'no event_source_url: the session has no landing URL and the connection and site name none';
  if (!e.user_data.client_user_agent) return 'no client_user_agent: Meta requires the browser user agent for website events, and the session recorded none';
  return null;
}

interface MetaError {
  message?: string;
  code?: number;
  error_subcode?: number;
  is_transient?: boolean;
}

/** Graph API error codes that mean "later": unknown/service errors and the rate limits. */
const TRANSIENT_CODES = new Set([1, 2, 4, 17, 32, 341, 613, 80004]);

/** Posts events to `{base}/{version}/{pixel_id}/events`; one outcome per event, in order. */
export async function sendMeta(opts: {
  dispatcher: Dispatcher;
  baseUrl: string;
  apiVersion: string;
  timeoutMs: number;
  config: MetaConfig;
  secrets: MetaSecrets;
  events: readonly MetaEvent[];
}): Promise<JobOutcome[]> {
  const url = `${opts.baseUrl.replace(/\/+$/, '')}/${opts.apiVersion}/${opts.config.pixel_id}/events`;
  return sendBisecting(opts.events, async (batch) => {
    const body: Record<string, unknown> = { data: batch, access_token: opts.secrets.access_token };
    if (opts.config.test_event_code) body.test_event_code = opts.config.test_event_code;
    const x = await post({
      dispatcher: opts.dispatcher,
      url,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      timeoutMs: opts.timeoutMs,
    });
    const all = (o: JobOutcome) => batch.map(() => o);
    if (!x.ok) return { outcomes: all(networkOutcome(x)), splittable: false };
    const { status, json, text, retryAfterMs } = x.res;
    if (status >= 200 && status < 300) {
      const received = (json as { events_received?: unknown } | undefined)?.events_received;
      if (received !== batch.length) {
        return {
          outcomes: all({
            ok: false,
            status,
            latencyMs: x.latencyMs,
            errorClass: 'bad_response',
            message: `Meta acknowledged ${String(received)} of ${batch.length} events`,
            excerpt: excerpt(text),
            retryable: true,
          }),
          splittable: false,
        };
      }
      return { outcomes: all(okOutcome(status, x.latencyMs, text)), splittable: false };
    }
    const err = ((json as { error?: MetaError } | undefined)?.error ?? {}) as MetaError;
    const detail = err.message ? `: ${err.message.slice(0, 300)}` : '';
    const base = { ok: false, status, latencyMs: x.latencyMs, excerpt: excerpt(text), retryAfterMs };
    if (status === 429 || status >= 500 || err.is_transient === true || (err.code !== undefined && TRANSIENT_CODES.has(err.code))) {
      return { outcomes: all({ ...base, errorClass: status === 429 || err.code === 4 || err.code === 17 || err.code === 32 || err.code === 613 ? 'rate_limited' : 'http_status', message: `Meta answered ${status}${detail}`, retryable: true }), splittable: false };
    }
    if (status === 401 || status === 403 || err.code === 190 || err.code === 10 || err.code === 200) {
      // Credentials or permissions: nothing an event can fix, something an operator can (svc adplatform update).
      return { outcomes: all({ ...base, errorClass: 'auth', message: `Meta refused the credentials (${status})${detail}`, retryable: true }), splittable: false };
    }
    return {
      outcomes: all({ ...base, errorClass: 'rejected', message: `Meta rejected the event (${status})${detail}`, retryable: false }),
      splittable: status === 400,
    };
  });
}

import type { Dispatcher } from 'undici';
import type { GoogleConfig, GoogleSecrets } from './connections.js';
import type { ConversionSignals } from './signals.js';
import { excerpt, networkOutcome, okOutcome, post, sendBisecting, type JobOutcome } from './http.js';

/** Google refuses a request with more conversions than this. */
export const GOOGLE_BATCH_MAX = 2000;
export const ADWORDS_SCOPE = 'https://www.googleapis.com/auth/adwords';

export interface GoogleClickConversion {
  conversionAction: string;
  conversionDateTime: string;
  orderId: string;
  gclid?: string;
  conversionValue?: number;
  currencyCode?: string;
  userIdentifiers?: ({ hashedEmail: string } | { hashedPhoneNumber: string })[];
  cartData?: {
    merchantId: number;
    feedCountryCode?: string;
    feedLanguageCode?: string;
    items: { productId: string; quantity: number; unitPrice: number }[];
  };
}

/** `yyyy-mm-dd hh:mm:ss+00:00`, the format Google requires (UTC). */
export function googleDateTime(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')}+00:00`;
}

/**
 * The click conversion of a conversion: orderId = the conversion id (Google
 * de-duplicates on it, so a retry can never count twice), the gclid the
 * session saw, hashed email and E.164 phone (one identifier each) for enhanced
 * conversions, and the line items as cart data when a Merchant Center id is
 * configured. A conversion without revenue carries no value.
 */
export function googleConversion(s: ConversionSignals, cfg: GoogleConfig): GoogleClickConversion {
  const c: GoogleClickConversion = {
    conversionAction: `customers/${cfg.customer_id}/conversionActions/${cfg.conversion_action_id}`,
    conversionDateTime: googleDateTime(s.at),
    orderId: s.conversion_id,
  };
  if (s.gclid) c.gclid = s.gclid;
  if (s.value !== null) {
    c.conversionValue = s.value;
    c.currencyCode = s.currency;
  }
  const ids: NonNullable<GoogleClickConversion['userIdentifiers']> = [];
  if (s.em) ids.push({ hashedEmail: s.em });
  if (s.ph_e164) ids.push({ hashedPhoneNumber: s.ph_e164 });
  if (ids.length > 0) c.userIdentifiers = ids;
  const items = s.items.map((i) => ({ productId: i.sku, quantity: Math.round(i.qty), unitPrice: i.price })).filter((i) => i.quantity > 0);
  if (cfg.merchant_id && items.length > 0) {
    c.cartData = { merchantId: Number(cfg.merchant_id), items };
    if (cfg.feed_country_code) c.cartData.feedCountryCode = cfg.feed_country_code;
    if (cfg.feed_language_code) c.cartData.feedLanguageCode = cfg.feed_language_code;
  }
  return c;
}

/** Why Google cannot take this conversion, or null. */
export function googleConversionProblem(c: GoogleClickConversion): string | null {
  if (!c.gclid && !c.userIdentifiers) return 'no gclid and no email or phone: Google cannot attribute the conversion to a click';
  return null;
}

interface CachedToken {
  token: string;
  expiresAt: number;
}

export type TokenResult = { ok: true; token: string } | { ok: false; outcome: JobOutcome };

/**
 * OAuth access tokens of the Google Ads connections, from their refresh
 * tokens: cached in memory and (sealed) in the database until a minute
 * before they expire, so a restart does not refresh again; concurrent callers
 * share one refresh.
 */
export class GoogleTokens {
  private readonly cache = new Map<string, CachedToken>();
  private readonly inflight = new Map<string, Promise<TokenResult>>();
  refreshes = 0;

  constructor(
    private readonly opts: {
      dispatcher: Dispatcher;
      tokenUrl: string;
      timeoutMs: number;
      /** The token stored for a connection, if any. */
      load: (connectionId: string) => Promise<CachedToken | null>;
      save: (connectionId: string, t: CachedToken) => Promise<void>;
    },
  ) {}

  invalidate(connectionId: string): void {
    this.cache.delete(connectionId);
  }

  async get(connectionId: string, secrets: GoogleSecrets, forceRefresh = false): Promise<TokenResult> {
    const now = Date.now();
    if (!forceRefresh) {
      const hit = this.cache.get(connectionId) ?? (await this.opts.load(connectionId)) ?? undefined;
      if (hit && hit.expiresAt - 60_000 > now) {
        this.cache.set(connectionId, hit);
        return { ok: true, token: hit.token };
      }
    }
    let p = this.inflight.get(connectionId);
    if (!p) {
      p = this.refresh(connectionId, secrets).finally(() => this.inflight.delete(connectionId));
      this.inflight.set(connectionId, p);
    }
    return p;
  }

  private async refresh(connectionId: string, secrets: GoogleSecrets): Promise<TokenResult> {
    this.refreshes++;
    const x = await post({
      dispatcher: this.opts.dispatcher,
      url: this.opts.tokenUrl,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        client_id: secrets.client_id,
        client_secret: secrets.client_secret,
        refresh_token: secrets.refresh_token,
      }).toString(),
      timeoutMs: this.opts.timeoutMs,
    });
    if (!x.ok) return { ok: false, outcome: { ...networkOutcome(x), message: `OAuth token refresh: ${x.message}` } };
    const { status, json, text } = x.res;
    const body = (json ?? {}) as { access_token?: unknown; expires_in?: unknown; error?: unknown; error_description?: unknown };
    if (status === 200 && typeof body.access_token === 'string' && body.access_token) {
      const ttl = typeof body.expires_in === 'number' && body.expires_in > 0 ? body.expires_in : 3600;
      const t = { token: body.access_token, expiresAt: Date.now() + ttl * 1000 };
      this.cache.set(connectionId, t);
      await this.opts.save(connectionId, t);
      return { ok: true, token: t.token };
    }
    // Never echo the token endpoint's body: keep only its error code and description.
    const reason = typeof body.error === 'string' ? `${body.error}${typeof body.error_description === 'string' ? `: ${body.error_description.slice(0, 200)}` : ''}` : `status ${status}`;
    return {
      ok: false,
      outcome: {
        ok: false,
        status,
        latencyMs: x.latencyMs,
        errorClass: status === 429 || status >= 500 ? 'http_status' : 'auth',
        message: `OAuth token refresh failed (${reason})`,
        excerpt: typeof body.error === 'string' ? null : excerpt(text.replace(/ya29\.[\w-]+/g, '[redacted]')),
        // An operator can fix refresh credentials with `svc adplatform update`; keep retrying on the schedule.
        retryable: true,
      },
    };
  }
}

interface GoogleAdsError {
  errorCode?: Record<string, string>;
  message?: string;
  location?: { fieldPathElements?: { fieldName?: string; index?: number }[] };
}

/** Partial-failure error kinds that a later attempt may get past. */
const TRANSIENT_ERROR_KINDS = new Set(['internalError', 'quotaError', 'databaseError']);

/**
 * Uploads click conversions with partialFailure on: the answer says, per
 * conversion, which ones failed (partialFailureError locations
 * `conversions[i]`); the others are accepted.
 */
export async function sendGoogle(opts: {
  dispatcher: Dispatcher;
  baseUrl: string;
  apiVersion: string;
  timeoutMs: number;
  connectionId: string;
  config: GoogleConfig;
  secrets: GoogleSecrets;
  tokens: GoogleTokens;
  conversions: readonly GoogleClickConversion[];
}): Promise<JobOutcome[]> {
  const url = `${opts.baseUrl.replace(/\/+$/, '')}/${opts.apiVersion}/customers/${opts.config.customer_id}:uploadClickConversions`;
  return sendBisecting(opts.conversions, async (batch) => {
    const all = (o: JobOutcome) => batch.map(() => o);
    let refreshed = false;
    for (;;) {
      const token = await opts.tokens.get(opts.connectionId, opts.secrets, refreshed);
      if (!token.ok) return { outcomes: all(token.outcome), splittable: false };
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        authorization: `Bearer ${token.token}`,
        'developer-token': opts.secrets.developer_token,
      };
      if (opts.config.login_customer_id) headers['login-customer-id'] = opts.config.login_customer_id;
      const x = await post({
        dispatcher: opts.dispatcher,
        url,
        headers,
        body: JSON.stringify({ conversions: batch, partialFailure: true }),
        timeoutMs: opts.timeoutMs,
      });
      if (!x.ok) return { outcomes: all(networkOutcome(x)), splittable: false };
      const { status, json, text, retryAfterMs } = x.res;
      if (status === 401 && !refreshed) {
        // The cached token was revoked or expired early: refresh once and try again.
        opts.tokens.invalidate(opts.connectionId);
        refreshed = true;
        continue;
      }
      const base = { ok: false, status, latencyMs: x.latencyMs, excerpt: excerpt(text), retryAfterMs };
      const topMessage = (json as { error?: { message?: string } } | undefined)?.error?.message;
      const detail = topMessage ? `: ${topMessage.slice(0, 300)}` : '';
      if (status >= 200 && status < 300) return { outcomes: perConversion(batch.length, json, status, x.latencyMs, text), splittable: false };
      if (status === 429 || status >= 500) {
        return { outcomes: all({ ...base, errorClass: status === 429 ? 'rate_limited' : 'http_status', message: `Google Ads answered ${status}${detail}`, retryable: true }), splittable: false };
      }
      if (status === 401 || status === 403) {
        if (status === 401) opts.tokens.invalidate(opts.connectionId);
        return { outcomes: all({ ...base, errorClass: 'auth', message: `Google Ads refused the credentials (${status})${detail}`, retryable: true }), splittable: false };
      }
      return { outcomes: all({ ...base, errorClass: 'rejected', message: `Google Ads rejected the request (${status})${detail}`, retryable: false }), splittable: status === 400 };
    }
  });
}

function perConversion(n: number, json: unknown, status: number, latencyMs: number, text: string): JobOutcome[] {
  const failure = (json as { partialFailureError?: { message?: string; details?: { errors?: GoogleAdsError[] }[] } } | undefined)?.partialFailureError;
  const outcomes: JobOutcome[] = Array.from({ length: n }, () => okOutcome(status, latencyMs, ''));
  if (!failure) return outcomes.map(() => okOutcome(status, latencyMs, text));
  const errors = (failure.details ?? []).flatMap((d) => d.errors ?? []);
  let located = false;
  for (const e of errors) {
    const at = e.location?.fieldPathElements?.find((f) => f.fieldName === 'conversions')?.index;
    if (at === undefined || at < 0 || at >= n) continue;
    located = true;
    const kind = Object.keys(e.errorCode ?? {})[0] ?? 'unknown';
    const code = kind !== 'unknown' ? `${kind}.${e.errorCode![kind]}` : 'unknown';
    const prev = outcomes[at]!;
    outcomes[at] = {
      ok: false,
      status,
      latencyMs,
      errorClass: TRANSIENT_ERROR_KINDS.has(kind) ? 'http_status' : 'rejected',
      message: `${prev.ok ? '' : `${prev.message}; `}${code}: ${(e.message ?? '').slice(0, 300)}`,
      excerpt: null,
      retryable: TRANSIENT_ERROR_KINDS.has(kind) && (prev.ok || prev.retryable),
    };
  }
  if (!located) {
    // A partial failure that names no conversion: nothing says which were accepted.
    const message = `Google Ads reported a partial failure naming no conversion: ${(failure.message ?? '').slice(0, 300)}`;
    return outcomes.map(() => ({ ok: false, status, latencyMs, errorClass: 'bad_response', message, excerpt: excerpt(text), retryable: true }));
  }
  return outcomes;
}

import http from 'node:http';
import { isIP, type AddressInfo } from 'node:net';

/**
 * Local stand-ins for the Meta Conversions API, Google's OAuth token endpoint
 * and the Google Ads API, checking requests the way those platforms do
 * (../shared/ADPLATFORMS.md): required fields, hash format, batch limits,
 * credentials. They de-duplicate as the platforms do (Meta by event_name +
 * event_id, Google by orderId), and tests can make them answer errors, 429s
 * and slow answers.
 */

const HEX64 = /^[0-9a-f]{64}$/;
export const META_TOKEN = 'EAAtestmetaaccesstoken0123456789';
export const GOOGLE = {
  developerToken: 'dev-token-0123456789',
  clientId: 'client-id-0123456789.apps.googleusercontent.com',
  clientSecret: 'client-secret-0123',
  refreshToken: '1//refresh-token-0123456789',
};

export interface MockRequest {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** An answer override for the next request to a route: a status and body, or a delay before the normal answer. */
export type Override = { status: number; body?: unknown; headers?: Record<string, string> } | { delayMs: number } | { gate: Promise<void> };

type Json = Record<string, any>;

function metaEventProblems(e: Json, now: number): string | null {
  if (e.event_name !== 'Purchase') return 'event_name';
  if (!Number.isInteger(e.event_time)) return 'event_time must be an integer (seconds)';
  if (e.event_time > now / 1000 + 60) return 'event_time in the future (milliseconds sent as seconds?)';
  if (now / 1000 - e.event_time > 7 * 86400) return 'event_time older than 7 days';
  if (e.action_source !== 'website') return 'action_source';
  if (typeof e.event_source_url !== 'string' || !/^https?:\/\//.test(e.event_source_url)) return 'event_source_url required for website events';
  const u = e.user_data as Json | undefined;
  if (!u || typeof u.client_user_agent !== 'string' || !u.client_user_agent) return 'user_data.client_user_agent required for website events';
  for (const k of ['em', 'ph', 'external_id']) {
    if (u[k] === undefined) continue;
    const vals = Array.isArray(u[k]) ? u[k] : [u[k]];
    if (!vals.every((v: unknown) => typeof v === 'string' && HEX64.test(v))) return `user_data.${k} must be SHA-256 hex`;
  }
  if (u.client_ip_address !== undefined && isIP(u.client_ip_address) === 0) return 'client_ip_address must be an unhashed IP';
  if (u.fbc !== undefined && !/^fb\.1\.\d{13}\.\S+$/.test(u.fbc)) return 'fbc must be fb.1.{ms}.{fbclid}';
  const c = e.custom_data as Json | undefined;
  if (c) {
    if (c.value !== undefined && (typeof c.value !== 'number' || !/^[A-Z]{3}$/.test(c.currency ?? ''))) return 'value needs an ISO 4217 currency';
    for (const item of c.contents ?? []) {
      if (typeof item.id !== 'string' || !Number.isInteger(item.quantity) || typeof item.item_price !== 'number') return 'contents';
    }
  }
  return null;
}

function googleConversionProblems(c: Json, cid: string): string | null {
  if (typeof c.conversionAction !== 'string' || !new RegExp(`^customers/${cid}/conversionActions/\\d+$`).test(c.conversionAction)) return 'conversionAction';
  if (typeof c.conversionDateTime !== 'string' || !/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}$/.test(c.conversionDateTime)) return 'conversionDateTime';
  if (typeof c.orderId !== 'string' || !c.orderId) return 'orderId';
  if (c.conversionValue !== undefined && !/^[A-Z]{3}$/.test(c.currencyCode ?? '')) return 'currencyCode';
  for (const id of c.userIdentifiers ?? []) {
    const keys = Object.keys(id);
    if (keys.length !== 1 || !['hashedEmail', 'hashedPhoneNumber'].includes(keys[0]!) || !HEX64.test(id[keys[0]!])) return 'userIdentifiers';
  }
  if (!c.gclid && !c.userIdentifiers) return 'no click id and no user identifiers';
  if (c.cartData) {
    if (!Number.isInteger(c.cartData.merchantId)) return 'cartData.merchantId';
    for (const i of c.cartData.items ?? []) if (typeof i.productId !== 'string' || !Number.isInteger(i.quantity) || typeof i.unitPrice !== 'number') return 'cartData.items';
  }
  return null;
}

export async function startAdPlatforms() {
  const requests: { meta: MockRequest[]; google: MockRequest[]; oauth: MockRequest[] } = { meta: [], google: [], oauth: [] };
  /** Accepted events by event_id (Meta) and conversions by orderId (Google), with how many times each arrived. */
  const meta = new Map<string, { event: Json; arrivals: number }>();
  const google = new Map<string, { conversion: Json; arrivals: number }>();
  const overrides: { meta: Override[]; google: Override[]; oauth: Override[] } = { meta: [], google: [], oauth: [] };
  /** Meta rejects (400) a request holding an event with one of these order ids, as it does an invalid event. */
  const metaPoison = new Set<string>();
  /** Google reports a partial failure for these order ids. */
  const googleReject = new Set<string>();
  const tokens = new Set<string>();
  let issued = 0;

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: MockRequest = { path: req.url ?? '/', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(body));
      };
      const route = /\/events$/.test(r.path) ? 'meta' : r.path.endsWith(':uploadClickConversions') ? 'google' : r.path === '/token' ? 'oauth' : null;
      if (!route) return send(404, { error: 'no such route' });
      requests[route].push(r);
      const o = overrides[route].shift();
      const answer = () => {
        if (o && 'status' in o) return send(o.status, o.body ?? {}, o.headers);
        if (route === 'oauth') return handleOauth(r, send);
        if (route === 'meta') return handleMeta(r, send);
        return handleGoogle(r, send);
      };
      if (o && 'delayMs' in o) setTimeout(answer, o.delayMs);
      else if (o && 'gate' in o) void o.gate.then(answer);
      else answer();
    });
  });

  function handleOauth(r: MockRequest, send: (s: number, b: unknown) => void) {
    const f = new URLSearchParams(r.body);
    if (f.get('grant_type') !== 'refresh_token') return send(400, { error: 'unsupported_grant_type' });
    if (f.get('client_id') !== GOOGLE.clientId || f.get('client_secret') !== GOOGLE.clientSecret) return send(401, { error: 'invalid_client' });
    if (f.get('refresh_token') !== GOOGLE.refreshToken) return send(400, { error: 'invalid_grant', error_description: 'Token has been expired or revoked.' });
    const token = `ya29.mock-${++issued}`;
    tokens.add(token);
    send(200, { access_token: token, expires_in: 3599, token_type: 'Bearer', scope: 'https://www.googleapis.com/auth/adwords' });
  }

  function handleMeta(r: MockRequest, send: (s: number, b: unknown) => void) {
    let body: Json;
    try {
      body = JSON.parse(r.body) as Json;
    } catch {
      return send(400, { error: { message: 'Invalid JSON', type: 'OAuthException', code: 100 } });
    }
    if (body.access_token !== META_TOKEN) return send(401, { error: { message: 'Invalid OAuth access token.', type: 'OAuthException', code: 190 } });
    const data = body.data as Json[] | undefined;
    if (!Array.isArray(data) || data.length === 0 || data.length > 1000) return send(400, { error: { message: 'data must hold 1 to 1000 events', code: 100 } });
    const now = Date.now();
    for (const [i, e] of data.entries()) {
      const p = metaEventProblems(e, now) ?? (metaPoison.has(e.event_id) ? 'poisoned by the test' : null);
      if (p) return send(400, { error: { message: `Invalid parameter: event ${i}: ${p}`, type: 'OAuthException', code: 100, error_subcode: 2804050, is_transient: false } });
    }
    for (const e of data) {
      const key = `${e.event_name}:${e.event_id}`;
      const prev = meta.get(key);
      meta.set(key, { event: prev?.event ?? e, arrivals: (prev?.arrivals ?? 0) + 1 });
    }
    send(200, { events_received: data.length, messages: [], fbtrace_id: 'AbCdEf' });
  }

  function handleGoogle(r: MockRequest, send: (s: number, b: unknown) => void) {
    const auth = r.headers.authorization ?? '';
    if (!auth.startsWith('Bearer ') || !tokens.has(auth.slice(7))) return send(401, { error: { code: 401, message: 'Request had invalid authentication credentials.', status: 'UNAUTHENTICATED' } });
    if (r.headers['developer-token'] !== GOOGLE.developerToken) return send(403, { error: { code: 403, message: 'The developer token is not valid.', status: 'PERMISSION_DENIED' } });
    const cid = /customers\/(\d{10}):uploadClickConversions$/.exec(r.path)?.[1];
    if (!cid) return send(400, { error: { code: 400, message: 'customer id', status: 'INVALID_ARGUMENT' } });
    const body = JSON.parse(r.body) as Json;
    if (body.partialFailure !== true) return send(400, { error: { code: 400, message: 'partialFailure must be true', status: 'INVALID_ARGUMENT' } });
    const conversions = body.conversions as Json[];
    if (!Array.isArray(conversions) || conversions.length === 0 || conversions.length > 2000) return send(400, { error: { code: 400, message: 'conversions: 1 to 2000', status: 'INVALID_ARGUMENT' } });
    const errors: Json[] = [];
    const results: Json[] = [];
    conversions.forEach((c, index) => {
      const p = googleConversionProblems(c, cid) ?? (googleReject.has(c.orderId) ? 'rejected by the test' : null);
      if (p) {
        errors.push({
          errorCode: { conversionUploadError: p === 'rejected by the test' ? 'UNPARSEABLE_GCLID' : 'INVALID_ARGUMENT' },
          message: p,
          location: { fieldPathElements: [{ fieldName: 'conversions', index }] },
        });
        results.push({});
        return;
      }
      const prev = google.get(c.orderId);
      google.set(c.orderId, { conversion: prev?.conversion ?? c, arrivals: (prev?.arrivals ?? 0) + 1 });
      results.push({ gclid: c.gclid, conversionAction: c.conversionAction, conversionDateTime: c.conversionDateTime });
    });
    const out: Json = { results };
    if (errors.length > 0) {
      out.partialFailureError = {
        code: 3,
        message: errors.map((e) => e.message).join(', '),
        details: [{ '@type': 'type.googleapis.com/google.ads.googleads.v22.errors.GoogleAdsFailure', errors }],
      };
    }
    send(200, out);
  }

  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    requests,
    meta,
    google,
    overrides,
    metaPoison,
    googleReject,
    /** Revokes every access token issued so far (the next Ads call answers 401). */
    revokeTokens: () => tokens.clear(),
    get tokensIssued() {
      return issued;
    },
    /** The environment that points svc at this mock. */
    env: {
      SVC_META_BASE_URL: url,
      SVC_GOOGLE_ADS_BASE_URL: url,
      SVC_GOOGLE_OAUTH_TOKEN_URL: `${url}/token`,
    } as Record<string, string>,
    async until(cond: () => boolean, timeoutMs = 20_000, what = 'condition'): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      while (!cond()) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { z } from 'zod';
import { AppError } from '../errors/app-error.js';
import { isUtf8 } from 'node:buffer';
import { readBody } from '../http/body.js';
import { checkJsonText, jsonProblemError } from '../http/json-guard.js';
import { sendFailure, sendJson } from '../http/respond.js';
import { validationError } from '../errors/validation.js';
import { takePublicLimit, type RateLimiter } from '../http/rate-limit.js';
import type { IngestionService, RequestContext } from '../domain/ingestion/service.js';
import { BODY_LIMITS, type IngestPath } from './limits.js';
import type { SiteRow } from '../store/sites.js';
import { commonEvent, convertSchema, eventSchema, identifySchema, idempotencyKeySchema, leadSchema, scoreSchema } from '../domain/ingestion/schemas.js';
import { clientAddress, visitorCookie, type OriginPolicy } from './origins.js';

export interface IngestDeps {
  service: IngestionService;
  /** Per client address; null when rate limiting is off. */
  ipLimiter: RateLimiter | null;
  /** Per site; null when rate limiting is off. */
  siteLimiter: RateLimiter | null;
  trustProxy: boolean;
  /** The CORS check of browser requests (Origin must be one of the site's). */
  origins: OriginPolicy;
  /** Logs an unexpected failure of `req` (with its request id). */
  onUnexpected: (err: unknown, path: string, req: IncomingMessage) => void;
}

interface Route {
  schema: z.ZodType<{ site_id: string; idempotency_key?: string | undefined }>;
  /** The common body checked without the schema (see commonEvent): the body itself when valid beyond doubt, else null (the schema decides). */
  fast?: (body: Record<string, unknown>) => { site_id: string; idempotency_key?: string | undefined } | null;
  status: number;
  run: (deps: IngestDeps, input: never, raw: string, ctx: RequestContext, site: SiteRow) => Promise<unknown>;
}

const ROUTES: Record<IngestPath, Route> = {
  '/api/identify': { schema: identifySchema, status: 200, run: (d, i, _r, c) => d.service.identify(i, c) },
  '/api/convert': { schema: convertSchema, status: 201, run: (d, i, _r, c) => d.service.convert(i, c) },
  '/api/lead/capture': { schema: leadSchema, status: 201, run: (d, i, _r, c) => d.service.captureLead(i, c) },
  '/api/events': { schema: eventSchema, fast: commonEvent, status: 201, run: (d, i, r, c, s) => d.service.recordEvent(i, r, c, s) },
  '/api/score': { schema: scoreSchema, status: 201, run: (d, i, r, c) => d.service.recordScore(i, r, c) },
};

/** The ingestion paths this router answers. */
export function isIngestPath(pathname: string): pathname is IngestPath {
  return Object.prototype.hasOwnProperty.call(ROUTES, pathname);
}

/**
 * Handles one ingestion request on the bare node:http request/response pair.
 * Order: method, client-address limit, body (streamed, capped), content type,
 * JSON, schema, site, browser origin, site limit, then the write (or the first
 * answer of its idempotency key); every refusal stores nothing.
 */
export async function handleIngest(deps: IngestDeps, path: IngestPath, req: IncomingMessage, res: ServerResponse): Promise<void> {
  res.setHeader('Access-Control-Allow-Origin', '*');
  const limit = BODY_LIMITS[path];
  try {
    if (req.method === 'OPTIONS') {
      req.resume();
      await deps.origins.preflight(req, res, 'POST, OPTIONS');
      return;
    }
    if (req.method !== 'POST') {
      req.resume();
      throw new AppError('method_not_allowed', `${req.method} is not allowed on ${path}; use POST`, {}, { Allow: 'POST, OPTIONS' });
    }
    const ip = clientAddress(req, deps.trustProxy);
    if (deps.ipLimiter) {
      try {
        await takePublicLimit(deps.ipLimiter, 'client_address', ip);
      } catch (err) {
        req.resume(); // the body is not read: drain it so the connection stays usable
        throw err;
      }
    }
    const body = await readBody(req, limit);
    if (!body.ok) {
      const observed = body.complete ? `${body.size}` : `at least ${body.size}`;
      const headers: Record<string, string> = {
        'X-SVC-Body-Limit': String(limit),
        'X-SVC-Body-Size': String(body.size),
      };
      if (!body.complete) headers.Connection = 'close';
      throw new AppError(
        'payload_too_large',
        `request body is ${observed} bytes; the limit for ${path} is ${limit} bytes. Nothing was stored; split the data across requests`,
        { limit, size: body.size, complete: body.complete },
        headers,
      );
    }
    // The two exact spellings clients send skip the split, trim and lower-casing (the same answer).
    const given = req.headers['content-type'];
    const type = given === 'application/json' || given === 'text/plain' ? given : (given ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/json' && type !== 'text/plain') {
      throw new AppError(
        'unsupported_media_type',
        `Content-Type must be application/json (or text/plain for browser beacons), got ${type ? JSON.stringify(type) : 'none'}`,
        { content_type: type },
      );
    }
    if (!isUtf8(body.body)) {
      throw new AppError('invalid_json', 'body is not valid UTF-8; nothing was stored', {});
    }
    const raw = body.body.toString('utf8');
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch (err) {
      throw new AppError('invalid_json', `body is not valid JSON: ${(err as Error).message}`, {});
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw new AppError('validation_failed', 'body must be a JSON object', { field: '(body)' });
    }
    const problem = checkJsonText(raw);
    if (problem) throw jsonProblemError(problem);
    const route = ROUTES[path];
    let input = route.fast?.(parsed as Record<string, unknown>) ?? null;
    if (input === null) {
      const result = route.schema.safeParse(parsed);
      if (!result.success) throw validationError(result.error);
      input = result.data;
    }
    const site = await deps.service.site(input.site_id);
    deps.origins.check(site, req, res);
    const key = idempotencyKey(req, input.idempotency_key);
    if (deps.siteLimiter) await takePublicLimit(deps.siteLimiter, 'site', input.site_id);
    const ctx: RequestContext = {
      ip,
      userAgent: req.headers['user-agent'],
      idempotency: key === undefined ? undefined : { key, path, status: route.status },
    };
    const out = await route.run(deps, input as never, raw, ctx, site);
    // Under the site's own origin (reverse-proxied), svc keeps the visitor cookie itself (see visitorCookie).
    const visitorId = (input as { visitor_id?: unknown }).visitor_id;
    const cookie = typeof visitorId === 'string' ? visitorCookie(site, req, deps.trustProxy, visitorId) : null;
    if (cookie) res.setHeader('Set-Cookie', cookie);
    sendJson(res, route.status, out, ctx.replayed ? { 'Idempotent-Replayed': 'true' } : undefined);
  } catch (err) {
    sendFailure(res, err, () => deps.onUnexpected(err, path, req), 'internal error; nothing was stored');
  }
}

/** The Idempotency-Key header (which wins) or the body's idempotency_key; validation_failed when malformed. */
function idempotencyKey(req: IncomingMessage, fromBody: string | undefined): string | undefined {
  const header = req.headers['idempotency-key'];
  if (header === undefined) return fromBody;
  const r = idempotencyKeySchema.safeParse(Array.isArray(header) ? header.join(',') : header);
  if (!r.success) throw new AppError('validation_failed', 'Idempotency-Key: 1 to 128 printable ASCII characters without spaces', { field: 'Idempotency-Key' });
  return r.data;
}

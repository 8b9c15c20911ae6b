import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import querystring from 'node:querystring';
import express, { type Request, type Response, type Router } from 'express';
import type { Logger } from 'pino';
import type { z } from 'zod';
import { AppError } from '../errors/app-error.js';
import { jsonPath, nulError } from '../errors/validation.js';
import { verifyJsonBody } from '../http/json-guard.js';
import { createRateLimiter, describePolicy, type RateLimiter } from '../http/rate-limit.js';
import { httpError, sendAsciiJson, sendError, sendJsonText } from '../http/respond.js';
import type { Store } from '../store/store.js';
import { authenticateKey, requireScope, type CallerKey } from './auth.js';
import { PresentedKeys } from '../domain/access/api-keys.js';
import { ROUTES, type RouteSpec } from './routes.js';
import { HANDLERS, noProfile, profileLookup, type PulseDeps } from './handlers.js';
import { asOneRead, findProfileFacts } from '../domain/profiles/service.js';
import { snapshotJson } from '../domain/profiles/snapshot.js';
import { buildOpenApi } from './openapi.js';
import { LOOKUP_KEYS, SHA256_HEX, profileQuerySchema } from './schemas.js';

/** Converts a zod failure into the profile API's 400 bad_request naming the field. */
export function badRequest(error: z.ZodError, where: string): AppError {
  const issues = error.issues.slice(0, 20).map((i) => ({ path: jsonPath(i.path), message: i.message }));
  const first = issues[0];
  const field = first ? first.path.replace(/^\$\.?/, '') || where : where;
  return new AppError('bad_request', first ? `${field}: ${first.message}` : `invalid ${where}`, { field, issues });
}

function parse<T>(schema: z.ZodType<T>, value: unknown, where: string): T {
  const nul = nulError(value, 'bad_request');
  if (nul) throw nul;
  const r = schema.safeParse(value);
  if (!r.success) throw badRequest(r.error, where);
  return r.data;
}

/** The path of GET /profile, answered before express when the request is a plain one (see createPulseApi). */
export const PROFILE_PATH = '/api/pulse/v1/profile';

/** Characters for which express parses a URL the slow way (parseurl); such URLs go through express. */
const UNUSUAL_URL = /[\t\n\f\r #\u00a0\ufeff]/;

/**
 * The query of GET /profile when profileQuerySchema would take it as it is:
 * only its keys, each once, within the schema's bounds (checked by a unit
 * test against the schema), no U+0000; else null, and the schema reads it
 * (and words the refusal). What the schema answers for such a query is an
 * object of the same keys and values, so the handler sees the same.
 */
const PLAIN_BOUNDS = new Map<string, { min: number; max: number; re?: RegExp }>(
  LOOKUP_KEYS.map((k) => {
    // The identifier's own string schema: its length bounds, and the SHA-256 pattern where it has one.
    const str = profileQuerySchema.shape[k].unwrap();
    return [k, { min: str.minLength ?? 0, max: str.maxLength ?? Infinity, ...(str.format === 'regex' ? { re: SHA256_HEX } : {}) }];
  }),
);
export function plainProfileQuery(query: Record<string, unknown>): Record<string, unknown> | null {
  for (const k in query) {
    const v = query[k];
    if (typeof v !== 'string') return null;
    if (k === 'include_pii') {
      if (v !== 'true' && v !== 'false') return null;
      continue;
    }
    const b = PLAIN_BOUNDS.get(k);
    if (b === undefined || v.length < b.min || v.length > b.max || v.includes('\u0000') || (b.re !== undefined && !b.re.test(v))) return null;
  }
  return query;
}

type SetHeaders = (headers: Record<string, string>) => void;

/** What every route runs before its handler: key authentication, its per-key rate limit, its scope. */
async function admit(keys: PresentedKeys, spec: RouteSpec, limiter: RateLimiter | null, req: { headers: IncomingHttpHeaders }, setHeaders: SetHeaders): Promise<CallerKey> {
  const key = await authenticateKey(keys, req);
  if (limiter) {
    const d = await limiter.take(key.id);
    setHeaders(limiter.headers(d));
    if (!d.ok) {
      throw new AppError('rate_limited', `rate limit exceeded for this key: ${describePolicy(spec.limit)}`, {
        limit: spec.limit.rate,
        window_seconds: spec.limit.windowMs / 1000,
        burst: spec.limit.burst,
        retry_after_seconds: d.retryAfterSeconds,
      });
    }
  }
  requireScope(key, spec.scope, routeName(spec));
  return key;
}

/** `GET /api/pulse/v1/profile`: a route as a refusal names it, written once per route, not per request. */
const ROUTE_NAMES = new Map<RouteSpec, string>();
function routeName(spec: RouteSpec): string {
  let name = ROUTE_NAMES.get(spec);
  if (name === undefined) ROUTE_NAMES.set(spec, (name = `${spec.method.toUpperCase()} /api/pulse/v1${spec.path}`));
  return name;
}

/** The profile API's own refusals of what express or a schema threw (then the app's error formatter). */
function pulseError(err: unknown): unknown {
  const type = (err as { type?: string } | null)?.type;
  if (type === 'entity.parse.failed') return new AppError('bad_request', 'body is not valid JSON', { field: '(body)' });
  if (err instanceof AppError && err.code === 'validation_failed') return new AppError('bad_request', err.message, err.details);
  if (type === 'entity.too.large') return new AppError('payload_too_large', 'request body is over 64 KiB', { limit: 65_536 });
  return err;
}

/** The /api/pulse/v1 surface: its express router, and GET /profile answered without express. */
export interface PulseApi {
  router: Router;
  /**
   * Answers `GET /api/pulse/v1/profile?...` as the router would, byte for
   * byte, without express (the hot read path): true when it took the request;
   * false for anything it leaves to the router (another method, a
   * conditional request, a URL express parses the slow way).
   */
  answerProfile: (req: IncomingMessage, res: ServerResponse, url: string) => boolean;
}

/**
 * The /api/pulse/v1 router. Each route of ROUTES gets: key authentication,
 * its per-key rate limit, its scope, request validation with its schemas,
 * then its handler. openapi.json is served from the same ROUTES.
 */
export function createPulseApi(store: Store, deps: Omit<PulseDeps, 'store'>, logger: Logger): PulseApi {
  const router = express.Router();
  const full: PulseDeps = { store, ...deps };
  const keys = new PresentedKeys(store);
  const openapi = buildOpenApi();
  router.get('/openapi.json', (req, res) => {
    if (!req.accepts('application/json')) throw new AppError('not_acceptable', 'openapi.json is served as application/json only; accept it (or */*)');
    res.json(openapi);
  });
  const jsonBody = express.json({ limit: '64kb', strict: true, type: () => true, verify: verifyJsonBody });
  // One limiter per route, shared by the router and the path answered before it (one budget per key).
  const limiters = new Map<RouteSpec, RateLimiter | null>();
  for (const spec of ROUTES) {
    const limiter = deps.rateLimit ? createRateLimiter(store, spec.limit) : null;
    limiters.set(spec, limiter);
    const expressPath = spec.path.replace(/\{(\w+)\}/g, ':$1');
    const handler = HANDLERS[spec.operationId];
    if (!handler) throw new Error(`no handler for ${spec.operationId}`);
    const chain = [
      async (req: Request, res: Response, next: (err?: unknown) => void) => {
        res.locals.key = await admit(keys, spec, limiter, req, (h) => res.set(h));
        next();
      },
      ...(spec.body ? [jsonBody] : []),
      async (req: Request, res: Response) => {
        const key = res.locals.key as CallerKey;
        const nul = nulError(req.params, 'bad_request');
        if (nul) throw nul;
        const query = spec.query ? parse(spec.query, req.query, 'query') : {};
        const body = spec.body ? parse(spec.body, req.body, 'body') : undefined;
        const result = await handler(full, { key, query, body, params: req.params as Record<string, string> });
        if (spec.status === 204) res.status(204).end();
        else res.status(spec.status).json(result);
      },
    ];
    router[spec.method](expressPath, ...chain);
  }
  router.use((err: unknown, _req: Request, _res: Response, next: (err?: unknown) => void) => {
    next(pulseError(err));
  });

  const profileSpec = ROUTES.find((r) => r.operationId === 'getProfile')!;
  const profileLimiter = limiters.get(profileSpec)!;
  const profileQuery = profileSpec.query!;

  // What express does for this route: the chain above, res.json's bytes and headers, the app's error formatter.
  // The key, the profile and its facts are read together (on SQLite in one read transaction: the locks taken once).
  async function serveProfile(req: IncomingMessage, res: ServerResponse, search: string): Promise<void> {
    // Whether this request's snapshot is all ASCII (set by snapshotJson): its own, as requests interleave at awaits.
    const body = { ascii: false };
    const text = await asOneRead(store, async () => {
      const key = await admit(keys, profileSpec, profileLimiter, req, (h) => {
        for (const k in h) res.setHeader(k, String(h[k]));
      });
      const given = querystring.parse(search) as Record<string, unknown>;
      const query = plainProfileQuery(given) ?? (parse(profileQuery, given, 'query') as Record<string, unknown>);
      // HANDLERS.getProfile's checks (lookUpProfile's), the profile and its facts read together (on SQLite by one
      // statement), and its snapshot's JSON written directly (the same bytes as JSON.stringify of it).
      const { kind, value, pii } = profileLookup(key, query);
      const found = findProfileFacts(store, key.siteId, kind, value);
      const facts = found instanceof Promise ? await found : found;
      if (facts === undefined) throw noProfile(kind);
      return snapshotJson(facts, pii, body);
    });
    // All ASCII (the usual answer): its length is its length in characters, and node writes it with the head as
    // one Latin-1 string (the same bytes as UTF-8), flattened and copied once. Otherwise encoded once: its length
    // and its bytes from one pass (a string would be measured, then joined to the head and flattened and encoded
    // again by the socket write).
    if (body.ascii) sendAsciiJson(res, text);
    else sendJsonText(res, 200, Buffer.from(text, 'utf8'));
  }

  const answerProfile = (req: IncomingMessage, res: ServerResponse, url: string): boolean => {
    if (req.method !== 'GET' || req.headers['if-none-match'] !== undefined || req.headers['if-modified-since'] !== undefined || UNUSUAL_URL.test(url)) return false;
    const q = url.indexOf('?');
    serveProfile(req, res, q === -1 ? '' : url.slice(q + 1)).catch((err: unknown) => {
      const e = httpError(pulseError(err), req, url, logger);
      if (!res.headersSent) sendError(res, e);
    });
    return true;
  };

  return { router, answerProfile };
}

export type { RouteSpec };

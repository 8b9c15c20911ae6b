import express, { type Request, type Response, type Router } from 'express';
import type { z } from 'zod';
import { AppError } from '../errors/app-error.js';
import { jsonPath } from '../errors/validation.js';
import { verifyJsonBody } from '../http/json-guard.js';
import { createRateLimiter, describePolicy } from '../http/rate-limit.js';
import type { Store } from '../store/store.js';
import { authenticateKey, requireScope, type CallerKey } from './auth.js';
import { ROUTES, type RouteSpec } from './routes.js';
import { HANDLERS, type PulseDeps } from './handlers.js';
import { buildOpenApi } from './openapi.js';

/** Converts a zod failure into the profile API's 400 bad_request naming the field. */
export function badRequest(error: z.ZodError, where: string): AppError {
  const issues = error.issues.slice(0, 20).map((i) => ({ path: jsonPath(i.path), message: i.message }));
  const first = issues[0];
  const field = first ? first.path.replace(/^\$\.?/, '') || where : where;
  return new AppError('bad_request', first ? `${field}: ${first.message}` : `invalid ${where}`, { field, issues });
}

function parse<T>(schema: z.ZodType<T>, value: unknown, where: string): T {
  const r = schema.safeParse(value);
  if (!r.success) throw badRequest(r.error, where);
  return r.data;
}

/**
 * The /api/pulse/v1 router. Each route of ROUTES gets: key authentication,
 * its per-key rate limit, its scope, request validation with its schemas,
 * then its handler. openapi.json is served from the same ROUTES.
 */
export function createPulseRouter(store: Store, deps: Omit<PulseDeps, 'store'>): Router {
  const router = express.Router();
  const full: PulseDeps = { store, ...deps };
  const openapi = buildOpenApi();
  router.get('/openapi.json', (req, res) => {
    if (!req.accepts('application/json')) throw new AppError('not_acceptable', 'openapi.json is served as application/json only; accept it (or */*)');
    res.json(openapi);
  });
  const jsonBody = express.json({ limit: '64kb', strict: true, type: () => true, verify: verifyJsonBody });
  for (const spec of ROUTES) {
    const limiter = deps.rateLimit ? createRateLimiter(store, spec.limit) : null;
    const expressPath = spec.path.replace(/\{(\w+)\}/g, ':$1');
    const handler = HANDLERS[spec.operationId];
    if (!handler) throw new Error(`no handler for ${spec.operationId}`);
    const chain = [
      async (req: Request, res: Response, next: (err?: unknown) => void) => {
        const key = await authenticateKey(store, req);
        res.locals.key = key;
        if (limiter) {
          const d = await limiter.take(key.id);
          res.set(limiter.headers(d));
          if (!d.ok) {
            throw new AppError('rate_limited', `rate limit exceeded for this key: ${describePolicy(spec.limit)}`, {
              limit: spec.limit.rate,
              window_seconds: spec.limit.windowMs / 1000,
              burst: spec.limit.burst,
              retry_after_seconds: d.retryAfterSeconds,
            });
          }
        }
        requireScope(key, spec.scope, `${spec.method.toUpperCase()} /api/pulse/v1${spec.path}`);
        next();
      },
      ...(spec.body ? [jsonBody] : []),
      async (req: Request, res: Response) => {
        const key = res.locals.key as CallerKey;
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
    const type = (err as { type?: string } | null)?.type;
    if (type === 'entity.parse.failed') next(new AppError('bad_request', 'body is not valid JSON', { field: '(body)' }));
    else if (err instanceof AppError && err.code === 'validation_failed') next(new AppError('bad_request', err.message, err.details));
    else if (type === 'entity.too.large') next(new AppError('payload_too_large', 'request body is over 64 KiB', { limit: 65_536 }));
    else next(err);
  });
  return router;
}

export type { RouteSpec };

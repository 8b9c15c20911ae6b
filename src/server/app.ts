import express, { type ErrorRequestHandler, type Express } from 'express';
import { AppError, toAppError } from '../errors/app-error.js';
import type { Logger } from 'pino';
import { redactUrl } from '../log.js';
import { loggerFor } from '../http/request-context.js';
import { sendError } from '../http/respond.js';

/**
 * The express application for every surface except the ingestion hot path.
 * Later surfaces (MCP, profile REST API) mount their routers here.
 */
export function createApp(opts: { logger: Logger; version: string }): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.get('/healthz', (_req, res) => {
    res.json({ ok: true, version: opts.version });
  });
  return app;
}

/** Final handlers: JSON 404 for unknown paths and the one error formatter of the HTTP surfaces. */
export function finishApp(app: Express, logger: Logger): void {
  app.use((req, _res, next) => {
    next(new AppError('not_found', `no route for ${req.method} ${redactUrl(req.path)}`));
  });
  const onError: ErrorRequestHandler = (err, req, res, _next) => {
    let e: AppError;
    const status = (err as { status?: number; type?: string }).status;
    if (err instanceof AppError) e = err;
    else if ((err as { type?: string }).type === 'entity.parse.failed') e = new AppError('invalid_json', 'body is not valid JSON');
    else if ((err as { type?: string }).type === 'entity.too.large') e = new AppError('payload_too_large', 'request body is too large');
    else if (typeof status === 'number' && status >= 400 && status < 500) e = new AppError('bad_request', String((err as Error).message ?? 'bad request'));
    else {
      loggerFor(req, logger).error({ err: { message: (err as Error)?.message, name: (err as Error)?.name }, path: redactUrl(req.originalUrl.split('?')[0]!) }, 'unexpected error');
      e = toAppError(err);
    }
    if (res.headersSent) return;
    sendError(res, e);
  };
  app.use(onError);
}

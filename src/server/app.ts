import express, { type ErrorRequestHandler, type Express } from 'express';
import { AppError } from '../errors/app-error.js';
import type { Logger } from 'pino';
import { redactUrl } from '../log.js';
import { httpError, sendError } from '../http/respond.js';

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
    const e = httpError(err, req, req.originalUrl, logger);
    if (res.headersSent) return;
    sendError(res, e);
  };
  app.use(onError);
}

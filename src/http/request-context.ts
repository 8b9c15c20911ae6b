import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import type { AppError } from '../errors/app-error.js';

/** What an incoming X-Request-Id may be to be kept: 1 to 128 visible ASCII characters of the usual id alphabets. */
const REQUEST_ID = /^[A-Za-z0-9._~:+/=@-]{1,128}$/;

/**
 * The id of one request and what the surfaces note about it: the log lines
 * about it carry the id (the child logger is made on first use, so a request
 * that logs nothing costs no logger), and the error it was refused with is
 * noted for /metrics.
 */
export class RequestContext {
  private child: Logger | null = null;
  /** The error code it was answered with, and the rate-limit scope of a 429. */
  error: { code: string; scope: string | null } | null = null;

  constructor(
    readonly id: string,
    readonly startedAt: number,
    private readonly base: Logger,
  ) {}

  /** The logger for lines about this request: every line carries `request_id`. */
  get log(): Logger {
    this.child ??= this.base.child({ request_id: this.id });
    return this.child;
  }
}

const CONTEXT = Symbol('svc.request');
type WithContext = IncomingMessage & { [CONTEXT]?: RequestContext };

/**
 * The id of a request: the incoming `X-Request-Id` when the proxy in front is
 * trusted (SVC_TRUST_PROXY) and the value is a plausible id, else a new UUID.
 */
export function requestIdFor(req: IncomingMessage, trustProxy: boolean): string {
  if (trustProxy) {
    const given = req.headers['x-request-id'];
    const v = Array.isArray(given) ? given[0] : given;
    if (v !== undefined && REQUEST_ID.test(v)) return v;
  }
  return randomUUID();
}

/** Starts the context of a request (the server does this first, for every request). */
export function beginRequest(req: IncomingMessage, id: string, logger: Logger): RequestContext {
  const ctx = new RequestContext(id, performance.now(), logger);
  (req as WithContext)[CONTEXT] = ctx;
  return ctx;
}

/** The context of a request, when the server began one. */
export function requestContext(req: IncomingMessage | undefined): RequestContext | undefined {
  return req === undefined ? undefined : (req as WithContext)[CONTEXT];
}

/** The request id of a request, when it has one. */
export function requestIdOf(req: IncomingMessage | undefined): string | undefined {
  return requestContext(req)?.id;
}

/** Notes the error a request is answered with (its code, and the scope of a rate limit), for /metrics. */
export function noteError(req: IncomingMessage | undefined, e: AppError): void {
  const ctx = requestContext(req);
  if (!ctx) return;
  const scope = e.details?.scope;
  ctx.error = { code: e.code, scope: typeof scope === 'string' ? scope : null };
}

/** A logger for lines about `req`: its request's child logger, else `fallback`. */
export function loggerFor(req: IncomingMessage | undefined, fallback: Logger): Logger {
  return requestContext(req)?.log ?? fallback;
}

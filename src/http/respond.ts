import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { AppError, isStorageUnavailable, storageUnavailable, toAppError } from '../errors/app-error.js';
import { redactUrl } from '../log.js';
import { loggerFor, noteError, requestIdOf } from './request-context.js';

/** Writes a complete JSON response with an exact Content-Length. */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers?: Record<string, string>,
): void {
  sendJsonText(res, status, JSON.stringify(body), headers);
}

/**
 * A JSON answer already serialised: a string (node:http writes it with the head in one chunk) or its UTF-8
 * bytes (encoded once where the caller has them). `byteLength`: the text's length in UTF-8 bytes where the caller
 * knows it (GET /api/decide: summed from texts measured once).
 */
export function sendJsonText(res: ServerResponse, status: number, text: string | Buffer, headers?: Record<string, string>, byteLength?: number): void {
  if (headers) for (const k in headers) res.setHeader(k, headers[k]!);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': byteLength ?? (typeof text === 'string' ? Buffer.byteLength(text) : text.length),
  });
  res.end(text);
}

/**
 * A 200 JSON answer whose every character is ASCII (the caller knows it): as sendJsonText would send it, its
 * Content-Length its length in characters and its bytes written as Latin-1, which for ASCII are its UTF-8 bytes;
 * node joins it to the head and the socket writes both as one string, without a Buffer of their own.
 */
export function sendAsciiJson(res: ServerResponse, text: string): void {
  res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': text.length });
  res.end(text, 'latin1');
}

/** Writes an error's JSON body (with the request id as `error.request_id`) and notes its code for /metrics. */
export function sendError(res: ServerResponse, err: AppError): void {
  noteError(res.req, err);
  sendJson(res, err.status, err.toBody(requestIdOf(res.req)), err.headers);
}

/**
 * Answers whatever a raw (non-express) handler threw: an AppError as is, an
 * unusable store as 503 service_unavailable, anything else reported through
 * `onUnexpected` and answered 500 internal_error with `internalMessage`.
 * Nothing is written once the response has started or the client is gone.
 */
export function sendFailure(res: ServerResponse, err: unknown, onUnexpected: () => void, internalMessage = 'internal error'): void {
  if (res.headersSent || res.destroyed) return;
  if (err instanceof AppError) return sendError(res, err);
  if (isStorageUnavailable(err)) return sendError(res, storageUnavailable());
  onUnexpected();
  sendError(res, new AppError('internal_error', internalMessage));
}

/**
 * The AppError a request is answered with for what its handler threw (the
 * formatter of finishApp, also used by the paths answered before express):
 * anything unexpected is logged with the request's path (never its query).
 */
export function httpError(err: unknown, req: IncomingMessage, url: string, logger: Logger): AppError {
  const status = (err as { status?: number; type?: string }).status;
  if (err instanceof AppError) return err;
  if ((err as { type?: string }).type === 'entity.parse.failed') return new AppError('invalid_json', 'body is not valid JSON');
  if ((err as { type?: string }).type === 'entity.too.large') return new AppError('payload_too_large', 'request body is too large');
  if (typeof status === 'number' && status >= 400 && status < 500) return new AppError('bad_request', String((err as Error).message ?? 'bad request'));
  loggerFor(req, logger).error({ err: { message: (err as Error)?.message, name: (err as Error)?.name }, path: redactUrl(url.split('?')[0]!) }, 'unexpected error');
  return toAppError(err);
}

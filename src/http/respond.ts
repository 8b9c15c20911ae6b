import type { ServerResponse } from 'node:http';
import type { AppError } from './errors.js';
import { noteError, requestIdOf } from './request-context.js';

/** Writes a complete JSON response with an exact Content-Length. */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers?: Record<string, string>,
): void {
  const text = JSON.stringify(body);
  if (headers) for (const k in headers) res.setHeader(k, headers[k]!);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
  });
  res.end(text);
}

/** Writes an error's JSON body (with the request id as `error.request_id`) and notes its code for /metrics. */
export function sendError(res: ServerResponse, err: AppError): void {
  noteError(res.req, err);
  sendJson(res, err.status, err.toBody(requestIdOf(res.req)), err.headers);
}

import type { ServerResponse } from 'node:http';
import type { AppError } from './errors.js';

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

export function sendError(res: ServerResponse, err: AppError): void {
  sendJson(res, err.status, err.toBody(), err.headers);
}

import { statusOf, type ErrorCode } from './codes.js';

/** The JSON body of an error, as every HTTP surface answers it. */
export interface ErrorBody {
  error: { code: ErrorCode; message: string; details: Record<string, unknown>; request_id?: string };
}

/**
 * The one error type of svc: a code from the table in `codes.ts` (which gives
 * its HTTP status, JSON-RPC code and CLI exit code), a message, optional
 * details and optional response headers (Retry-After, WWW-Authenticate). Thrown
 * by any layer; each transport turns it into its answer in one place.
 */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: Record<string, unknown> | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    details?: Record<string, unknown>,
    headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.status = statusOf(code);
    this.details = details;
    this.headers = headers;
  }

  /** The JSON body of this error; `requestId` (the request's X-Request-Id) is echoed as `error.request_id`. */
  toBody(requestId?: string): ErrorBody {
    const error = { code: this.code, message: this.message, details: this.details ?? {} };
    return { error: requestId === undefined ? error : { ...error, request_id: requestId } };
  }
}

/** Node socket errors of a database connection that is down or unreachable. */
const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH']);
/** node-postgres errors without a code that mean the same. */
const CONNECTION_MESSAGES = /timeout exceeded when trying to connect|Connection terminated|connection error and is not queryable|Client was closed/i;

/**
 * Whether an error means the store cannot be used right now (so nothing was
 * stored and the request can be retried): SQLite busy, full or failing I/O;
 * PostgreSQL unreachable, restarting, out of connections, or a statement over
 * its time limit.
 */
export function isStorageUnavailable(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string') {
    if (code.startsWith('SQLITE_BUSY') || code === 'SQLITE_FULL' || code.startsWith('SQLITE_IOERR')) return true;
    if (CONNECTION_CODES.has(code)) return true;
    // SQLSTATE: class 08 connection exception; shutdown / cannot connect now; too many connections; statement timeout.
    if (/^08/.test(code) || ['57P01', '57P02', '57P03', '53300', '57014'].includes(code)) return true;
  }
  const message = (err as { message?: unknown } | null)?.message;
  return typeof message === 'string' && CONNECTION_MESSAGES.test(message);
}

/** The answer to a request the store could not serve: 503 with Retry-After. */
export function storageUnavailable(): AppError {
  return new AppError('service_unavailable', 'storage is unavailable; nothing was stored, retry later', {}, { 'Retry-After': '1' });
}

/** Turns anything thrown into an AppError; unknown errors become a bare internal_error. */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (isStorageUnavailable(err)) return storageUnavailable();
  return new AppError('internal_error', 'internal error');
}

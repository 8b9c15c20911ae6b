/**
 * The one error type of svc. Every expected failure carries a snake_case `code`
 * from the table below; the HTTP status, the CLI exit code and the MCP error
 * all derive from that code, so the three surfaces never disagree.
 */
export const ERROR_CODES = {
  bad_request: 400,
  invalid_json: 400,
  validation_failed: 400,
  unknown_site: 400,
  unauthorized: 401,
  insufficient_scope: 403,
  forbidden_origin: 403,
  not_found: 404,
  method_not_allowed: 405,
  not_acceptable: 406,
  request_timeout: 408,
  identity_conflict: 409,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  destination_refused: 422,
  rate_limited: 429,
  internal_error: 500,
  service_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

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
    this.status = ERROR_CODES[code];
    this.details = details;
    this.headers = headers;
  }

  /** The JSON body of this error; `requestId` (the request's X-Request-Id) is echoed as `error.request_id`. */
  toBody(requestId?: string): { error: { code: ErrorCode; message: string; details: Record<string, unknown>; request_id?: string } } {
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

/** CLI exit code for an error: 2 for usage-like errors, 1 for everything else. */
export function exitCodeFor(err: AppError): 1 | 2 {
  return err.status === 400 ? 2 : 1;
}

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
  not_found: 404,
  method_not_allowed: 405,
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

  toBody(): { error: { code: ErrorCode; message: string; details: Record<string, unknown> } } {
    return { error: { code: this.code, message: this.message, details: this.details ?? {} } };
  }
}

/** Turns anything thrown into an AppError; unknown errors become a bare internal_error. */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  return new AppError('internal_error', 'internal error');
}

/** CLI exit code for an error: 2 for usage-like errors, 1 for everything else. */
export function exitCodeFor(err: AppError): 1 | 2 {
  return err.status === 400 ? 2 : 1;
}

/**
 * The one table of error codes. Every expected failure of svc carries one of
 * these snake_case codes; what each transport answers derives from this row:
 *
 * - `status`: the HTTP status of the JSON error body (ingest, pulse, the MCP report link, ...);
 * - `rpc`: the JSON-RPC error code when the code is answered as an MCP
 *   protocol-level error (the HTTP gate of /api/mcp, `svc plugin run` on stdio);
 *   codes never answered at that level have none (see {@link jsonRpcCodeOf});
 * - `exit`: the CLI's exit code (2 usage-like error, 1 any other failure).
 *
 * Tool failures inside MCP are tool results carrying the code (not JSON-RPC
 * errors), so they need no `rpc`.
 */
export const ERRORS = {
  bad_request: { status: 400, rpc: -32600, exit: 2 },
  invalid_json: { status: 400, exit: 2 },
  validation_failed: { status: 400, rpc: -32602, exit: 2 },
  unknown_site: { status: 400, exit: 2 },
  unauthorized: { status: 401, rpc: -32001, exit: 1 },
  insufficient_scope: { status: 403, exit: 1 },
  forbidden_origin: { status: 403, exit: 1 },
  forbidden_host: { status: 403, exit: 1 },
  not_found: { status: 404, exit: 1 },
  method_not_allowed: { status: 405, exit: 1 },
  not_acceptable: { status: 406, exit: 1 },
  request_timeout: { status: 408, exit: 1 },
  identity_conflict: { status: 409, exit: 1 },
  conflict: { status: 409, exit: 1 },
  payload_too_large: { status: 413, exit: 1 },
  unsupported_media_type: { status: 415, exit: 1 },
  destination_refused: { status: 422, exit: 1 },
  rate_limited: { status: 429, rpc: -32029, exit: 1 },
  internal_error: { status: 500, exit: 1 },
  service_unavailable: { status: 503, exit: 1 },
} as const satisfies Record<string, { status: number; rpc?: number; exit: 1 | 2 }>;

export type ErrorCode = keyof typeof ERRORS;

/** JSON-RPC "Internal error": a protocol-level answer for a code the table gives no JSON-RPC code. */
export const RPC_INTERNAL_ERROR = -32603;

/** Whether a string is one of the table's codes. */
export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERRORS, code);
}

/** The HTTP status of a code. */
export function statusOf(code: ErrorCode): number {
  return ERRORS[code].status;
}

/** The JSON-RPC error code of a code answered as a protocol-level MCP error (-32603 when the table names none). */
export function jsonRpcCodeOf(code: ErrorCode): number {
  const row = ERRORS[code];
  return 'rpc' in row ? row.rpc : RPC_INTERNAL_ERROR;
}

/** The CLI exit code of a code: 2 for usage-like errors, 1 for everything else. */
export function exitCodeOf(code: ErrorCode): 1 | 2 {
  return ERRORS[code].exit;
}

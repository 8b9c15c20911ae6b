/**
 * The one table of error codes. Every expected failure of svc carries one of
 * these snake_case codes; what each transport answers derives from this row:
 *
 * - `status`: the HTTP status of the JSON error body (ingest, pulse, the MCP report link, ...);
 * - `rpc`: the JSON-RPC error code when the code is answered as an MCP
 *   protocol-level error (the HTTP gate of /api/mcp, `svc plugin run` on stdio);
 *   codes never answered at that level have none (see {@link jsonRpcCodeOf});
 * - `exit`: the CLI's exit code (2 usage-like error, 1 any other failure);
 * - `meaning`: when it is answered, for the error reference (docs/errors.md is generated from this table).
 *
 * Tool failures inside MCP are tool results carrying the code (not JSON-RPC
 * errors), so they need no `rpc`.
 */
export const ERRORS = {
  bad_request: { status: 400, rpc: -32600, exit: 2, meaning: 'The request is malformed: broken HTTP framing, a JSON-RPC batch, a bad flag or setting.' },
  invalid_json: { status: 400, exit: 2, meaning: 'The body is not JSON, or not valid UTF-8.' },
  validation_failed: { status: 400, rpc: -32602, exit: 2, meaning: 'A field is missing, of the wrong type, out of range or unknown; `details.field` names it.' },
  unknown_site: { status: 400, exit: 2, meaning: 'No site has that `site_id`.' },
  unauthorized: { status: 401, rpc: -32001, exit: 1, meaning: 'No credential, or one that is unknown, revoked or expired.' },
  insufficient_scope: { status: 403, exit: 1, meaning: 'The credential is valid but its scope or restrictions do not allow this.' },
  forbidden_origin: { status: 403, exit: 1, meaning: "A browser request from an `Origin` that is not one of the site's." },
  forbidden_host: { status: 403, exit: 1, meaning: 'A loopback server asked under a `Host` or `Origin` that is not loopback (DNS rebinding).' },
  not_found: { status: 404, exit: 1, meaning: 'No such resource (for this site).' },
  method_not_allowed: { status: 405, exit: 1, meaning: 'The path does not answer this HTTP method.' },
  not_acceptable: { status: 406, exit: 1, meaning: 'The `Accept` header excludes every type the endpoint answers.' },
  request_timeout: { status: 408, exit: 1, meaning: 'Headers or body arrived too slowly.' },
  identity_conflict: { status: 409, exit: 1, meaning: 'Identify would merge two known profiles.' },
  conflict: { status: 409, exit: 1, meaning: 'The change conflicts with the current state (a name in use, an idempotency key used elsewhere).' },
  payload_too_large: { status: 413, exit: 1, meaning: "The body is over the endpoint's cap." },
  unsupported_media_type: { status: 415, exit: 1, meaning: 'The `Content-Type` is not one the endpoint takes.' },
  destination_refused: { status: 422, exit: 1, meaning: 'An outbound URL points where svc never sends (private, loopback or link-local addresses).' },
  rate_limited: { status: 429, rpc: -32029, exit: 1, meaning: 'Over a rate limit; `Retry-After` says when to try again.' },
  internal_error: { status: 500, exit: 1, meaning: 'An unexpected failure; nothing partial was stored.' },
  service_unavailable: { status: 503, exit: 1, meaning: 'The store cannot be used right now; nothing was stored, retry later.' },
} as const satisfies Record<string, { status: number; rpc?: number; exit: 1 | 2; meaning: string }>;

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

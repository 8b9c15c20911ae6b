import { JSONRPC_VERSION, type JSONRPCMessage } from '@modelcontextprotocol/server';
import type { AppError } from '../errors/app-error.js';
import { jsonRpcCodeOf } from '../errors/codes.js';

/**
 * An error answered at the MCP protocol level (before any tool runs: token
 * refused, rate limited, bad listing filter, a batch), as JSON-RPC 2.0: the
 * JSON-RPC code from the error table, the message, and `data` with svc's code,
 * the details and (over HTTP) the request id. `id` is null when the request
 * could not be read or has no single id.
 */
export function rpcErrorMessage(e: AppError, id: string | number | null, requestId?: string): JSONRPCMessage {
  return {
    jsonrpc: JSONRPC_VERSION,
    id,
    error: { code: jsonRpcCodeOf(e.code), message: e.message, data: { code: e.code, ...(e.details ?? {}), ...(requestId ? { request_id: requestId } : {}) } },
  } as unknown as JSONRPCMessage;
}

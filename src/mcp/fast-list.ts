import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { isJsonContentType, JSONRPC_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/server';

/** The largest body read whole before the SDK sees it (a JSON-RPC message; larger ones stream to the SDK as before). */
export const SMALL_BODY = 16 * 1024;

/** A JSON-RPC request id (string or number; the SDK echoes it as given). */
export type RpcId = string | number;

/** The parsed message of a small POST body: its method, id and tools/call name (null fields: not a request we recognise). */
export interface PeekedMessage {
  method: string | null;
  id: RpcId | null;
  /** params absent or `{}`: nothing the answer could depend on. */
  emptyParams: boolean;
  /** The tool a tools/call names (null for other methods or a name that is not a string). */
  toolName: string | null;
  /** `"jsonrpc":"2.0"` and no member beyond jsonrpc, id, method and params. */
  plain: boolean;
}

/** What a body holds, when it is one JSON-RPC message; null for anything else (a batch, bad JSON, another shape), left to the SDK. */
export function peekMessage(body: Buffer): PeekedMessage | null {
  let msg: unknown;
  try {
    msg = JSON.parse(body.toString('utf8'));
  } catch {
    return null;
  }
  if (msg === null || typeof msg !== 'object' || Array.isArray(msg)) return null;
  const m = msg as Record<string, unknown>;
  const method = typeof m.method === 'string' ? m.method : null;
  const id = typeof m.id === 'string' || (typeof m.id === 'number' && Number.isSafeInteger(m.id)) ? m.id : null;
  const params = m.params;
  const emptyParams = params === undefined || (params !== null && typeof params === 'object' && !Array.isArray(params) && Object.keys(params).length === 0);
  const name = params !== null && typeof params === 'object' ? (params as Record<string, unknown>).name : undefined;
  const plain = m.jsonrpc === JSONRPC_VERSION && Object.keys(m).every((k) => k === 'jsonrpc' || k === 'id' || k === 'method' || k === 'params');
  return { method, id, emptyParams, toolName: method === 'tools/call' && typeof name === 'string' ? name : null, plain };
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v.join(', ') : v;
}

/**
 * Whether the SDK would answer this request as a 2025-era (legacy, stateless)
 * tools/list with the listing and nothing else: a single JSON-RPC request
 * `{"jsonrpc":"2.0","id":…,"method":"tools/list"}` with no params (no
 * cursor, no `_meta` envelope that would make it a 2026-era request), JSON
 * content, an Accept naming both JSON and SSE (else the SDK answers 406), no
 * Mcp-Method or Mcp-Name header, and a protocol version header the SDK
 * supports or none. Anything else goes to the SDK, which answers or refuses it.
 */
export function isPlainListRequest(headers: IncomingHttpHeaders, msg: PeekedMessage): boolean {
  if (msg.method !== 'tools/list' || msg.id === null || !msg.emptyParams || !msg.plain) return false;
  if (!isJsonContentType(header(headers, 'content-type') ?? null)) return false;
  const accept = header(headers, 'accept');
  if (!accept?.includes('application/json') || !accept.includes('text/event-stream')) return false;
  if (headers['mcp-method'] !== undefined || headers['mcp-name'] !== undefined || headers['mcp-session-id'] !== undefined) return false;
  const version = header(headers, 'mcp-protocol-version')?.trim();
  return version === undefined || SUPPORTED_PROTOCOL_VERSIONS.includes(version);
}

/** The headers the SDK's stateless transport answers a request with (an SSE stream of one event). */
export const SSE_HEADERS = {
  'Content-Type': 'text/event-stream',
  'Cache-Control': 'no-cache, no-transform',
  Connection: 'keep-alive',
  'X-Accel-Buffering': 'no',
} as const;

/**
 * A tools/list result serialised once: the SSE event the SDK writes for it,
 * `event: message\ndata: {"result":…,"jsonrpc":"2.0","id":…}\n\n`, up to
 * the id: each request only adds its own id and the end of the event.
 */
export interface SerializedListing {
  /** Everything before the id. */
  head: Buffer;
}

const serialized = new WeakMap<object, SerializedListing>();

/** The SSE bytes of a listing result, serialised once per listing object (listings are cached per restriction set). */
export function serializedListing(result: object): SerializedListing {
  let s = serialized.get(result);
  if (!s) {
    s = { head: Buffer.from(`event: message\ndata: {"result":${JSON.stringify(result)},"jsonrpc":"${JSONRPC_VERSION}","id":`) };
    serialized.set(result, s);
  }
  return s;
}

/**
 * Writes the answer of one request id: the shared serialised listing, then
 * the id and the end of the event (no per-request copy of the listing).
 */
export function sendListing(res: ServerResponse, s: SerializedListing, id: RpcId): void {
  const end = Buffer.from(`${JSON.stringify(id)}}\n\n`);
  res.writeHead(200, { ...SSE_HEADERS, 'Content-Length': s.head.length + end.length });
  res.cork();
  res.write(s.head);
  res.end(end);
}

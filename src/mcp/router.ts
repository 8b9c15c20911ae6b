import { once } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import express, { type Request, type Response, type Router } from 'express';
import {
  createMcpHandler,
  JSONRPC_VERSION,
  localhostAllowedHostnames,
  localhostAllowedOrigins,
  validateHostHeader,
  validateOriginHeader,
} from '@modelcontextprotocol/server';
import { AppError, toAppError } from '../errors/app-error.js';
import { loggerFor, noteError, requestIdOf } from '../http/request-context.js';
import { sendError, sendJson } from '../http/respond.js';
import { redactUrl } from '../log.js';
import { createRateLimiter, describePolicy, type RatePolicy } from '../http/rate-limit.js';
import { authenticateToken } from './auth.js';
import { batchRefusal, peekFirstByte } from './batch.js';
import { rpcErrorMessage } from './rpc-error.js';
import type { Grant } from '../domain/access/grant.js';
import { ALL_TOOLS, flagValue, intersectAreas, parseAreaList, type ListingFilter } from './listing.js';
import { reportHandler } from './report.js';
import { createMcpServer, listingFor, type McpDeps } from './server.js';
import { isPlainListRequest, peekMessage, sendListing, serializedListing, SMALL_BODY, type PeekedMessage } from './fast-list.js';
import { AREAS } from './tools/index.js';

/** The SDK handler's body cap (413 above it). */
const MAX_BODY = 1024 * 1024;

/** The path of the MCP endpoint (answered before express by `McpEndpoint.handle`). */
export const MCP_PATH = '/api/mcp';

/** The one place the HTTP gate of /api/mcp answers an error: the table's status, a JSON-RPC error body (id null: the request was not read). */
function rpcError(req: IncomingMessage, res: ServerResponse, e: AppError): void {
  noteError(req, e);
  sendJson(res, e.status, rpcErrorMessage(e, null, requestIdOf(req)), e.headers);
}

/** The 403 of the SDK's DNS-rebinding guard (a JSON-RPC error -32000, id null), as its express middleware answers it. */
function rebindingRefusal(res: ServerResponse, message: string): void {
  sendJson(res, 403, { jsonrpc: JSONRPC_VERSION, error: { code: -32_000, message }, id: null });
}

/** The Node request as a web-standard Request for the SDK's handler; credentials stay behind. */
function toWebRequest(req: IncomingMessage, originalUrl: string, body: ReadableStream | Buffer | null, signal: AbortSignal): globalThis.Request {
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined || k === 'authorization') continue;
    if (Array.isArray(v)) for (const x of v) headers.append(k, x);
    else headers.set(k, v);
  }
  let url: URL;
  try {
    url = new URL(originalUrl, `http://${req.headers.host ?? 'localhost'}`);
  } catch {
    url = new URL(originalUrl, 'http://localhost');
  }
  url.searchParams.delete('api_key');
  return new globalThis.Request(url, {
    method: req.method,
    headers,
    body,
    signal,
    duplex: 'half',
  } as RequestInit);
}

/** The whole body of a request whose Content-Length is small; null when the client went away first. */
function readWhole(req: IncomingMessage): Promise<Buffer | null> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', () => resolve(null));
    req.once('close', () => resolve(null));
  });
}

/** The first byte of a body that is not JSON whitespace (null for none). */
function firstSignificantByte(body: Buffer): number | null {
  for (const b of body) if (b !== 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d) return b;
  return null;
}

async function sendWebResponse(r: globalThis.Response, req: IncomingMessage, res: ServerResponse, body: ReadableStream | Buffer | null): Promise<void> {
  res.statusCode = r.status;
  r.headers.forEach((value, key) => res.setHeader(key, value));
  if (!req.complete) {
    // Answered before the body was read (413 and other early refusals): the rest
    // of the body is never read, so this connection cannot carry another request.
    res.setHeader('Connection', 'close');
    if (body && !Buffer.isBuffer(body)) res.once('finish', () => void body.cancel().catch(() => undefined));
  }
  if (!r.body) {
    res.end();
    return;
  }
  // The headers leave with the first event (one write instead of two) unless it is slow to come:
  // then they are sent on their own, so a client sees the stream open while a long call runs.
  let early: NodeJS.Timeout | null = setTimeout(() => {
    early = null;
    if (!res.headersSent && !res.destroyed) res.flushHeaders();
  }, HEADERS_GRACE_MS);
  try {
    for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>) {
      if (early) {
        clearTimeout(early);
        early = null;
      }
      if (res.destroyed) break;
      // Corked until the next turn: an event followed at once by the end of the stream (a stateless
      // answer) goes out with the chunked terminator in one write.
      res.cork();
      setImmediate(uncork, res);
      if (!res.write(chunk)) await Promise.race([once(res, 'drain'), once(res, 'close')]);
    }
  } finally {
    if (early) clearTimeout(early);
  }
  res.end();
}

/** How long the headers of a streamed answer wait for its first event before they are sent alone. */
const HEADERS_GRACE_MS = 50;

function uncork(res: ServerResponse): void {
  res.uncork();
}

/**
 * How this request shapes tools/list: `?areas=a,b` and the `X-SVC-Areas`
 * header (both given: their intersection), `?read_only=1`, and output schemas
 * with `?output_schemas=1` or `X-SVC-Output-Schemas: 1`. An unknown area
 * name is a 400, so a typo never silently lists nothing.
 */
export function listingOf(req: IncomingMessage, originalUrl: string): ListingFilter {
  const q = originalUrl.indexOf('?');
  const query = new URLSearchParams(q === -1 ? '' : originalUrl.slice(q + 1));
  const header = req.headers['x-svc-areas'];
  const fromQuery = parseAreaList(query.get('areas'));
  const fromHeader = parseAreaList(Array.isArray(header) ? header.join(',') : header);
  const unknown = [...(fromQuery ?? []), ...(fromHeader ?? [])].filter((a) => !AREAS.includes(a));
  if (unknown.length > 0) {
    throw new AppError('validation_failed', `unknown tool area(s): ${unknown.join(', ')}; known: ${AREAS.join(', ')}`, { field: 'areas', unknown, known: AREAS });
  }
  const areas = intersectAreas(fromQuery, fromHeader);
  const readOnly = flagValue(query.get('read_only'));
  const outputHeader = req.headers['x-svc-output-schemas'];
  const outputSchemas = flagValue(query.get('output_schemas')) || flagValue(Array.isArray(outputHeader) ? outputHeader[0] : outputHeader);
  return areas === null && !readOnly && !outputSchemas ? ALL_TOOLS : { areas, readOnly, outputSchemas };
}

/** The MCP endpoint: its raw node:http handler and the express router that also serves it (and /api/mcp/report). */
export interface McpEndpoint {
  /**
   * Answers a request for /api/mcp without express (the server calls it
   * first, as it does for /api/decide): same checks, answers and errors as
   * the router's route, for a fraction of the per-request work.
   */
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>;
  router: Router;
}

/**
 * POST /api/mcp: stateless streamable HTTP served by the MCP SDK
 * (createMcpHandler; 2025-era clients get its stateless fallback). In front of
 * it: on a loopback bind the SDK's DNS-rebinding checks of Host and Origin
 * (403), token authentication (401 with a JSON-RPC error body and
 * WWW-Authenticate), then the per-token rate limit (429 rate_limited).
 */
export function createMcpEndpoint(deps: McpDeps & { rateLimit: RatePolicy | null; loopback: boolean }): McpEndpoint {
  const allowedHosts = localhostAllowedHostnames();
  const allowedOrigins = localhostAllowedOrigins();
  const limiter = deps.rateLimit ? createRateLimiter(deps.store, deps.rateLimit) : null;
  const handler = createMcpHandler(
    (ctx) => {
      const extra = ctx.authInfo?.extra as { grant?: Grant; listing?: ListingFilter; request?: IncomingMessage; tool?: string | null } | undefined;
      if (!extra?.grant) throw new Error('MCP request without a grant');
      // Per request: its log lines and its audit rows carry its request id.
      const request = extra.request;
      return createMcpServer(extra.grant, { ...deps, logger: loggerFor(request, deps.logger), requestId: requestIdOf(request) }, extra.listing ?? ALL_TOOLS, extra.tool ?? null);
    },
    {
      maxRequestBodySize: MAX_BODY,
      onerror: (err) => deps.logger.debug({ err: { message: err.message, name: err.name } }, 'MCP request rejected'),
    },
  );

  /** The route itself; `originalUrl` is the request's path and query as received. */
  const serve = async (req: IncomingMessage, res: ServerResponse, originalUrl: string): Promise<void> => {
    if (deps.loopback) {
      const host = validateHostHeader(req.headers.host, allowedHosts);
      if (!host.ok) return rebindingRefusal(res, host.message);
      const origin = validateOriginHeader(req.headers.origin, allowedOrigins);
      if (!origin.ok) return rebindingRefusal(res, origin.message);
    }
    let grant: Grant;
    let listing: ListingFilter;
    try {
      grant = await authenticateToken(deps.store, req, originalUrl);
      listing = listingOf(req, originalUrl);
    } catch (err) {
      if (err instanceof AppError) return rpcError(req, res, err);
      throw err;
    }
    if (limiter) {
      const d = await limiter.take(grant.tokenId);
      const headers = limiter.headers(d);
      for (const k in headers) res.setHeader(k, headers[k]!);
      if (!d.ok) {
        const policy = limiter.policy;
        return rpcError(
          req,
          res,
          new AppError('rate_limited', `rate limit exceeded for this token: ${describePolicy(policy)}`, {
            limit: policy.rate,
            window_seconds: policy.windowMs / 1000,
            burst: policy.burst,
            retry_after_seconds: d.retryAfterSeconds,
          }),
        );
      }
    }
    const abort = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    // A small POST body (a JSON-RPC message with its Content-Length) is read whole: a plain
    // tools/list is answered from the listing serialised once per restriction set, and a
    // tools/call builds a server with only the tool it names. Anything else streams to the SDK.
    let peeked: PeekedMessage | null = null;
    let body: ReadableStream<Uint8Array> | null = null;
    let whole: Buffer | null = null;
    const length = Number(req.headers['content-length']);
    if (req.method === 'POST' && req.headers['transfer-encoding'] === undefined && Number.isSafeInteger(length) && length >= 0 && length <= SMALL_BODY) {
      whole = await readWhole(req);
      if (whole === null) return;
      if (firstSignificantByte(whole) === 0x5b) {
        return rpcError(req, res, batchRefusal());
      }
      peeked = peekMessage(whole);
      if (peeked && isPlainListRequest(req.headers, peeked)) {
        sendListing(res, serializedListing(await listingFor(grant, listing)), peeked.id!);
        return;
      }
    } else if (req.method !== 'GET' && req.method !== 'HEAD') {
      body = Readable.toWeb(req) as ReadableStream<Uint8Array>;
    }
    if (body && req.method === 'POST') {
      // A JSON-RPC batch is refused whole, before any of it runs, whatever the MCP-Protocol-Version header says.
      const first = await peekFirstByte(body, MAX_BODY);
      body = first.body;
      if (first.first === 0x5b) {
        if (!req.complete) res.setHeader('Connection', 'close');
        res.once('finish', () => void body?.cancel().catch(() => undefined));
        return rpcError(req, res, batchRefusal());
      }
    }
    const response = await handler.fetch(toWebRequest(req, originalUrl, whole ?? body, abort.signal), {
      authInfo: { token: grant.tokenId, clientId: grant.tokenId, scopes: [grant.scope], extra: { grant, listing, request: req, tool: peeked?.toolName ?? null } },
    });
    await sendWebResponse(response, req, res, body);
  };

  const router = express.Router();
  router.get('/report', reportHandler({ ...deps, limiter }));
  router.all('/', (req: Request, res: Response) => serve(req, res, req.originalUrl));
  return {
    router,
    // What express's error handler (finishApp) does with what the route throws.
    handle: (req, res) =>
      serve(req, res, req.url ?? MCP_PATH).catch((err: unknown) => {
        if (!(err instanceof AppError)) {
          const url = req.url ?? MCP_PATH;
          const q = url.indexOf('?');
          loggerFor(req, deps.logger).error(
            { err: { message: (err as Error)?.message, name: (err as Error)?.name }, path: redactUrl(q === -1 ? url : url.slice(0, q)) },
            'unexpected error',
          );
        }
        if (res.headersSent) return;
        sendError(res, toAppError(err));
      }),
  };
}

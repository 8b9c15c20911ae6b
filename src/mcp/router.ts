import { once } from 'node:events';
import { Readable } from 'node:stream';
import express, { type Request, type Response, type Router } from 'express';
import { localhostHostValidation, localhostOriginValidation } from '@modelcontextprotocol/express';
import { createMcpHandler } from '@modelcontextprotocol/server';
import { AppError } from '../errors/app-error.js';
import { loggerFor, noteError, requestIdOf } from '../http/request-context.js';
import { createRateLimiter, describePolicy, type RatePolicy } from '../http/rate-limit.js';
import { authenticateToken } from './auth.js';
import { batchRefusal, peekFirstByte } from './batch.js';
import { rpcErrorMessage } from './rpc-error.js';
import type { Grant } from './grant.js';
import { ALL_TOOLS, flagValue, intersectAreas, parseAreaList, type ListingFilter } from './listing.js';
import { reportHandler } from './report.js';
import { createMcpServer, listingFor, type McpDeps } from './server.js';
import { isPlainListRequest, peekMessage, sendListing, serializedListing, SMALL_BODY, type PeekedMessage } from './fast-list.js';
import { AREAS } from './tools/index.js';

/** The SDK handler's body cap (413 above it). */
const MAX_BODY = 1024 * 1024;

/** The one place the HTTP gate of /api/mcp answers an error: the table's status, a JSON-RPC error body (id null: the request was not read). */
function rpcError(res: Response, e: AppError): void {
  noteError(res.req, e);
  const body = rpcErrorMessage(e, null, requestIdOf(res.req));
  res.status(e.status);
  if (e.headers) res.set(e.headers);
  res.json(body);
}

/** The Node request as a web-standard Request for the SDK's handler; credentials stay behind. */
function toWebRequest(req: Request, body: ReadableStream | Buffer | null, signal: AbortSignal): globalThis.Request {
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined || k === 'authorization') continue;
    if (Array.isArray(v)) for (const x of v) headers.append(k, x);
    else headers.set(k, v);
  }
  let url: URL;
  try {
    url = new URL(req.originalUrl, `http://${req.headers.host ?? 'localhost'}`);
  } catch {
    url = new URL(req.originalUrl, 'http://localhost');
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
function readWhole(req: Request): Promise<Buffer | null> {
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

async function sendWebResponse(r: globalThis.Response, req: Request, res: Response, body: ReadableStream | Buffer | null): Promise<void> {
  res.status(r.status);
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
  res.flushHeaders();
  for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>) {
    if (res.destroyed) break;
    if (!res.write(chunk)) await Promise.race([once(res, 'drain'), once(res, 'close')]);
  }
  res.end();
}

/**
 * How this request shapes tools/list: `?areas=a,b` and the `X-SVC-Areas`
 * header (both given: their intersection), `?read_only=1`, and output schemas
 * with `?output_schemas=1` or `X-SVC-Output-Schemas: 1`. An unknown area
 * name is a 400, so a typo never silently lists nothing.
 */
export function listingOf(req: Request): ListingFilter {
  const q = req.originalUrl.indexOf('?');
  const query = new URLSearchParams(q === -1 ? '' : req.originalUrl.slice(q + 1));
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

/**
 * POST /api/mcp: stateless streamable HTTP served by the MCP SDK
 * (createMcpHandler; 2025-era clients get its stateless fallback). In front of
 * it: token authentication (401 with a JSON-RPC error body and
 * WWW-Authenticate), then the per-token rate limit (429 rate_limited).
 */
export function createMcpRouter(deps: McpDeps & { rateLimit: RatePolicy | null; loopback: boolean }): Router {
  const router = express.Router();
  if (deps.loopback) router.use(localhostHostValidation(), localhostOriginValidation());
  const limiter = deps.rateLimit ? createRateLimiter(deps.store, deps.rateLimit) : null;
  const handler = createMcpHandler(
    (ctx) => {
      const extra = ctx.authInfo?.extra as { grant?: Grant; listing?: ListingFilter; request?: Request; tool?: string | null } | undefined;
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
  router.get('/report', reportHandler({ ...deps, limiter }));
  router.all('/', async (req: Request, res: Response) => {
    let grant: Grant;
    try {
      grant = await authenticateToken(deps.store, req);
    } catch (err) {
      if (err instanceof AppError) return rpcError(res, err);
      throw err;
    }
    let listing: ListingFilter;
    try {
      listing = listingOf(req);
    } catch (err) {
      if (err instanceof AppError) return rpcError(res, err);
      throw err;
    }
    if (limiter) {
      const d = await limiter.take(grant.tokenId);
      res.set(limiter.headers(d));
      if (!d.ok) {
        const policy = limiter.policy;
        return rpcError(
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
        return rpcError(res, batchRefusal());
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
        return rpcError(res, batchRefusal());
      }
    }
    const response = await handler.fetch(toWebRequest(req, whole ?? body, abort.signal), {
      authInfo: { token: grant.tokenId, clientId: grant.tokenId, scopes: [grant.scope], extra: { grant, listing, request: req, tool: peeked?.toolName ?? null } },
    });
    await sendWebResponse(response, req, res, body);
  });
  return router;
}

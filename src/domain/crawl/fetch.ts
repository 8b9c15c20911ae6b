import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import { request, type Dispatcher } from 'undici';
import { assertDestinationAllowed, DESTINATION_REFUSED } from '../../outbound/guard.js';
import { VERSION } from '../../version.js';

const gunzipAsync = promisify(gunzip);

/** The robots.txt token svc obeys, and the User-Agent header it sends. */
export const CRAWLER_TOKEN = 'svc-crawler';
export const CRAWLER_USER_AGENT = `${CRAWLER_TOKEN}/${VERSION} (+https://www.npmjs.com/package/@svc-hq/svc)`;

/** Redirects followed per request; each hop is checked by the destination guard again. */
export const MAX_REDIRECTS = 5;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export interface GuardedFetch {
  dispatcher: Dispatcher;
  allowPrivate: boolean;
  /** Aborts everything (the crawl's time limit, shutdown). */
  signal: AbortSignal;
  /** Time limit of one request, redirects included (ms). */
  timeoutMs: number;
}

export interface Fetched {
  /** The URL that answered (after redirects). */
  url: string;
  status: number;
  contentType: string | null;
  body: Buffer;
  /** Whether the body was cut at `maxBytes` (only when `overflow` is 'truncate'). */
  truncated: boolean;
}

/** A fetch that did not produce an answer: refused by the guard, too large, timed out or a network error. */
export class FetchError extends Error {
  constructor(
    message: string,
    readonly kind: 'refused' | 'too_large' | 'timeout' | 'redirects' | 'network',
  ) {
    super(message);
    this.name = 'FetchError';
  }
}

async function readBody(body: Dispatcher.ResponseData['body'], maxBytes: number, overflow: 'error' | 'truncate', url: string): Promise<{ body: Buffer; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const b = chunk as Buffer;
    if (size + b.length > maxBytes) {
      body.destroy();
      if (overflow === 'error') throw new FetchError(`${url} is larger than ${maxBytes} bytes`, 'too_large');
      chunks.push(b.subarray(0, maxBytes - size));
      return { body: Buffer.concat(chunks), truncated: true };
    }
    chunks.push(b);
    size += b.length;
  }
  return { body: Buffer.concat(chunks), truncated: false };
}

/**
 * GET through the destination guard: every hop's URL is checked (scheme,
 * credentials, resolved addresses) before it is requested, and the guarded
 * dispatcher connects only to checked addresses. Redirects are followed up to
 * MAX_REDIRECTS, each hop checked again. The body is read up to `maxBytes`:
 * past it the fetch fails (`overflow: 'error'`) or the body is cut.
 */
export async function guardedGet(url: string, f: GuardedFetch, o: { maxBytes: number; overflow: 'error' | 'truncate'; accept: string }): Promise<Fetched> {
  const signal = AbortSignal.any([f.signal, AbortSignal.timeout(f.timeoutMs)]);
  let current = url;
  try {
    for (let hop = 0; ; hop++) {
      await assertDestinationAllowed(current, { allowPrivate: f.allowPrivate });
      const res = await request(current, {
        method: 'GET',
        dispatcher: f.dispatcher,
        signal,
        headers: { 'user-agent': CRAWLER_USER_AGENT, accept: o.accept },
      });
      const location = res.headers.location;
      if (REDIRECTS.has(res.statusCode) && typeof location === 'string') {
        await res.body.dump();
        if (hop >= MAX_REDIRECTS) throw new FetchError(`${url}: more than ${MAX_REDIRECTS} redirects`, 'redirects');
        current = new URL(location, current).toString();
        continue;
      }
      const ct = res.headers['content-type'];
      const read = await readBody(res.body, o.maxBytes, o.overflow, current);
      return { url: current, status: res.statusCode, contentType: typeof ct === 'string' ? ct : null, ...read };
    }
  } catch (err) {
    if (err instanceof FetchError) throw err;
    const e = err as { code?: string; name?: string; message?: string; cause?: { code?: string; message?: string } };
    const code = e.code ?? e.cause?.code;
    if (code === DESTINATION_REFUSED) throw new FetchError(e.message ?? 'destination refused', 'refused');
    if (f.signal.aborted) throw new FetchError(`${current}: the crawl was stopped`, 'timeout');
    if (signal.aborted || e.name === 'TimeoutError' || code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT') {
      throw new FetchError(`${current}: no complete answer within ${f.timeoutMs / 1000} s`, 'timeout');
    }
    throw new FetchError(`${current}: ${(e.cause?.message ?? e.message ?? String(err)).slice(0, 300)}`, 'network');
  }
}

/** Whether a body is gzip data (magic bytes 1f 8b). */
export function isGzip(body: Buffer): boolean {
  return body.length >= 2 && body[0] === 0x1f && body[1] === 0x8b;
}

/** Gunzips a body, refusing output over `maxBytes` (a gzip bomb fails instead of filling memory). */
export async function gunzipCapped(body: Buffer, maxBytes: number, url: string): Promise<Buffer> {
  try {
    return await gunzipAsync(body, { maxOutputLength: maxBytes });
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'ERR_BUFFER_TOO_LARGE') throw new FetchError(`${url} is larger than ${maxBytes} bytes uncompressed`, 'too_large');
    throw new FetchError(`${url}: not valid gzip data (${(err as Error).message})`, 'network');
  }
}

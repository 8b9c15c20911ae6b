import { request, type Dispatcher } from 'undici';
import { VERSION } from '../version.js';
import { signatureHeaders, svcKeys, type SigningKeys } from './signer.js';
import { DESTINATION_REFUSED } from './guard.js';

/** Total time of one attempt: connect, headers and body. */
export const ATTEMPT_TIMEOUT_MS = 5_000;
const EXCERPT_BYTES = 1024;

export interface AttemptResult {
  ok: boolean;
  status: number | null;
  latencyMs: number;
  errorClass: 'http_status' | 'timeout' | 'destination_refused' | 'dns' | 'connection' | 'tls' | 'network' | null;
  message: string | null;
  excerpt: string | null;
}

export const USER_AGENT = `svc-webhooks/${VERSION} (+https://github.com/svc)`;

/**
 * One signed delivery attempt: POST of the exact body bytes with the headers
 * of `signatureHeaders` (X-SVC-Signature, X-SVC-Event, X-SVC-Delivery stable
 * across retries; X-SVC-Signature-Next during a rotation; the Standard Webhooks
 * headers in standard mode), signed at `now` (default the clock). `key` is
 * short for svc-mode keys that were never rotated. Only a 2xx is a success;
 * redirects are not followed. Never throws.
 */
export async function sendSigned(
  opts: {
    dispatcher: Dispatcher;
    url: string;
    body: string;
    eventType: string;
    deliveryId: string;
    timeoutMs?: number;
    now?: number;
  } & ({ key: string } | { signing: SigningKeys }),
): Promise<AttemptResult> {
  const keys = 'signing' in opts ? opts.signing : svcKeys(opts.key);
  const signed = signatureHeaders(keys, opts, opts.now ?? Date.now());
  const started = performance.now();
  // A timer cleared when the attempt ends (AbortSignal.timeout's fires for every attempt, 5 s later,
  // building an exception and an event each time: a few per cent of a drain's CPU).
  const abort = new AbortController();
  const signal = abort.signal;
  const timer = setTimeout(() => abort.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), opts.timeoutMs ?? ATTEMPT_TIMEOUT_MS);
  const latency = () => Math.round(performance.now() - started);
  // Set once the headers are in: a body cut at the deadline still logs the status the receiver sent.
  let status: number | null = null;
  try {
    const res = await request(opts.url, {
      method: 'POST',
      dispatcher: opts.dispatcher,
      signal,
      headers: {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        ...signed,
      },
      body: opts.body,
    });
    status = res.statusCode;
    const excerpt = await readExcerpt(res);
    const ok = res.statusCode >= 200 && res.statusCode < 300;
    return {
      ok,
      status: res.statusCode,
      latencyMs: latency(),
      errorClass: ok ? null : 'http_status',
      message: ok ? null : `receiver answered ${res.statusCode}`,
      excerpt,
    };
  } catch (err) {
    return { ok: false, status, latencyMs: latency(), ...classify(err, signal), excerpt: null };
  } finally {
    clearTimeout(timer);
  }
}

/** The first EXCERPT_BYTES of the answer as UTF-8, null when it is empty. */
async function readExcerpt(res: Dispatcher.ResponseData): Promise<string | null> {
  const body = res.body;
  const length = res.headers['content-length'];
  const declared = typeof length === 'string' && /^\d+$/.test(length) ? Number(length) : -1;
  // A short answer of declared length (the usual one) is read whole, without an async iterator.
  if (declared >= 0 && declared <= EXCERPT_BYTES) {
    const bytes = await body.bytes();
    if (bytes.length === 0) return null;
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).subarray(0, EXCERPT_BYTES).toString('utf8');
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const b = chunk as Buffer;
    chunks.push(b);
    size += b.length;
    if (size >= EXCERPT_BYTES) {
      body.destroy();
      break;
    }
  }
  if (size === 0) return null;
  return Buffer.concat(chunks).subarray(0, EXCERPT_BYTES).toString('utf8');
}

/** Sorts a failed exchange into an error class (timeout, dns, connection, tls, refused, network). */
export function classify(err: unknown, signal: AbortSignal, timeoutMs = ATTEMPT_TIMEOUT_MS): Pick<AttemptResult, 'errorClass' | 'message'> {
  const e = err as { code?: string; name?: string; message?: string; cause?: { code?: string; message?: string } };
  const code = e.code ?? e.cause?.code;
  const message = (e.cause?.message ?? e.message ?? String(err)).slice(0, 500);
  if (signal.aborted || e.name === 'TimeoutError' || code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    return { errorClass: 'timeout', message: `no complete answer within ${timeoutMs / 1000} s` };
  }
  if (code === DESTINATION_REFUSED) return { errorClass: 'destination_refused', message };
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return { errorClass: 'dns', message };
  if (code === 'ECONNREFUSED' || code === 'ECONNRESET' || code === 'EHOSTUNREACH' || code === 'ENETUNREACH' || code === 'UND_ERR_SOCKET') {
    return { errorClass: 'connection', message };
  }
  if (code?.startsWith('ERR_TLS') || code?.includes('CERT')) return { errorClass: 'tls', message };
  return { errorClass: 'network', message };
}

import type { Dispatcher } from 'undici';
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

export const USER_AGENT = `svc-webhooks/${VERSION} (+https://www.npmjs.com/package/@svc-hq/svc)`;

/**
 * One signed delivery attempt: POST of the exact body bytes with the headers
 * of `signatureHeaders` (X-SVC-Signature, X-SVC-Event, X-SVC-Delivery stable
 * across retries; X-SVC-Signature-Next during a rotation; the Standard Webhooks
 * headers in standard mode), signed at `now` (default the clock). `key` is
 * short for svc-mode keys that were never rotated. Only a 2xx is a success;
 * redirects are not followed. Never throws.
 *
 * The exchange goes straight to `dispatcher.dispatch` with a handler of its own
 * (what `undici.request` dispatches, with the same options and headers): the
 * answer's first EXCERPT_BYTES are kept as they arrive, without a response
 * stream, an AbortSignal or a parsed header object per attempt (a drain's
 * hot path: those were a tenth of its CPU).
 */
export function sendSigned(
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
  return new Promise<AttemptResult>((resolve) => {
    const exchange = new Exchange(resolve, opts.timeoutMs ?? ATTEMPT_TIMEOUT_MS);
    let target: Target;
    try {
      target = targetOf(opts.url);
    } catch (err) {
      exchange.onError(err as Error);
      return;
    }
    // dispatch reports its own failures (a closed dispatcher, bad options) through onError.
    opts.dispatcher.dispatch(
      {
        origin: target.origin,
        path: target.path,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': USER_AGENT,
          ...signed,
        },
        body: opts.body,
      },
      exchange,
    );
  });
}

/** Where a URL's requests go, as `undici.request` splits it (origin, and path with the query, without the fragment). */
interface Target {
  origin: string;
  path: string;
}

/** Destination URLs seen lately: a lane posts to one URL many times. */
const targets = new Map<string, Target>();
const TARGETS_MAX = 1000;

function targetOf(url: string): Target {
  let t = targets.get(url);
  if (t === undefined) {
    const u = new URL(url);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') {
      throw Object.assign(new Error('Invalid URL protocol: the URL must start with `http:` or `https:`.'), { code: 'UND_ERR_INVALID_ARG' });
    }
    t = { origin: u.origin, path: u.search ? `${u.pathname}${u.search}` : u.pathname };
    if (targets.size >= TARGETS_MAX) targets.clear();
    targets.set(url, t);
  }
  return t;
}

/**
 * One attempt's undici handler: the status once the headers are in, the first
 * EXCERPT_BYTES of the answer, and a deadline over the whole exchange (connect,
 * headers and body), after which the exchange is aborted and the attempt is a
 * timeout. Settles exactly once; never rejects.
 */
class Exchange implements Dispatcher.DispatchHandler {
  private readonly started = performance.now();
  private readonly timer: NodeJS.Timeout;
  private abortFn: ((err?: Error) => void) | null = null;
  /** The deadline passed: the exchange ends as a timeout. */
  private timedOut = false;
  private done = false;
  /** Set once the headers are in: a body cut at the deadline still logs the status the receiver sent. */
  private status: number | null = null;
  private chunks: Buffer[] | null = null;
  private size = 0;

  constructor(
    private readonly resolve: (r: AttemptResult) => void,
    private readonly timeoutMs: number,
  ) {
    this.timer = setTimeout(() => this.expire(), timeoutMs);
  }

  private expire(): void {
    if (this.done) return;
    this.timedOut = true;
    // Before the request reached a connection, it is aborted once it does (onConnect).
    this.abortFn?.(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
  }

  private settle(r: Omit<AttemptResult, 'latencyMs'>): void {
    if (this.done) return;
    this.done = true;
    clearTimeout(this.timer);
    this.resolve({ ok: r.ok, status: r.status, latencyMs: Math.round(performance.now() - this.started), errorClass: r.errorClass, message: r.message, excerpt: r.excerpt });
  }

  onConnect(abort: (err?: Error) => void): void {
    if (this.timedOut) {
      abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
      return;
    }
    this.abortFn = abort;
  }

  onHeaders(statusCode: number): boolean {
    if (statusCode < 200) return true; // 1xx: the answer is still to come
    this.status = statusCode;
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.done) return true;
    (this.chunks ??= []).push(chunk);
    this.size += chunk.length;
    if (this.size >= EXCERPT_BYTES) {
      // Enough kept: the rest of the answer is not read (the connection is closed).
      this.finish();
      this.abortFn?.();
    }
    return true;
  }

  onComplete(): void {
    this.finish();
  }

  onError(err: Error): void {
    this.settle({ ok: false, status: this.status, ...classify(err, { aborted: this.timedOut }), excerpt: null });
  }

  /** The answer is in (or as much of it as is kept). */
  private finish(): void {
    const status = this.status ?? 0;
    const ok = status >= 200 && status < 300;
    const excerpt = this.size === 0 ? null : (this.chunks!.length === 1 ? this.chunks![0]! : Buffer.concat(this.chunks!)).subarray(0, EXCERPT_BYTES).toString('utf8');
    this.settle({ ok, status, errorClass: ok ? null : 'http_status', message: ok ? null : `receiver answered ${status}`, excerpt });
  }
}

/** Sorts a failed exchange into an error class (timeout, dns, connection, tls, refused, network). */
export function classify(err: unknown, signal: { readonly aborted: boolean }, timeoutMs = ATTEMPT_TIMEOUT_MS): Pick<AttemptResult, 'errorClass' | 'message'> {
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

import { request, type Dispatcher } from 'undici';
import { VERSION } from '../version.js';
import { classify } from '../outbound/sender.js';
import type { AttemptOutcome } from '../store/webhooks.js';

/** Longest response body kept from a platform (their answers are small JSON documents). */
const MAX_BODY = 1024 * 1024;
export const EXCERPT_CHARS = 1024;
export const USER_AGENT = `svc-adplatforms/${VERSION}`;

export interface PlatformResponse {
  status: number;
  /** Parsed JSON body, or undefined when the body is not JSON. */
  json: unknown;
  text: string;
  /** From a Retry-After header (seconds or an HTTP date), when there is one. */
  retryAfterMs: number | null;
}

export type Exchange =
  | { ok: true; res: PlatformResponse; latencyMs: number }
  | { ok: false; errorClass: string; message: string; latencyMs: number };

/** One POST to an ad platform through the guarded dispatcher; never throws, never follows redirects. */
export async function post(opts: {
  dispatcher: Dispatcher;
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
}): Promise<Exchange> {
  const started = performance.now();
  const latency = () => Math.round(performance.now() - started);
  const signal = AbortSignal.timeout(opts.timeoutMs);
  try {
    const res = await request(opts.url, {
      method: 'POST',
      dispatcher: opts.dispatcher,
      signal,
      headers: { 'user-agent': USER_AGENT, accept: 'application/json', ...opts.headers },
      body: opts.body,
    });
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res.body) {
      const b = chunk as Buffer;
      size += b.length;
      if (size > MAX_BODY) {
        res.body.destroy();
        break;
      }
      chunks.push(b);
    }
    const text = Buffer.concat(chunks).toString('utf8');
    let json: unknown;
    try {
      json = text ? (JSON.parse(text) as unknown) : undefined;
    } catch {
      json = undefined;
    }
    return { ok: true, res: { status: res.statusCode, json, text, retryAfterMs: retryAfter(res.headers['retry-after']) }, latencyMs: latency() };
  } catch (err) {
    const c = classify(err, signal, opts.timeoutMs);
    return { ok: false, errorClass: c.errorClass ?? 'network', message: c.message ?? 'request failed', latencyMs: latency() };
  }
}

function retryAfter(h: string | string[] | undefined): number | null {
  const v = Array.isArray(h) ? h[0] : h;
  if (!v) return null;
  if (/^\d+$/.test(v.trim())) return Number(v.trim()) * 1000;
  const t = Date.parse(v);
  return Number.isNaN(t) ? null : Math.max(0, t - Date.now());
}

export function excerpt(text: string): string | null {
  return text ? text.slice(0, EXCERPT_CHARS) : null;
}

/** The outcome of one job's attempt, as written to the health log (its outcome columns) and the job row. */
export interface JobOutcome extends AttemptOutcome {
  /** A later attempt may succeed (429, 5xx, network, credentials an operator can fix). */
  retryable: boolean;
  retryAfterMs?: number | null;
}

export function okOutcome(status: number, latencyMs: number, body: string): JobOutcome {
  return { ok: true, status, latencyMs, errorClass: null, message: null, excerpt: excerpt(body), retryable: false };
}

export function networkOutcome(x: Extract<Exchange, { ok: false }>): JobOutcome {
  return { ok: false, status: null, latencyMs: x.latencyMs, errorClass: x.errorClass, message: x.message, excerpt: null, retryable: x.errorClass !== 'destination_refused' };
}

/**
 * Sends `items` in one request and, when the platform refuses the request as a
 * whole (one invalid event rejects all of them), splits it in halves until the
 * refused items are alone: the valid ones still go through, each exactly once.
 */
export async function sendBisecting<T>(
  items: readonly T[],
  send: (batch: readonly T[]) => Promise<{ outcomes: JobOutcome[]; splittable: boolean }>,
): Promise<JobOutcome[]> {
  const r = await send(items);
  if (!r.splittable || items.length < 2) return r.outcomes;
  const mid = Math.ceil(items.length / 2);
  const left = await sendBisecting(items.slice(0, mid), send);
  const right = await sendBisecting(items.slice(mid), send);
  return [...left, ...right];
}

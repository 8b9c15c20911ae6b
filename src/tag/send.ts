/**
 * The tag's outgoing queue: one request per item, each under its endpoint's cap, sent with
 * keep-alive fetch as text/plain (no preflight), retried with backoff when offline or when svc
 * answers 429/5xx, kept in localStorage so the next page sends what this one could not. Every
 * item carries a client-made idempotency_key, so a retry never stores twice.
 */

export const CAPS: Record<string, number> = { '/api/events': 65_536, '/api/identify': 32_768, '/api/lead/capture': 16_384 };
/** What fetch keep-alive and sendBeacon may have in flight per page. */
const KEEPALIVE_BUDGET = 60_000;
const STORE_KEY = 'svc_q';
const MAX_TRIES = 8;

interface Item {
  p: string;
  b: Record<string, unknown>;
  t: number;
}

let base = '';
let queue: Item[] = [];
let busy = false;
let timer: ReturnType<typeof setTimeout> | undefined;
let enabled = false;
let listening = false;

export const bytes = (s: string): number => new Blob([s]).size;

/** A random id such as k_1f3a…: 16 random bytes, hex. */
export function randomId(prefix: string): string {
  const b = crypto.getRandomValues(new Uint8Array(16));
  let s = '';
  for (const x of b) s += x.toString(16).padStart(2, '0');
  return `${prefix}_${s}`;
}

function save(): void {
  try {
    if (queue.length) localStorage.setItem(STORE_KEY, JSON.stringify(queue));
    else localStorage.removeItem(STORE_KEY);
  } catch {
    // Storage full or blocked: the queue lives as long as the page.
  }
}

/** Starts sending to `apiBase`, with what an earlier page left in the queue. */
export function start(apiBase: string): void {
  base = apiBase;
  enabled = true;
  try {
    const left = JSON.parse(localStorage.getItem(STORE_KEY) ?? '[]') as Item[];
    if (Array.isArray(left)) queue = left.concat(queue);
  } catch {
    // An unreadable leftover is dropped.
  }
  if (!listening) addEventListener('online', () => void flush());
  listening = true;
  void flush();
}

/** Stops and forgets everything queued (consent withdrawn). */
export function stop(): void {
  enabled = false;
  queue = [];
  clearTimeout(timer);
  try {
    localStorage.removeItem(STORE_KEY);
  } catch {
    // Nothing to forget.
  }
}

/** Queues one request body for `path`; false (nothing queued) when it is over the endpoint's cap. */
export function enqueue(path: string, body: Record<string, unknown>): boolean {
  body.idempotency_key = randomId('k');
  if (bytes(JSON.stringify(body)) > (CAPS[path] ?? 65_536)) {
    console.warn(`svc: a ${path} request over ${CAPS[path]} bytes was not sent`);
    return false;
  }
  queue.push({ p: path, b: body, t: 0 });
  save();
  void flush();
  return true;
}

async function flush(): Promise<void> {
  if (busy || !enabled) return;
  busy = true;
  clearTimeout(timer);
  try {
    while (queue.length && enabled) {
      const item = queue[0]!;
      const text = JSON.stringify(item.b);
      let done: boolean;
      try {
        const r = await fetch(base + item.p, {
          method: 'POST',
          body: text,
          keepalive: bytes(text) < KEEPALIVE_BUDGET,
          headers: { 'Content-Type': 'text/plain' },
        });
        // A refusal (4xx) will not change on a retry; 429 and 5xx might.
        done = r.status < 500 && r.status !== 429;
      } catch {
        done = false;
      }
      if (!done && ++item.t < MAX_TRIES) {
        timer = setTimeout(() => void flush(), Math.min(30_000, 500 * 2 ** item.t));
        save();
        return;
      }
      queue.shift();
      save();
    }
  } finally {
    busy = false;
  }
}

/** The page is going away: hand what is queued to sendBeacon (the rest stays for the next page). */
export function flushOnHide(): void {
  if (!enabled || busy) return;
  let budget = KEEPALIVE_BUDGET;
  while (queue.length) {
    const text = JSON.stringify(queue[0]!.b);
    const size = bytes(text);
    if (size > budget || !navigator.sendBeacon(base + queue[0]!.p, new Blob([text], { type: 'text/plain' }))) break;
    budget -= size;
    queue.shift();
  }
  save();
}

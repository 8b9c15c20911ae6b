import { TokenBucket } from 'limiter';
import { AppError } from '../errors/app-error.js';
import type { Store } from '../store/store.js';
import { RateBucketsRepo } from '../store/pg/rate-buckets.js';

/** A token bucket policy: `rate` tokens per `windowMs`, holding at most `burst`. */
export interface RatePolicy {
  name: string;
  rate: number;
  windowMs: number;
  burst: number;
}

export type RateDecision =
  | { ok: true; remaining: number; resetSeconds: number }
  | { ok: false; retryAfterSeconds: number; resetSeconds: number };

/** A keyed token-bucket limiter: in this process, or shared by every instance on one database. */
export interface RateLimiter {
  readonly policy: RatePolicy;
  take(key: string): RateDecision | Promise<RateDecision>;
  headers(d: RateDecision): Record<string, string>;
}

/** Who a public-path limit counts: the site, or the client address. */
const SCOPE_TEXT = { site: 'for this site', client_address: 'from this client address' } as const;

/**
 * Takes a token of the public paths' limit (ingestion, /api/decide) for `key`,
 * or throws the documented `rate_limited` refusal (scope, retry_after_seconds
 * and the rate headers). No limiter: nothing to take.
 */
export async function takePublicLimit(limiter: RateLimiter | null, scope: keyof typeof SCOPE_TEXT, key: string): Promise<void> {
  if (!limiter) return;
  const d = await limiter.take(key);
  if (d.ok) return;
  throw new AppError(
    'rate_limited',
    `too many requests ${SCOPE_TEXT[scope]} (${describePolicy(limiter.policy)})`,
    { scope, retry_after_seconds: d.retryAfterSeconds },
    limiter.headers(d),
  );
}

/**
 * The limiter for a policy on a store: in memory on the embedded SQLite store
 * (one process serves it), in PostgreSQL otherwise, so that several instances
 * together enforce the documented limits rather than a multiple of them.
 */
export function createRateLimiter(store: Store, policy: RatePolicy): RateLimiter {
  return store.dialect === 'pg' ? new SharedRateLimiter(store, policy) : new KeyedRateLimiter(policy);
}

/**
 * One token bucket per key (site, client address, API key, token), from the
 * `limiter` package. A full bucket carries no information, so idle keys are
 * swept and memory stays bounded by the number of recently active keys.
 */
export class KeyedRateLimiter implements RateLimiter {
  private readonly buckets = new Map<string, TokenBucket>();
  private lastSweep = Date.now();

  constructor(readonly policy: RatePolicy) {}

  take(key: string): RateDecision {
    let bucket = this.buckets.get(key);
    if (!bucket) {
      bucket = new TokenBucket({
        bucketSize: this.policy.burst,
        tokensPerInterval: this.policy.rate,
        interval: this.policy.windowMs,
      });
      bucket.content = this.policy.burst;
      this.buckets.set(key, bucket);
      this.maybeSweep();
    }
    const perMs = this.policy.rate / this.policy.windowMs;
    if (bucket.tryRemoveTokens(1)) {
      return {
        ok: true,
        remaining: Math.floor(bucket.content),
        resetSeconds: Math.ceil((this.policy.burst - bucket.content) / perMs / 1000),
      };
    }
    return {
      ok: false,
      retryAfterSeconds: Math.max(1, Math.ceil(bucket.getWaitTime(1) / 1000)),
      resetSeconds: Math.ceil((this.policy.burst - bucket.content) / perMs / 1000),
    };
  }

  headers(d: RateDecision): Record<string, string> {
    return rateHeaders(this.policy, d);
  }

  private maybeSweep(): void {
    const now = Date.now();
    if (now - this.lastSweep < 60_000 && this.buckets.size < 100_000) return;
    this.lastSweep = now;
    for (const [key, bucket] of this.buckets) {
      bucket.drip();
      if (bucket.content >= this.policy.burst) this.buckets.delete(key);
    }
  }
}

/** Human wording of a policy, used in 429 messages: "60 requests per minute, burst 120". */
export function describePolicy(p: RatePolicy): string {
  const per =
    p.windowMs === 1000 ? 'second' : p.windowMs === 60_000 ? 'minute' : p.windowMs === 3_600_000 ? 'hour' : `${p.windowMs} ms`;
  return `${p.rate} requests per ${per}, burst ${p.burst}`;
}

/** Draft-6 RateLimit-* headers for a decision (plus Retry-After when refused). */
export function rateHeaders(policy: RatePolicy, d: RateDecision): Record<string, string> {
  const h: Record<string, string> = {
    'RateLimit-Limit': String(policy.burst),
    'RateLimit-Remaining': String(d.ok ? d.remaining : 0),
    'RateLimit-Reset': String(d.resetSeconds),
    'RateLimit-Policy': `${policy.burst};w=${Math.round(policy.windowMs / 1000)};burst=${policy.burst};rate=${policy.rate};comment="${policy.name}"`,
  };
  if (!d.ok) h['Retry-After'] = String(d.retryAfterSeconds);
  return h;
}

/**
 * Token buckets in PostgreSQL (table rate_buckets), one atomic statement per
 * request, refilled by the database clock: the same semantics as the in-memory
 * limiter, shared by every instance. Idle buckets are deleted now and then.
 */
export class SharedRateLimiter implements RateLimiter {
  private readonly buckets: RateBucketsRepo;
  private readonly perMs: number;
  private lastSweep = Date.now();

  constructor(
    store: Store,
    readonly policy: RatePolicy,
  ) {
    this.buckets = new RateBucketsRepo(store.sql);
    this.perMs = policy.rate / policy.windowMs;
  }

  async take(key: string): Promise<RateDecision> {
    const r = await this.buckets.take(`${this.policy.name}:${key}`, { burst: this.policy.burst, perMs: this.perMs });
    this.maybeSweep();
    const resetSeconds = Math.ceil((this.policy.burst - r.tokens) / this.perMs / 1000);
    if (r.ok) return { ok: true, remaining: Math.max(0, Math.floor(r.tokens)), resetSeconds };
    return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - r.tokens) / this.perMs / 1000)), resetSeconds };
  }

  headers(d: RateDecision): Record<string, string> {
    return rateHeaders(this.policy, d);
  }

  private maybeSweep(): void {
    const now = Date.now();
    if (now - this.lastSweep < 60_000) return;
    this.lastSweep = now;
    // A bucket idle for longer than it takes to refill is full: dropping it changes nothing.
    const refillMs = Math.ceil(this.policy.burst / this.perMs);
    void this.buckets.sweep(this.policy.name, Math.max(refillMs, 60_000)).catch(() => undefined);
  }
}

import { TokenBucket } from 'limiter';

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

/**
 * One token bucket per key (site, client address, API key, token), from the
 * `limiter` package. A full bucket carries no information, so idle keys are
 * swept and memory stays bounded by the number of recently active keys.
 */
export class KeyedRateLimiter {
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

  /** Draft-6 RateLimit-* headers for a decision (plus Retry-After when refused). */
  headers(d: RateDecision): Record<string, string> {
    const h: Record<string, string> = {
      'RateLimit-Limit': String(this.policy.burst),
      'RateLimit-Remaining': String(d.ok ? d.remaining : 0),
      'RateLimit-Reset': String(d.resetSeconds),
      'RateLimit-Policy': `${this.policy.burst};w=${Math.round(this.policy.windowMs / 1000)};burst=${this.policy.burst};rate=${this.policy.rate};comment="${this.policy.name}"`,
    };
    if (!d.ok) h['Retry-After'] = String(d.retryAfterSeconds);
    return h;
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

/**
 * Retry policy of webhook deliveries. The default (SVC_WEBHOOK_RETRY_SCHEDULE)
 * follows Svix's published schedule (Stripe retries for three days on a similar
 * curve): an attempt at once, then after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and
 * 10 h, so 8 attempts over about 28 hours, each delay with ±20 % jitter so a
 * receiver that comes back is not hit by a thundering herd. After the last
 * attempt the delivery is failed for good and stays replayable.
 *
 * A destination is disabled automatically when SVC_WEBHOOK_DISABLE_AFTER_FAILURES
 * (50) attempts in a row have failed and the first of them is at least
 * SVC_WEBHOOK_DISABLE_WINDOW (24 h) old: a whole day without a single success.
 */
export interface RetryPolicy {
  delaysMs: readonly number[];
  jitter: number;
}

/** When the attempt after failed attempt number `attempt` (1-based) is due, or null when there is none. */
export function nextAttemptAt(policy: RetryPolicy, attempt: number, now: number, random = Math.random): number | null {
  const base = policy.delaysMs[attempt - 1];
  if (base === undefined) return null;
  const factor = 1 - policy.jitter + 2 * policy.jitter * random();
  return now + Math.round(base * factor);
}

/** Parses a schedule such as "5s,5m,30m,2h" (units ms, s, m, h, d). */
export function parseDelays(text: string): number[] {
  const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
  return text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)
    .map((p) => {
      const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(p);
      if (!m) throw new Error(`bad delay ${JSON.stringify(p)}: use a number with ms, s, m, h or d`);
      return Math.round(Number(m[1]) * units[m[2]!]!);
    });
}

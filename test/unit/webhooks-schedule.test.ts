import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { webhookPolicy } from '../../src/webhooks/policy.js';
import { nextAttemptAt, parseDelays } from '../../src/webhooks/schedule.js';

const S = 1000;
const M = 60 * S;
const H = 60 * M;

describe('webhook retry schedule', () => {
  it('defaults to the documented schedule: 8 attempts over about 28 hours, ±20 % jitter; disable after 50 failures over 24 h', () => {
    const policy = webhookPolicy(loadConfig({}, {}));
    expect(policy.retry).toEqual({ delaysMs: [5 * S, 5 * M, 30 * M, 2 * H, 5 * H, 10 * H, 10 * H], jitter: 0.2 });
    const total = policy.retry.delaysMs.reduce((a, b) => a + b, 0);
    expect(total).toBe(27 * H + 35 * M + 5 * S);
    expect(policy.disableAfter).toEqual({ failures: 50, windowMs: 24 * H });
  });

  it('backs off by the schedule with jitter in [-20 %, +20 %], and has no attempt after the last', () => {
    const retry = { delaysMs: [5 * S, 5 * M], jitter: 0.2 };
    const now = 1_000_000;
    expect(nextAttemptAt(retry, 1, now, () => 0)).toBe(now + 4 * S);
    expect(nextAttemptAt(retry, 1, now, () => 0.5)).toBe(now + 5 * S);
    expect(nextAttemptAt(retry, 1, now, () => 1)).toBe(now + 6 * S);
    expect(nextAttemptAt(retry, 2, now, () => 0.25)).toBe(now + 4.5 * M);
    expect(nextAttemptAt(retry, 3, now, () => 0.5)).toBeNull(); // failed for good
  });

  it('parses delays with units and refuses anything else', () => {
    expect(parseDelays('250ms, 5s,1.5m,2h,1d')).toEqual([250, 5 * S, 90 * S, 2 * H, 24 * H]);
    expect(parseDelays('')).toEqual([]);
    for (const bad of ['5', '5 s', '-5s', '5w', 'soon']) expect(() => parseDelays(bad), bad).toThrow(/bad delay/);
  });

  it('reports a bad schedule or window in the settings as a validation error naming it', () => {
    const bad = (env: Record<string, string>) => () => webhookPolicy(loadConfig({}, env));
    expect(bad({ SVC_WEBHOOK_RETRY_SCHEDULE: '5s,often' })).toThrow(expect.objectContaining({ code: 'validation_failed', message: expect.stringMatching(/^webhook policy: bad delay "often"/) }));
    expect(bad({ SVC_WEBHOOK_DISABLE_WINDOW: '1h,2h' })).toThrow(expect.objectContaining({ code: 'validation_failed', message: 'webhook policy: one duration expected' }));
  });
});

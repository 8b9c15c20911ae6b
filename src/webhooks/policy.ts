import type { Config } from '../config.js';
import { AppError } from '../errors/app-error.js';
import { parseDelays, type RetryPolicy } from './schedule.js';

/** The retry and auto-disable policy from the settings, with bad values reported as usage errors. */
export function webhookPolicy(config: Config): { retry: RetryPolicy; disableAfter: { failures: number; windowMs: number } } {
  try {
    const windowMs = parseDelays(config.webhookDisableWindow);
    if (windowMs.length !== 1) throw new Error('one duration expected');
    return {
      retry: { delaysMs: parseDelays(config.webhookRetrySchedule), jitter: 0.2 },
      disableAfter: { failures: config.webhookDisableAfterFailures, windowMs: windowMs[0]! },
    };
  } catch (err) {
    throw new AppError('validation_failed', `webhook policy: ${(err as Error).message}`);
  }
}

import type { Config } from '../config.js';
import { AppError } from '../errors/app-error.js';
import { parseDelays, type RetryPolicy } from '../webhooks/schedule.js';

/** The retry schedule of ad-platform sends from the settings, with a bad value reported as a usage error. */
export function adRetryPolicy(config: Config): RetryPolicy {
  try {
    return { delaysMs: parseDelays(config.adRetrySchedule), jitter: 0.2 };
  } catch (err) {
    throw new AppError('validation_failed', `SVC_ADPLATFORM_RETRY_SCHEDULE: ${(err as Error).message}`);
  }
}

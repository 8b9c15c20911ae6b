import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { Store } from '../store/store.js';
import type { FireRow } from '../store/triggers.js';
import { createGuardedDispatcher } from '../outbound/guard.js';
import { ATTEMPT_TIMEOUT_MS, type AttemptResult } from '../outbound/sender.js';
import { nextAttemptAt, type RetryPolicy } from '../webhooks/schedule.js';
import { firedPayload, logAttempt, messageBody } from '../domain/triggers/service.js';
import { sendFire } from '../domain/triggers/send.js';
import { LaneLease } from '../store/lane-lease.js';

export interface TriggerWorkerOptions {
  allowPrivate: boolean;
  /** The webhook retry schedule (SVC_WEBHOOK_RETRY_SCHEDULE): the same backoff for messages. */
  retry: RetryPolicy;
  pollMs: number;
  leaseMs: number;
  /** Fires in flight at once. */
  concurrency: number;
  logger: Logger;
  /** Each attempt's outcome once committed (metrics): delivered, the error class, or gone (trigger deleted); latency null when nothing was sent. */
  onAttempt?: (outcome: string, latencyMs: number | null) => void;
  /** For tests: a dispatcher to use instead of the guarded one. */
  httpDispatcher?: Dispatcher;
}

const BATCH = 50;

/**
 * Delivers triggered messages: every pending live fire whose time has come
 * (quiet hours deferred it, or a retry is due) is POSTed, signed like a
 * webhook delivery (X-SVC-Signature keyed by the endpoint's secret or the
 * site_id, X-SVC-Event trigger.message, X-SVC-Delivery = the fire id, stable
 * across retries), through the destination guard, to the site's live
 * endpoint. A 2xx marks the fire delivered and enqueues trigger.fired in the
 * same transaction; anything else schedules the next attempt on the webhook
 * retry schedule, and the fire fails for good after the last one. The outcome
 * is committed after the exchange, so a crash in between sends again:
 * at-least-once, and receivers deduplicate on the fire id. With several
 * instances on one database, the holder of the `triggers` lease sends.
 */
export class TriggerFireWorker {
  private readonly http: Dispatcher;
  private readonly lease: LaneLease;
  private timer: NodeJS.Timeout | null = null;
  private cycling: Promise<void> | null = null;
  private again = false;
  private stopped = true;
  private lastEnqueued = -1;
  readonly counters = { delivered: 0, failedAttempts: 0 };

  constructor(
    private readonly store: Store,
    private readonly opts: TriggerWorkerOptions,
  ) {
    this.http = opts.httpDispatcher ?? createGuardedDispatcher({ allowPrivate: opts.allowPrivate, connections: opts.concurrency });
    this.lease = new LaneLease(store, 'triggers', { ttlMs: opts.leaseMs, workMs: ATTEMPT_TIMEOUT_MS });
  }

  start(): void {
    this.stopped = false;
    this.store.onCommit(() => {
      if (this.store.shared.enqueued.fires !== this.lastEnqueued) this.wake();
    });
    // Another instance queued fires (PostgreSQL NOTIFY): this one may hold the triggers lease.
    this.store.onRemoteWork(() => this.wake());
    this.wake();
  }

  wake(): void {
    if (this.stopped) return;
    if (this.cycling) {
      this.again = true;
      return;
    }
    this.cycling = this.cycle()
      .catch((err: unknown) => this.opts.logger.warn({ err: (err as Error).message }, 'trigger fires: cycle failed; retrying'))
      .finally(() => {
        this.cycling = null;
        if (this.again) {
          this.again = false;
          setImmediate(() => this.wake());
        }
      });
  }

  private async cycle(): Promise<void> {
    let wait = this.opts.pollMs;
    try {
      this.lastEnqueued = this.store.shared.enqueued.fires;
      const leased = this.lease.ensure();
      if (leased !== true && !(await leased)) return;
      for (;;) {
        if (this.stopped || !this.lease.usable()) return;
        const due = await this.store.triggers.due(Date.now(), BATCH);
        for (let i = 0; i < due.length; i += this.opts.concurrency) {
          await Promise.all(due.slice(i, i + this.opts.concurrency).map((f) => this.deliver(f)));
        }
        if (due.length < BATCH) break;
      }
      const next = await this.store.triggers.nextDue();
      if (next !== null) wait = Math.max(5, Math.min(wait, next - Date.now()));
    } finally {
      if (!this.stopped) {
        if (this.timer) clearTimeout(this.timer);
        this.timer = setTimeout(() => this.wake(), wait);
        this.timer.unref();
      }
    }
  }

  /** One attempt of one fire, and its outcome committed. */
  async deliver(f: FireRow): Promise<void> {
    const t = await this.store.triggers.get(f.site_id, f.trigger_id);
    const endpoint = await this.store.triggers.endpoint(f.site_id);
    let result: AttemptResult;
    if (!t) {
      result = { ok: false, status: null, latencyMs: 0, errorClass: null, message: 'the trigger was deleted', excerpt: null };
    } else if (!endpoint?.url) {
      result = { ok: false, status: null, latencyMs: 0, errorClass: 'destination_refused', message: 'no live trigger endpoint is set (triggers_endpoint_set)', excerpt: null };
    } else {
      const body = await messageBody(this.store, t, f, Date.now());
      result = await sendFire(this.http, this.store, endpoint, endpoint.url, f, body);
    }
    await this.store.write(async (tx) => {
      const now = Date.now();
      await logAttempt(tx, f, f.attempts + 1, result, now);
      if (result.ok && t) {
        if (await tx.triggers.markDelivered(f.id, result.status ?? 200, now)) {
          await tx.activity.enqueue(f.site_id, 'trigger.fired', firedPayload(t, f, now), now);
        }
        return;
      }
      const next = t ? nextAttemptAt(this.opts.retry, f.attempts + 1, now) : null;
      const error = `${result.errorClass ?? 'gone'}: ${result.message ?? ''}`.slice(0, 500);
      await tx.triggers.markFailedAttempt(f.id, { final: next === null, nextAttemptAt: next ?? now, status: result.status, error });
    });
    const sent = Boolean(t && endpoint?.url);
    this.opts.onAttempt?.(result.ok ? 'delivered' : (result.errorClass ?? 'gone'), sent ? result.latencyMs : null);
    if (result.ok) this.counters.delivered++;
    else {
      this.counters.failedAttempts++;
      // Ids and the error class only: never the body (it may carry the recipient's email).
      this.opts.logger.debug({ fire: f.id, trigger: f.trigger_id, errorClass: result.errorClass, status: result.status }, 'trigger message attempt failed');
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.cycling;
    await this.lease.release();
    if (!this.opts.httpDispatcher) await this.http.close().catch(() => undefined);
  }
}

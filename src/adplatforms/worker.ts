import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { Store } from '../store/store.js';
import type { Repos } from '../store/repos.js';
import type { AdConnectionRow, AdJobRow, FailedAttempt } from '../store/adplatforms.js';
import { createGuardedDispatcher } from '../outbound/guard.js';
import { nextAttemptAt, type RetryPolicy } from '../webhooks/schedule.js';
import { openConnection, type ParsedConnection } from './connections.js';
import { signalsSchema, type ConversionSignals } from './signals.js';
import { META_BATCH_MAX, metaEvent, metaEventProblem, sendMeta, type MetaEvent } from './meta.js';
import { GOOGLE_BATCH_MAX, GoogleTokens, googleConversion, googleConversionProblem, sendGoogle, type GoogleClickConversion } from './google.js';
import type { JobOutcome } from './http.js';
import { LaneLease } from '../store/lane-lease.js';

export interface AdFanoutOptions {
  retry: RetryPolicy;
  pollMs: number;
  timeoutMs: number;
  /** How long a connection's lease lasts unless renewed (at least three request timeouts are used). */
  leaseMs: number;
  allowPrivate: boolean;
  meta: { baseUrl: string; apiVersion: string };
  google: { baseUrl: string; apiVersion: string; tokenUrl: string };
  logger: Logger;
  /** For tests: a dispatcher to use instead of the guarded one. */
  httpDispatcher?: Dispatcher;
  /** Told of each job attempt once its outcome is committed (for /metrics). */
  onJobOutcome?: (platform: string, connectionId: string, outcome: JobAttemptOutcome) => void;
}

/** How one attempt of a job ended: sent, to be retried, or failed for good. */
export type JobAttemptOutcome = 'delivered' | 'retrying' | 'failed';

interface Lane {
  busy: boolean;
  /** Only the instance holding the connection's lease sends its jobs (one request in flight across instances). */
  lease: LaneLease;
}

/**
 * The ad-platform worker of `svc serve`. One lane per enabled connection
 * sends its due jobs in batches (up to Meta's 1,000 events or Google's 2,000
 * conversions a request), one request in flight per connection, and commits
 * every job's outcome with a health-log row before it looks again. A job keeps
 * its event id / order id (the conversion id) across retries, so a platform
 * that saw an attempt whose answer was lost de-duplicates the next one.
 */
export class AdFanout {
  private readonly http: Dispatcher;
  private readonly lanes = new Map<string, Lane>();
  readonly tokens: GoogleTokens;
  private running = false;
  /** The cycle under way, if any (its queries may still be running when stop() is called). */
  private cycling: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private lastEnqueued = -1;
  private active = 0;
  private idle: (() => void) | null = null;
  private readonly unreadableLogged = new Map<string, number>();
  readonly counters = { delivered: 0, failedAttempts: 0, requests: 0 };

  constructor(
    private readonly store: Store,
    private readonly opts: AdFanoutOptions,
  ) {
    this.http = opts.httpDispatcher ?? createGuardedDispatcher({ allowPrivate: opts.allowPrivate, connections: 8 });
    this.tokens = new GoogleTokens({
      dispatcher: this.http,
      tokenUrl: opts.google.tokenUrl,
      timeoutMs: opts.timeoutMs,
      load: async (id) => {
        const row = await this.store.adplatforms.connection(id);
        if (!row?.token_enc || row.token_expires_at === null) return null;
        try {
          return { token: this.store.secrets.open(row.token_enc), expiresAt: row.token_expires_at };
        } catch {
          return null;
        }
      },
      save: (id, t) => {
        const sealed = this.store.secrets.seal(t.token);
        return this.store.write((tx) => tx.adplatforms.saveToken(id, sealed, t.expiresAt));
      },
    });
  }

  start(): void {
    this.running = true;
    this.store.onCommit(() => {
      if (this.store.shared.enqueued.adJobs !== this.lastEnqueued) this.wake();
    });
    // Another instance wrote jobs (PostgreSQL NOTIFY): this one may hold their connection's lane.
    this.store.onRemoteWork(() => this.wake());
    this.wake();
  }

  async stop(graceMs = 6_000): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    // A cycle whose look-ups are under way finishes them before the store is closed.
    if (this.cycling) await Promise.race([this.cycling, new Promise<void>((r) => setTimeout(r, graceMs).unref())]);
    if (this.active > 0) {
      await Promise.race([new Promise<void>((r) => (this.idle = r)), new Promise<void>((r) => setTimeout(r, graceMs).unref())]);
    }
    if (this.active === 0) await Promise.all([...this.lanes.values()].map((l) => l.lease.release()));
    if (!this.opts.httpDispatcher) await this.http.close().catch(() => undefined);
  }

  private newLease(connectionId: string): LaneLease {
    // A Meta batch that is bisected after a 400 makes several requests in a row: leave room for them.
    const workMs = this.opts.timeoutMs * 2;
    return new LaneLease(this.store, `ad:${connectionId}`, { ttlMs: Math.max(this.opts.leaseMs, workMs * 3), workMs });
  }

  wake(): void {
    if (!this.running) return;
    setImmediate(() => this.runCycle());
  }

  /** Starts a cycle and remembers it, so that stop() waits for its queries before the store is closed. */
  private runCycle(): void {
    const p = this.cycle();
    this.cycling = p;
    void p.finally(() => {
      if (this.cycling === p) this.cycling = null;
    });
  }

  private async cycle(): Promise<void> {
    if (!this.running) return;
    this.lastEnqueued = this.store.shared.enqueued.adJobs;
    let wait = this.opts.pollMs;
    try {
      const rows = await this.store.adplatforms.enabled();
      for (const row of rows) {
        const lane = this.lanes.get(row.id) ?? { busy: false, lease: this.newLease(row.id) };
        this.lanes.set(row.id, lane);
        if (lane.busy) continue;
        const next = await this.store.adplatforms.nextDue(row.id);
        // Another cycle may have started this lane while the query ran: one drain per connection.
        if (next === null || lane.busy) continue;
        if (next <= Date.now()) {
          if (await lane.lease.ensure()) {
            if (!lane.busy) void this.drain(row, lane);
          } else wait = Math.min(wait, 2_000); // another instance holds it: see whether it still does soon
        }
        else wait = Math.min(wait, next - Date.now());
      }
    } catch (err) {
      this.opts.logger.warn({ err: (err as Error).message }, 'could not look for due ad-platform jobs');
    }
    if (!this.running) return; // stopped while the queries ran
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.runCycle(), Math.max(5, wait));
    this.timer.unref();
  }

  /** Sends the connection's due jobs, batch after batch, until none is due. */
  private async drain(row: AdConnectionRow, lane: Lane): Promise<void> {
    lane.busy = true;
    this.active++;
    let progressed = false;
    try {
      let conn: ParsedConnection;
      try {
        conn = openConnection(this.store, row);
      } catch (err) {
        // Looked at again every poll: say it once a minute per connection, not every second.
        const last = this.unreadableLogged.get(row.id) ?? 0;
        if (Date.now() - last >= 60_000) {
          this.unreadableLogged.set(row.id, Date.now());
          this.opts.logger.error({ connection: row.id, err: (err as Error).message }, 'cannot read the ad-platform connection (secret key changed?); its jobs wait');
        }
        return;
      }
      const max = conn.platform === 'meta' ? META_BATCH_MAX : GOOGLE_BATCH_MAX;
      while (this.running) {
        const leased = lane.lease.ensure();
        if (leased !== true && !(await leased)) break;
        const jobs = await this.store.adplatforms.due(row.id, Date.now(), max);
        if (jobs.length === 0) break;
        const outcomes = await this.send(conn, jobs);
        const ended = await this.store.write((tx) => recordJobAttempts(tx, { platform: conn.platform, id: row.id }, jobs, outcomes, this.opts.retry));
        for (const o of ended) {
          if (o === 'delivered') this.counters.delivered++;
          else this.counters.failedAttempts++;
        }
        if (this.opts.onJobOutcome) for (const o of ended) this.opts.onJobOutcome(conn.platform, row.id, o);
        progressed = true;
        if (jobs.length < max) break;
      }
    } catch (err) {
      this.opts.logger.error({ connection: row.id, err: (err as Error).message }, 'ad-platform send failed; retrying');
    } finally {
      lane.busy = false;
      this.active--;
      if (this.active === 0 && this.idle) this.idle();
      // Conversions committed while this lane was busy did not start it: look again now, not at the next
      // poll (only after progress, so a connection that cannot be read does not spin).
      if (progressed) this.wake();
    }
  }

  /** One outcome per job, in order: local refusals first, then the platform's answers. */
  private async send(conn: ParsedConnection, jobs: readonly AdJobRow[]): Promise<JobOutcome[]> {
    const outcomes: (JobOutcome | undefined)[] = new Array(jobs.length);
    const now = Date.now();
    const sendable: number[] = [];
    const bodies: (MetaEvent | GoogleClickConversion)[] = [];
    for (const [i, job] of jobs.entries()) {
      let s: ConversionSignals;
      try {
        s = signalsSchema.parse(JSON.parse(job.payload));
      } catch {
        outcomes[i] = refused('invalid_event', 'the stored job is unreadable');
        continue;
      }
      if (conn.platform === 'meta') {
        const site = await this.store.sites.get(job.site_id);
        const e = metaEvent(s, conn.config, site?.domain ?? null);
        const problem = metaEventProblem(e, now);
        if (problem) outcomes[i] = refused(problem.startsWith('event_time') ? 'expired' : 'invalid_event', problem);
        else {
          sendable.push(i);
          bodies.push(e);
        }
      } else {
        const c = googleConversion(s, conn.config);
        const problem = googleConversionProblem(c);
        if (problem) outcomes[i] = refused('not_attributable', problem);
        else {
          sendable.push(i);
          bodies.push(c);
        }
      }
    }
    if (sendable.length > 0) {
      this.counters.requests++;
      const sent =
        conn.platform === 'meta'
          ? await sendMeta({
              dispatcher: this.http,
              baseUrl: this.opts.meta.baseUrl,
              apiVersion: this.opts.meta.apiVersion,
              timeoutMs: this.opts.timeoutMs,
              config: conn.config,
              secrets: conn.secrets,
              events: bodies as MetaEvent[],
            })
          : await sendGoogle({
              dispatcher: this.http,
              baseUrl: this.opts.google.baseUrl,
              apiVersion: this.opts.google.apiVersion,
              timeoutMs: this.opts.timeoutMs,
              connectionId: conn.row.id,
              config: conn.config,
              secrets: conn.secrets,
              tokens: this.tokens,
              conversions: bodies as GoogleClickConversion[],
            });
      sendable.forEach((jobIndex, k) => (outcomes[jobIndex] = sent[k]));
    }
    return outcomes.map((o) => o ?? refused('invalid_event', 'no outcome'));
  }
}

/**
 * Writes the outcomes of one batch of a connection's jobs: their health-log
 * rows and new states (delivered, due again, failed for good), each as one
 * set of rows: one statement each on PostgreSQL whatever the batch's size,
 * the prepared statement once per job on SQLite. Runs inside the write
 * operation of `tx`; returns how each attempt ended, in the jobs' order.
 */
export async function recordJobAttempts(
  tx: Repos,
  conn: { platform: string; id: string },
  jobs: readonly AdJobRow[],
  outcomes: readonly JobOutcome[],
  retry: RetryPolicy,
): Promise<JobAttemptOutcome[]> {
  const now = Date.now();
  await tx.webhooks.logAttempts(
    jobs.map((job, i) => ({
      where: { site_id: job.site_id, integration: conn.platform, destination_id: conn.id, delivery_id: job.id, event_type: 'conversion', kind: 'attempt', attempt: job.attempts + 1 },
      outcome: outcomes[i]!,
    })),
    now,
  );
  const delivered: { id: string; status: number }[] = [];
  const failed: ({ id: string } & FailedAttempt)[] = [];
  const ended = jobs.map((job, i): JobAttemptOutcome => {
    const o = outcomes[i]!;
    if (o.ok) {
      delivered.push({ id: job.id, status: o.status ?? 200 });
      return 'delivered';
    }
    const scheduled = o.retryable ? nextAttemptAt(retry, job.attempts + 1, now) : null;
    const next = scheduled === null ? null : Math.max(scheduled, now + (o.retryAfterMs ?? 0));
    const error = `${o.errorClass ?? 'error'}: ${o.message ?? ''}`.slice(0, 500);
    failed.push({ id: job.id, final: next === null, nextAttemptAt: next ?? now, status: o.status, error, now });
    return next === null ? 'failed' : 'retrying';
  });
  await tx.adplatforms.markDeliveredMany(delivered, now);
  await tx.adplatforms.markFailedMany(failed);
  return ended;
}

function refused(errorClass: string, message: string): JobOutcome {
  return { ok: false, status: null, latencyMs: 0, errorClass, message, excerpt: null, retryable: false };
}

import { pino, type Logger } from 'pino';
import type { Agent } from 'undici';
import type { Store } from '../store/store.js';
import { createGuardedDispatcher } from '../outbound/guard.js';
import { runGenerationJob } from '../domain/generation/service.js';
import { runCrawlJob } from '../domain/crawl/service.js';

/** A running job's lease; renewed every third of it. A job whose lease ran out (its process died) is taken again. */
export const JOB_LEASE_MS = 60_000;
/** How often the runner looks for jobs it was not woken for (another instance's expired leases). */
const POLL_MS = 10_000;
/** Claims of one job before it is failed for good (a job that crashes its process every time). */
export const MAX_ATTEMPTS = 3;

/** One kind of job, as the runner sees it. */
interface Lane {
  name: string;
  waiting: (now: number) => Promise<boolean>;
  claim: (now: number) => Promise<{ id: string; attempts: number; run: (signal: AbortSignal) => Promise<void> } | undefined>;
  renew: (id: string, until: number) => Promise<void>;
  release: (id: string) => Promise<void>;
  fail: (id: string, error: string) => Promise<void>;
}

/**
 * Runs generation jobs and sitemap crawls in this process, one at a time per
 * kind. A job is a row (queued → running → finished/failed): the tool that
 * queues it wakes the runner after its transaction commits; a running job
 * holds a lease it renews, so a job left running by a crash (its lease runs
 * out) is taken again at start or by the next poll, up to MAX_ATTEMPTS claims.
 * Stopping gives running jobs back at once.
 */
export class ContentJobs {
  private readonly lanes: Lane[];
  private readonly draining = new Map<string, Promise<void>>();
  private readonly again = new Set<string>();
  private readonly abort = new AbortController();
  private timer: NodeJS.Timeout | null = null;
  private readonly http: Agent;

  constructor(
    s: Store,
    private readonly opts: { allowPrivate: boolean; logger: Logger },
  ) {
    this.http = createGuardedDispatcher({ allowPrivate: opts.allowPrivate, connections: 16 });
    this.lanes = [
      {
        name: 'generation',
        waiting: (now) => s.generation.jobs.hasClaimable(now),
        claim: async (now) => {
          const job = await s.write((tx) => tx.generation.jobs.claim(now, JOB_LEASE_MS));
          return job && { id: job.id, attempts: job.attempts, run: (signal) => runGenerationJob(s, job, signal) };
        },
        renew: (id, until) => s.write((tx) => tx.generation.jobs.renew(id, until)),
        release: (id) => s.write((tx) => tx.generation.jobs.release(id)),
        fail: (id, error) => s.write((tx) => tx.generation.jobs.fail(id, error, Date.now())),
      },
      {
        name: 'crawl',
        waiting: (now) => s.crawl.jobs.hasClaimable(now),
        claim: async (now) => {
          const crawl = await s.write((tx) => tx.crawl.jobs.claim(now, JOB_LEASE_MS));
          return crawl && { id: crawl.id, attempts: crawl.attempts, run: (signal) => runCrawlJob(s, crawl, { dispatcher: this.http, allowPrivate: opts.allowPrivate, signal }) };
        },
        renew: (id, until) => s.write((tx) => tx.crawl.jobs.renew(id, until)),
        release: (id) => s.write((tx) => tx.crawl.jobs.release(id)),
        fail: (id, error) => s.write((tx) => tx.crawl.jobs.fail(id, error, Date.now())),
      },
    ];
  }

  /** Takes queued and abandoned jobs now, and polls for them from then on. */
  start(): void {
    this.wake();
    this.timer = setInterval(() => this.wake(), POLL_MS);
    this.timer.unref();
  }

  /** Looks for work in every lane (call after committing a queued job). */
  wake(): void {
    if (this.abort.signal.aborted) return;
    for (const lane of this.lanes) {
      if (this.draining.has(lane.name)) {
        this.again.add(lane.name);
        continue;
      }
      const p = this.drain(lane)
        .catch((err: unknown) => this.opts.logger.warn({ err: (err as Error).message, lane: lane.name }, 'background job lane failed; retrying on the next poll'))
        .finally(() => {
          this.draining.delete(lane.name);
          if (this.again.delete(lane.name)) this.wake();
        });
      this.draining.set(lane.name, p);
    }
  }

  private async drain(lane: Lane): Promise<void> {
    for (;;) {
      if (this.abort.signal.aborted) return;
      if (!(await lane.waiting(Date.now()))) return;
      const job = await lane.claim(Date.now());
      if (!job) return;
      if (job.attempts > MAX_ATTEMPTS) {
        await lane.fail(job.id, `gave up after ${MAX_ATTEMPTS} attempts (the process running it stopped each time)`);
        continue;
      }
      const renew = setInterval(() => {
        lane.renew(job.id, Date.now() + JOB_LEASE_MS).catch(() => undefined);
      }, JOB_LEASE_MS / 3);
      renew.unref();
      try {
        await job.run(this.abort.signal);
        if (this.abort.signal.aborted) await lane.release(job.id);
      } catch (err) {
        if (this.abort.signal.aborted) await lane.release(job.id);
        else {
          const message = (err as Error).message || String(err);
          this.opts.logger.info({ job: job.id, lane: lane.name, err: message }, 'background job failed');
          await lane.fail(job.id, message);
        }
      } finally {
        clearInterval(renew);
      }
    }
  }

  /** Stops taking jobs, aborts running ones and gives them back (the next start takes them again). */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.abort.abort();
    await Promise.allSettled([...this.draining.values()]);
    await this.http.close().catch(() => undefined);
  }
}

const RUNNERS = new WeakMap<Store, ContentJobs>();

/** Starts the job runner of a store (svc serve). */
export function startContentJobs(store: Store, opts: { allowPrivate: boolean; logger: Logger }): ContentJobs {
  const jobs = new ContentJobs(store, opts);
  RUNNERS.set(store, jobs);
  jobs.start();
  return jobs;
}

/**
 * Wakes the runner of a store after a job was queued; in a process that did
 * not start one (a CLI), starts one with the caller's destination setting.
 */
export function wakeContentJobs(store: Store, allowPrivate: boolean): void {
  let jobs = RUNNERS.get(store);
  if (!jobs) jobs = startContentJobs(store, { allowPrivate, logger: pino({ level: 'silent' }) });
  jobs.wake();
}

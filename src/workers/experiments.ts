import type { Logger } from 'pino';
import type { Store } from '../store/store.js';
import { enforceGuardrail, guardrailsOf, guardrailTrips } from '../domain/experiments/guardrails.js';
import { endIfDue, stopIfSignificant } from '../domain/experiments/lifecycle.js';
import { earlyStopVerdict, resultsOf } from '../domain/experiments/results.js';
import { PeriodicWorker } from './periodic.js';

export interface ExperimentsWorkerOptions {
  /** How often a pass runs (ms; SVC_EXPERIMENTS_INTERVAL_MS). */
  intervalMs: number;
  /** The pass's lease (with several instances on one database, one of them runs each pass). */
  leaseMs: number;
  logger: Logger;
}

const PAGE = 100;

/**
 * Ends layout tests and enforces their guardrail, every `intervalMs`, in
 * whichever instance holds the `experiments` lease:
 * 1. running or paused tests past their scheduled end end (reason scheduled_end);
 * 2. running tests with stop_early end when the extra-strong early-stopping bar is met (reason significance);
 * 3. running tests whose variant arm trips the Core Web Vitals guardrail are paused (experiment.guardrail_paused).
 * Each test is decided in its own write operation, which re-reads its status, so a pass never
 * acts on a test an operator changed meanwhile.
 */
export class ExperimentsWorker extends PeriodicWorker<{ ended: number; stoppedEarly: number; guardrailPaused: number }> {
  readonly counters = { passes: 0, ended: 0, stoppedEarly: 0, guardrailPaused: 0 };

  constructor(
    store: Store,
    private readonly opts: ExperimentsWorkerOptions,
  ) {
    super(store, 'experiments', { intervalMs: opts.intervalMs, firstDelayMs: opts.intervalMs, lease: { ttlMs: opts.leaseMs, workMs: 5_000 } }, opts.logger, 'layout-test pass');
  }

  /** One pass; resolves with what it did. */
  async pass(): Promise<{ ended: number; stoppedEarly: number; guardrailPaused: number }> {
    const done = { ended: 0, stoppedEarly: 0, guardrailPaused: 0 };
    if (!(await this.lease.ensure())) return done;
    const ok = async () => {
      if (this.stopped) return false;
      const renewed = this.lease.ensure();
      return (renewed === true || (await renewed)) && this.lease.usable();
    };
    for (;;) {
      const due = await this.store.experiments.dueToEnd(Date.now(), PAGE);
      let progressed = false;
      for (const row of due) {
        if (!(await ok())) return done;
        // Aggregated on reads; the write re-checks the status and records the results.
        const now = Date.now();
        const results = await resultsOf(this.store, row, now);
        if (await this.store.write((tx) => endIfDue(tx, row.site_id, row.id, now, results))) {
          done.ended++;
          progressed = true;
        }
      }
      if (due.length < PAGE || !progressed) break;
    }
    let after = '';
    for (;;) {
      const page = await this.store.experiments.running(after, PAGE);
      for (const row of page) {
        if (!(await ok())) return done;
        // Decided on reads; the write only re-checks the status (no aggregation inside a transaction).
        if (row.stop_early === 1) {
          const now = Date.now();
          const verdict = await earlyStopVerdict(this.store, row, now);
          if (verdict.stop) {
            const results = await resultsOf(this.store, row, now);
            if (await this.store.write((tx) => stopIfSignificant(tx, row.site_id, row.id, now, { verdict, results }))) {
              done.stoppedEarly++;
              continue;
            }
          }
        }
        if (
          guardrailsOf(row).length > 0 &&
          (await guardrailTrips(this.store, row)) &&
          (await this.store.write((tx) => enforceGuardrail(tx, row.site_id, row.id, Date.now())))
        ) {
          done.guardrailPaused++;
        }
      }
      if (page.length < PAGE) break;
      after = page[page.length - 1]!.id;
    }
    this.counters.passes++;
    this.counters.ended += done.ended;
    this.counters.stoppedEarly += done.stoppedEarly;
    this.counters.guardrailPaused += done.guardrailPaused;
    if (done.ended + done.stoppedEarly + done.guardrailPaused > 0) this.opts.logger.info(done, 'layout tests ended or paused');
    return done;
  }
}

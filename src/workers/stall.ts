import type { Logger } from 'pino';
import type { Store } from '../store/store.js';
import { runStallPass } from '../domain/stall/pass.js';
import { isoWeekAt, isTimeZone } from '../domain/stall/week.js';
import { PeriodicWorker } from './periodic.js';

export interface StallWorkerOptions {
  /** How often the worker looks for sites whose last ISO week has not been analysed (ms). */
  intervalMs: number;
  /** The pass's lease (with several instances, one of them runs it). */
  leaseMs: number;
  logger: Logger;
}

/**
 * The weekly stall pass: every `intervalMs` (an hour by default) it runs the pass
 * for each site whose last completed ISO week (in the site's time zone) has no
 * recorded run yet, and records the run. With several instances on one
 * database only the holder of the `stall` lease runs it; the findings' unique
 * key keeps a pass that does run twice from filing anything twice.
 */
export class StallWorker extends PeriodicWorker<number> {
  readonly counters = { passes: 0, filed: 0 };

  constructor(
    store: Store,
    private readonly opts: StallWorkerOptions,
  ) {
    // One site's pass is one unit of work: the lease must outlast it.
    super(store, 'stall', { intervalMs: opts.intervalMs, firstDelayMs: Math.min(opts.intervalMs, 60_000), lease: { ttlMs: Math.max(opts.leaseMs, 10 * 60_000), workMs: 5 * 60_000 } }, opts.logger, 'stall pass');
  }

  /** Runs the pass for every site due; resolves with the findings filed. */
  async pass(now = Date.now()): Promise<number> {
    let filed = 0;
    for (const site of await this.store.sites.list()) {
      if (this.stopped) break;
      if (!isTimeZone(site.timezone)) {
        this.opts.logger.warn({ site: site.id }, 'stall pass skipped: the site time zone is not a known IANA zone');
        continue;
      }
      const week = isoWeekAt(now, site.timezone, 1);
      if (await this.store.stall.ranWeek(site.id, week.label)) continue;
      if (!(await this.lease.ensure())) break;
      const r = await runStallPass(this.store, site.id, { asOf: week.end - 1 });
      await this.store.write((tx) => tx.stall.recordRun(site.id, week.label, r.filed.length, Date.now()));
      filed += r.filed.length;
      if (r.filed.length > 0) this.opts.logger.info({ site: site.id, week: week.label, filed: r.filed.length }, 'stall pass filed findings');
    }
    this.counters.passes++;
    this.counters.filed += filed;
    return filed;
  }
}

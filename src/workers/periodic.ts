import type { Logger } from 'pino';
import type { Store } from '../store/store.js';
import { LaneLease } from '../store/lane-lease.js';

/**
 * A pass that runs every `intervalMs` in whichever instance holds its lane
 * lease (the retention clean-up, the layout-test pass, the weekly stall pass).
 * The first pass runs after `firstDelayMs`; a failed pass is logged and tried
 * again at the next interval; `stop` waits for a running pass and gives the
 * lease back.
 */
export abstract class PeriodicWorker<R> {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  protected stopped = false;
  protected readonly lease: LaneLease;

  constructor(
    protected readonly store: Store,
    lane: string,
    private readonly timing: { intervalMs: number; firstDelayMs: number; lease: { ttlMs: number; workMs: number } },
    protected readonly logger: Logger,
    /** What the log says when a pass fails ("… failed; trying again later"). */
    private readonly what: string,
  ) {
    this.lease = new LaneLease(store, lane, timing.lease);
  }

  /** One pass; resolves with what it did. */
  abstract pass(): Promise<R>;

  start(): void {
    this.schedule(this.timing.firstDelayMs);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.pass()
        .then(() => undefined)
        .catch((err: unknown) => this.logger.warn({ err: (err as Error).message }, `${this.what} failed; trying again later`))
        .finally(() => {
          this.running = null;
          this.schedule(this.timing.intervalMs);
        });
    }, ms);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
    await this.lease.release();
  }
}

import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { Store } from '../store/store.js';
import type { Repos } from '../store/repos.js';
import type { DestinationRow, DueKey, DueRow, NewDelivery } from '../store/webhooks.js';
import { createGuardedDispatcher } from '../outbound/guard.js';
import { ATTEMPT_TIMEOUT_MS, sendSigned, type AttemptResult } from '../outbound/sender.js';
import { INSTANCE_ID, LaneLease } from '../store/lane-lease.js';
import { nextAttemptAt, type RetryPolicy } from './schedule.js';
import { subscribes, signingChanged, signingKeys } from './destinations.js';
import type { SigningKeys } from '../outbound/signer.js';

export interface DispatcherOptions {
  allowPrivate: boolean;
  retry: RetryPolicy;
  disableAfter: { failures: number; windowMs: number };
  /** Deliveries in flight per destination. */
  concurrency: number;
  /** Longest sleep between looks at the database (other processes write there too). */
  pollMs: number;
  /** How long a destination's lease lasts unless renewed (instances sharing a database take lanes over after it). */
  leaseMs: number;
  logger: Logger;
  /** For tests: a dispatcher to use instead of the guarded one. */
  httpDispatcher?: Dispatcher;
  /** Told of each attempt once its outcome is committed (for /metrics). */
  onAttempt?: (destinationId: string, result: AttemptResult) => void;
}

interface Lane {
  dest: DestinationRow;
  signing: SigningKeys;
  events: ReadonlySet<string> | 'all';
  queue: DueRow[];
  /** Ids buffered or in flight: not to be loaded again until their outcome is committed. */
  known: Set<string>;
  /**
   * While a refill's query runs: the ids let go of `known` meanwhile (their outcome committed). The query's
   * rows may predate that commit, so these are skipped as well. Null when no refill is under way. (A copy
   * of `known` per refill did the same at the cost of copying up to a lane's cap of ids every page.)
   */
  released: Set<string> | null;
  inFlight: number;
  /** Exchanges that have ended and whose outcome is being committed (ids still in `known`). */
  recording: number;
  refilling: boolean;
  /** Due deliveries may exist that are neither queued nor in flight: the next refill has something to look for. */
  mayHaveMore: boolean;
  /**
   * The last row the lane's refills loaded in due order, while the rows past it are still to be read: the
   * next refill reads only those (keyset paging), instead of the rows in flight and awaiting their commit
   * again. Null: the next refill reads from the start of the due order.
   */
  cursor: DueKey | null;
  /** Counts the requests to read from the start again (new work, a failed record): a refill begun before one must not set a cursor. */
  restarts: number;
  /** Counts the times the lane's buffer was dropped (lease lost, handed over): a refill begun before then is stale. */
  generation: number;
  /** Only the instance holding the destination's lease sends its deliveries (ordering and the cap hold across instances). */
  lease: LaneLease;
  /** Handing the destination to another instance: start nothing new, release the lease once idle. */
  yielding: boolean;
}

const FANOUT_BATCH = 1000;
/**
 * Rows a lane's refill reads, per slot of its concurrency: a page of the due order (256 at the default
 * concurrency). Each refill is two statements (the destination as it is now, then the page), so on PostgreSQL
 * pages of 64 made them 0.07–0.08 statements a delivery of a drain, and pages of 256 0.04–0.05. The lane holds
 * at most a page and a window buffered (the next page loads once a window is left), a few hundred KB.
 */
const PAGE_PER_SLOT = 16;
/**
 * Exchanges that have ended and await the commit of their outcome, per slot
 * of a lane's concurrency: past that the lane starts nothing new, so a slow
 * database holds it back. Outcomes are committed in lots (see OUTCOME_BATCH),
 * so at a few thousand deliveries a second a lane has a few hundred outcomes
 * awaiting their commit; the cap is twice the largest lot a lane waits for.
 */
const RECORDING_PER_SLOT = 32;
/**
 * Outcomes of deliveries are handed to the writer together, once OUTCOME_BATCH
 * have gathered or the first of them has waited OUTCOME_LINGER_MS: one larger
 * transaction instead of many small ones. Each lot rewrites the pages it
 * touches (the deliveries' rows and due index, the health log's table and
 * indexes) whatever its size, so on SQLite the bytes written per delivery
 * fall as lots grow (a drain at a few thousand a second: lots of ~14 wrote
 * 7 KB of WAL and checkpoint per delivery, lots of ~100 about 4 KB), and on
 * PostgreSQL each lot costs a fixed few round trips. The wait applies after a
 * lot settles too: what gathered meanwhile goes at once only when it is a
 * full lot or has waited long enough. At most OUTCOME_MAX go in one lot. Only
 * the commit of an outcome waits: the exchange's slot is free at once, and a
 * lane's own cap (RECORDING_PER_SLOT) is twice the lot it waits for.
 */
const OUTCOME_LINGER_MS = 20;
/** After a failed read or write (the database away or busy), the next cycle comes this soon, however long the poll interval. */
const RETRY_SOON_MS = 1_000;
const OUTCOME_BATCH = 256;
const OUTCOME_MAX = 1000;
/** Lots of outcomes being written at once (one gathers while the other commits). */
const OUTCOME_WRITES = 2;

/**
 * The webhook workers of `svc serve`. Stage one turns outbox rows into one
 * delivery per subscribed destination (in one transaction with marking the
 * rows dispatched). Stage two runs one lane per destination with its own
 * queue and concurrency cap, so a slow or failing receiver never delays the
 * others. Every attempt and its outcome are committed before the delivery is
 * let go, so a restart resumes exactly the deliveries that are not done:
 * at-least-once, with the delivery id stable across retries.
 */
export class WebhookDispatcher {
  private readonly lanes = new Map<string, Lane>();
  private readonly http: Dispatcher;
  private running = false;
  private fanningOut = false;
  private fanoutAgain = false;
  /** A read or write of this cycle failed (the database away or busy): the next cycle comes within RETRY_SOON_MS, whatever the poll interval. */
  private retrySoon = false;
  private lastEnqueued = -1;
  private timer: NodeJS.Timeout | null = null;
  private lanesLoadedAt = 0;
  private idle: (() => void) | null = null;
  private outcomes: PendingOutcome[] = [];
  /** performance.now() when the first of `outcomes` arrived. */
  private outcomesSince = 0;
  private outcomeTimer: NodeJS.Timeout | null = null;
  /** A full lot: OUTCOME_BATCH, or less when one lane's cap would stop it short of that (a low concurrency). */
  private readonly outcomeBatch: number;
  /** Lots of outcomes handed to the writer and not yet settled. */
  private outcomeWrites = 0;
  /** prefetched: refills begun while the lane still had deliveries buffered (the next page loaded ahead). */
  readonly counters = { delivered: 0, failedAttempts: 0, fannedOut: 0, prefetched: 0 };
  /** This instance's heartbeat (lane `instance:<id>`): other instances count live ones to share destinations out. */
  private heartbeat: LaneLease | null = null;
  /** Destinations this instance may hold at once: its fair share among the live instances. */
  private share = Number.MAX_SAFE_INTEGER;

  constructor(
    private readonly store: Store,
    private readonly opts: DispatcherOptions,
  ) {
    this.outcomeBatch = Math.max(1, Math.min(OUTCOME_BATCH, (opts.concurrency * RECORDING_PER_SLOT) / 2));
    this.http = opts.httpDispatcher ?? createGuardedDispatcher({ allowPrivate: opts.allowPrivate, connections: opts.concurrency * 4 });
  }

  start(): void {
    this.running = true;
    this.store.onCommit(() => {
      if (this.store.shared.enqueued.outbox !== this.lastEnqueued) this.wake();
    });
    // Another instance wrote outbox rows or deliveries (PostgreSQL NOTIFY): this one may hold their lane.
    this.store.onRemoteWork(() => this.wake());
    this.wake();
  }

  /** Stops taking new work and waits (at most `graceMs`) for deliveries in flight to be recorded. */
  async stop(graceMs = 6_000): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    if (this.totalInFlight() > 0) {
      await Promise.race([
        new Promise<void>((r) => (this.idle = r)),
        new Promise<void>((r) => setTimeout(r, graceMs).unref()),
      ]);
    }
    // A fan-out transaction under way finishes before the store is closed.
    const until = Date.now() + graceMs;
    while (this.fanningOut && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
    if (this.totalInFlight() === 0) await Promise.all([...this.lanes.values()].map((l) => l.lease.release()));
    await this.heartbeat?.release();
    if (!this.opts.httpDispatcher) await this.http.close().catch(() => undefined);
  }

  /** A lane's lease could not be taken or renewed (the database away): the next cycle within RETRY_SOON_MS. */
  private cycleSoon(): void {
    this.retrySoon = true;
    if (!this.running) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.cycle(true), RETRY_SOON_MS);
    this.timer.unref();
  }

  /** Looks for new outbox rows and due deliveries soon. */
  wake(): void {
    if (!this.running) return;
    setImmediate(() => void this.cycle());
  }

  private totalInFlight(): number {
    let n = 0;
    for (const lane of this.lanes.values()) n += lane.inFlight + lane.recording;
    return n;
  }

  /** `timed`: the poll timer's cycle, not a wake-up for new work (see pumpAll). */
  private async cycle(timed = false): Promise<void> {
    if (!this.running) return;
    try {
      await this.fanOut();
      await this.refreshLanes();
      await this.pumpAll(!timed); // retries come due and other processes write: look again on every cycle
    } catch (err) {
      // The database is unreachable (or went away under a stopping server): the next cycle tries again soon. Without
      // this, the rejection went unhandled (the process exited with a stack trace) and no poll was set again.
      this.retrySoon = true;
      if (this.running) this.opts.logger.warn({ err: (err as Error).message }, 'webhook dispatch cycle failed; retrying');
    }
    await this.schedule();
  }

  /**
   * Pumps every lane, marking each as possibly having due deliveries; resolves once each has started what it can.
   * `restart`: the lanes' next refill reads from the start of the due order, as after new work (a fan-out here,
   * another instance's NOTIFY): a fan-out transaction that began before rows a lane's cursor passed may have
   * committed since, with an earlier next_attempt_at (and another instance's clock may lag). The poll timer's
   * cycle keeps the cursors, so a long drain does not re-read what is in flight every poll; a retry comes due
   * past the cursor, and paging that reaches the end reads from the start once anyway.
   */
  private async pumpAll(restart = true): Promise<void> {
    const lanes = [...this.lanes.values()];
    for (const lane of lanes) {
      lane.mayHaveMore = true;
      if (restart) restartFromBeginning(lane);
    }
    await Promise.all(lanes.map((lane) => this.pump(lane)));
  }

  private async schedule(): Promise<void> {
    if (!this.running) return;
    if (this.timer) clearTimeout(this.timer);
    let wait = this.opts.pollMs;
    if (this.retrySoon) {
      this.retrySoon = false;
      wait = Math.min(wait, RETRY_SOON_MS);
    }
    try {
      // Only an idle lane of an enabled destination needs the timer: a lane with deliveries
      // in flight is pumped again as each one is recorded, and a disabled destination's
      // pending deliveries cannot be sent. (A global min(next_attempt_at) over every pending
      // delivery scanned the whole backlog, and its past-due rows re-ran this cycle every 5 ms.)
      for (const lane of this.lanes.values()) {
        if (lane.inFlight > 0 || lane.dest.enabled !== 1 || !lane.lease.usable()) continue;
        const next = (await this.store.webhooks.due(lane.dest.id, Number.MAX_SAFE_INTEGER, 1))[0]?.next_attempt_at;
        if (next !== undefined) wait = Math.max(5, Math.min(wait, next - Date.now()));
      }
    } catch {
      // the database is busy; poll again later
    }
    if (!this.running) return; // stopped while the queries ran
    if (this.timer) clearTimeout(this.timer); // another cycle may have set one meanwhile
    this.timer = setTimeout(() => void this.cycle(true), wait);
    this.timer.unref();
  }

  /** Stage one: outbox rows become deliveries, in batches, until the outbox is drained. */
  private async fanOut(): Promise<void> {
    if (this.fanningOut) {
      this.fanoutAgain = true;
      return;
    }
    this.fanningOut = true;
    try {
      for (;;) {
        if (!this.running) break; // stopping: the store closes next
        this.fanoutAgain = false;
        this.lastEnqueued = this.store.shared.enqueued.outbox;
        const { n, delivered } = await this.store.write(async (tx) => {
          const dests = await tx.webhooks.enabledDestinations();
          // No destination to deliver to: the rows are marked fanned out without being read.
          if (dests.length === 0) return { n: await tx.webhooks.skipOutbox(FANOUT_BATCH, Date.now()), delivered: 0 };
          const rows = await tx.webhooks.claimOutbox(FANOUT_BATCH);
          if (rows.length === 0) return { n: 0, delivered: 0 };
          const now = Date.now();
          const deliveries: NewDelivery[] = [];
          for (const row of rows) {
            for (const d of dests) {
              if (d.site_id !== row.site_id || !subscribes(d, row.event_type)) continue;
              deliveries.push({ siteId: row.site_id, destinationId: d.id, outboxId: row.id, eventType: row.event_type, payload: row.payload, now });
            }
          }
          // One statement for the batch on PostgreSQL, not one round trip per delivery.
          await tx.webhooks.insertDeliveries(deliveries);
          await tx.webhooks.markDispatched(rows, now);
          return { n: rows.length, delivered: deliveries.length };
        });
        this.counters.fannedOut += n;
        // New deliveries: their destinations' lanes (a destination may be new) look at once. Rows no
        // destination wanted (no destination, or none subscribed) leave the lanes as they were: the
        // cycle's own refresh and pump follow anyway, without the forced re-read and rebalance per batch.
        if (delivered > 0) {
          await this.refreshLanes(true);
          await this.pumpAll();
        }
        if (n < FANOUT_BATCH && !this.fanoutAgain) break;
      }
    } catch (err) {
      this.retrySoon = true;
      this.opts.logger.error({ err: (err as Error).message }, 'webhook fan-out failed; retrying');
    } finally {
      this.fanningOut = false;
    }
  }

  private heldLanes(): number {
    let n = 0;
    for (const lane of this.lanes.values()) if (lane.lease.held()) n++;
    return n;
  }

  /**
   * Shares destinations out among the instances on one database: each holds at
   * most ceil(destinations / live instances), and gives up idle ones beyond
   * that so another instance can take them. One instance (SQLite) holds all.
   */
  private async rebalance(destinations: number): Promise<void> {
    try {
      this.heartbeat ??= new LaneLease(this.store, `instance:${INSTANCE_ID}`, { ttlMs: this.opts.leaseMs, workMs: 0 });
      await this.heartbeat.ensure();
      const live = Math.max(1, await this.store.leases.countLive('instance:'));
      this.share = Math.max(1, Math.ceil(destinations / live));
    } catch {
      return; // the database is busy or away: keep the current share
    }
    for (const lane of this.lanes.values()) if (!lane.lease.held()) lane.yielding = false;
    // Surplus destinations stop taking new work and are released once their exchanges are recorded
    // (a busy destination would otherwise never be handed over).
    let surplus = this.heldLanes() - this.share;
    const held = [...this.lanes.values()].filter((l) => l.lease.held()).sort((a, b) => Number(b.yielding) - Number(a.yielding));
    for (const lane of held) {
      if (surplus <= 0) {
        lane.yielding = false;
        continue;
      }
      surplus--;
      lane.yielding = true;
      if (lane.inFlight + lane.recording > 0) continue;
      dropQueue(lane);
      lane.yielding = false;
      await lane.lease.release();
    }
  }

  /** Keeps one lane per enabled destination; re-reads destinations at most once a second unless forced. */
  private async refreshLanes(force = false): Promise<void> {
    const now = Date.now();
    if (!force && now - this.lanesLoadedAt < 1000) return;
    this.lanesLoadedAt = now;
    const dests = await this.store.webhooks.enabledDestinations();
    await this.rebalance(dests.length);
    const seen = new Set<string>();
    for (const d of dests) {
      seen.add(d.id);
      const lane = this.lanes.get(d.id);
      const events = subscribedSet(d);
      if (lane) {
        if (signingChanged(lane.dest, d)) lane.signing = signingKeys(this.store, d);
        lane.dest = d;
        lane.events = events;
      } else {
        this.lanes.set(d.id, {
          dest: d,
          signing: signingKeys(this.store, d),
          events,
          queue: [],
          known: new Set(),
          released: null,
          inFlight: 0,
          recording: 0,
          refilling: false,
          mayHaveMore: true,
          cursor: null,
          restarts: 0,
          generation: 0,
          lease: new LaneLease(this.store, `webhook:${d.id}`, { ttlMs: this.opts.leaseMs, workMs: ATTEMPT_TIMEOUT_MS }),
          yielding: false,
        });
      }
    }
    for (const [id, lane] of this.lanes) {
      if (!seen.has(id) && lane.inFlight + lane.recording === 0) this.lanes.delete(id);
      else if (!seen.has(id)) dropQueue(lane);
    }
  }

  /**
   * Stage two for one destination: keep up to `concurrency` deliveries in flight.
   * Resolves once it has started what it can (it waits for a refill when nothing is
   * buffered, never for a delivery). The next rows are read while the buffer still
   * holds a full window (prefetch), so the lane does not run dry while they load.
   */
  private async pump(lane: Lane): Promise<void> {
    // A slot is free again once its HTTP exchange ends; the outcome is committed
    // meanwhile (its id stays in `known`, so it is not loaded twice). Outcomes
    // awaiting their commit are capped so a slow disk holds the lane back.
    // The lane is checked on every turn: it may be stopped or disabled while a refill is read.
    while (this.mayStart(lane)) {
      // A destination not held yet is taken only while this instance holds less than its share.
      const mayTake = lane.lease.held() || this.heldLanes() < this.share;
      const leased = mayTake ? lane.lease.ensure() : false;
      if (leased !== true) {
        if (!(await leased)) {
          // Another instance drains this destination: what was buffered here is theirs to send. Or the
          // database could not be reached: the next cycle (soon) tries the lease again.
          if (lane.lease.failed) this.cycleSoon();
          dropQueue(lane);
          return;
        }
        // Other pumps of this lane (a finished delivery, a wake-up) waited on the same renewal and
        // may have filled the free slots meanwhile: check the cap again before starting one.
        if (!this.mayStart(lane)) return;
      }
      if (lane.queue.length === 0) {
        if (!lane.mayHaveMore || !(await this.refill(lane))) return;
        continue;
      }
      if (lane.queue.length <= this.opts.concurrency && lane.mayHaveMore && !lane.refilling) this.prefetch(lane);
      const delivery = lane.queue.shift()!;
      lane.inFlight++;
      void this.deliver(lane, delivery);
    }
  }

  /** The lane may start another delivery: running, enabled, not being handed over, under its caps. */
  private mayStart(lane: Lane): boolean {
    return (
      this.running &&
      this.lanes.has(lane.dest.id) &&
      lane.dest.enabled === 1 &&
      !lane.yielding &&
      lane.inFlight < this.opts.concurrency &&
      lane.recording < this.opts.concurrency * RECORDING_PER_SLOT
    );
  }

  /** Loads the lane's next rows in the background; the lane is pumped again once they are in. */
  private prefetch(lane: Lane): void {
    this.counters.prefetched++;
    void this.refill(lane).then((again) => {
      if (again) void this.pump(lane);
    });
  }

  /**
   * Loads due deliveries that are neither buffered nor in flight into the lane's queue:
   * the page after the cursor while a drain goes on, else from the start of the due order
   * (skipping the ids the lane knows). One refill per lane at a time. Resolves whether the lane
   * should look again: rows were queued, or a read from the beginning was asked for while this one
   * ran (new work committed after its read began). A pump that finds a refill under way leaves the
   * work to it, so that work would otherwise wait for a delivery in flight to end, or for a poll.
   */
  private async refill(lane: Lane): Promise<boolean> {
    if (lane.refilling) return false;
    lane.refilling = true;
    const generation = lane.generation;
    const restarts = lane.restarts;
    try {
      const want = this.opts.concurrency * PAGE_PER_SLOT;
      const after = lane.cursor;
      // From the start, the rows in flight and awaiting their commit come first: read past them.
      const limit = after ? want : want + lane.known.size;
      // Ids buffered or in flight when the query starts: an outcome committed while it runs
      // removes its id from `known` (and adds it to `released`), but the rows may predate that commit.
      const released = new Set<string>();
      lane.released = released;
      // The destination as it is now: disabled, or its URL or secret changed, by another process or
      // surface since the lanes were last refreshed (at most a second ago).
      const dest = await this.store.webhooks.destination(lane.dest.id);
      if (!dest || dest.enabled !== 1) {
        lane.dest = dest ?? { ...lane.dest, enabled: 0 };
        return false;
      }
      if (signingChanged(dest, lane.dest)) lane.signing = signingKeys(this.store, dest);
      if (dest.events !== lane.dest.events) lane.events = subscribedSet(dest);
      lane.dest = dest;
      const rows = await this.store.webhooks.due(lane.dest.id, Date.now(), limit, after ?? undefined);
      // The buffer was dropped meanwhile (the lease lost, the destination handed over): these rows are not ours to send.
      if (lane.generation !== generation) return false;
      // As many rows as asked for: the next refill reads the page after the last of them. Fewer: paging
      // has reached the end, and the next refill reads once from the beginning, where deliveries may sort
      // that came due behind the cursor (a fan-out that committed late). Fewer from the beginning: every
      // due delivery is queued or in flight, so looking again before something changes (a cycle, a
      // fan-out) would only re-read those.
      // Asked meanwhile to read from the start (a fan-out committed while this read ran): the next one does.
      const last = rows[rows.length - 1];
      lane.cursor = rows.length >= limit && last && lane.restarts === restarts ? { at: last.next_attempt_at, id: last.id } : null;
      lane.mayHaveMore = lane.cursor !== null || after !== null || lane.restarts !== restarts || rows.length >= limit;
      let queued = 0;
      for (const r of rows) {
        if (released.has(r.id) || lane.known.has(r.id)) continue;
        lane.known.add(r.id);
        lane.queue.push(r);
        queued++;
      }
      return queued > 0 || lane.restarts !== restarts;
    } catch (err) {
      if (this.running) this.opts.logger.warn({ err: (err as Error).message }, 'could not load due deliveries');
      return false;
    } finally {
      lane.refilling = false;
      lane.released = null;
    }
  }

  /**
   * Queues the outcome of an attempt; see OUTCOME_LINGER_MS. The outcomes
   * queued together are written by one write operation (recordAttempts:
   * a fixed number of statements for the lot, set-based on PostgreSQL);
   * resolves once it is committed.
   */
  private recordSoon(dest: DestinationRow, d: DueRow, result: AttemptResult): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (this.outcomes.length === 0) this.outcomesSince = performance.now();
      this.outcomes.push({ dest, d, result, resolve, reject });
      this.lotDue();
    });
  }

  /** Hands the gathered outcomes to the writer when they make a full lot or the first has waited long enough; else waits for that. */
  private lotDue(): void {
    // With OUTCOME_WRITES lots under way, the one that settles first looks again.
    if (this.outcomes.length === 0 || this.outcomeWrites >= OUTCOME_WRITES) return;
    const waited = performance.now() - this.outcomesSince;
    if (this.outcomes.length >= this.outcomeBatch || waited >= OUTCOME_LINGER_MS) this.flushOutcomes();
    else this.outcomeTimer ??= setTimeout(() => this.flushOutcomes(), Math.ceil(OUTCOME_LINGER_MS - waited));
  }

  private flushOutcomes(): void {
    if (this.outcomeTimer) clearTimeout(this.outcomeTimer);
    this.outcomeTimer = null;
    if (this.outcomes.length === 0 || this.outcomeWrites >= OUTCOME_WRITES) return;
    const queued = this.outcomes.splice(0, OUTCOME_MAX);
    this.outcomeWrites++;
    const settled = () => {
      this.outcomeWrites--;
      this.lotDue();
    };
    this.store.write((tx) => recordAttempts(tx, queued, this.opts)).then(
      () => {
        settled();
        for (const o of queued) o.resolve();
      },
      () => {
        settled();
        // The lot failed (one outcome's write failed and rolled the others back with it): each
        // outcome in its own operation, so only a failing one is lost (and its delivery retried).
        for (const o of queued) void this.store.write((tx) => recordAttempt(tx, o.dest, o.d, o.result, this.opts, 'attempt')).then(o.resolve, o.reject);
      },
    );
  }

  private async deliver(lane: Lane, d: DueRow): Promise<void> {
    const result = await sendSigned({
      dispatcher: this.http,
      url: lane.dest.url,
      body: d.payload,
      signing: lane.signing,
      eventType: d.event_type,
      deliveryId: d.id,
    });
    lane.inFlight--;
    lane.recording++;
    if (result.ok) void this.pump(lane);
    try {
      await this.recordSoon(lane.dest, d, result);
      if (result.ok) this.counters.delivered++;
      else this.counters.failedAttempts++;
      this.opts.onAttempt?.(lane.dest.id, result);
    } catch (err) {
      this.opts.logger.error({ err: (err as Error).message, delivery: d.id }, 'could not record a delivery attempt; it will be retried');
      // Still pending, and before the cursor: the next look starts from the beginning.
      lane.mayHaveMore = true;
      restartFromBeginning(lane);
    } finally {
      lane.recording--;
      lane.known.delete(d.id);
      lane.released?.add(d.id);
      if (!result.ok) lane.dest = (await this.store.webhooks.destination(lane.dest.id)) ?? { ...lane.dest, enabled: 0 };
      if (this.idle && this.totalInFlight() === 0) this.idle();
      void this.pump(lane);
    }
  }
}

/** Forgets what the lane buffered (not sent): another instance, or a later refill, loads those rows again. */
function dropQueue(lane: Lane): void {
  for (const q of lane.queue) lane.known.delete(q.id);
  lane.queue.length = 0;
  lane.mayHaveMore = true;
  restartFromBeginning(lane);
  lane.generation++;
}

/** The lane's next refill reads from the start of the due order (also when a refill under way lands after this). */
function restartFromBeginning(lane: Lane): void {
  lane.cursor = null;
  lane.restarts++;
}

interface PendingOutcome {
  dest: DestinationRow;
  d: DueRow;
  result: AttemptResult;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * Writes the outcomes of several delivery attempts (kind 'attempt') in one
 * write operation, with the same effect as recordAttempt of each in turn.
 * Successes, which touch nothing a later outcome reads, are written
 * together: the health-log rows, the deliveries and the destinations'
 * streak resets each as one set of rows (one statement on PostgreSQL,
 * whatever the number of outcomes). A failure is written alone in its
 * place in the order (its destination's streak counts what came before it).
 */
export async function recordAttempts(
  tx: Repos,
  outcomes: readonly { dest: DestinationRow; d: DueRow; result: AttemptResult }[],
  opts: Pick<DispatcherOptions, 'retry' | 'disableAfter'>,
): Promise<void> {
  let run: { dest: DestinationRow; d: DueRow; result: AttemptResult }[] = [];
  const writeRun = async () => {
    if (run.length === 0) return;
    const now = Date.now();
    const repo = tx.webhooks;
    await repo.logAttempts(
      run.map(({ dest, d, result }) => ({ where: attemptWhere(dest, d, 'attempt'), outcome: result })),
      now,
    );
    await repo.markDeliveredMany(
      run.map(({ d, result }) => ({ id: d.id, status: result.status ?? 200 })),
      now,
    );
    await repo.destinationsSucceeded(run.map((o) => o.dest.id));
    run = [];
  };
  for (const o of outcomes) {
    if (o.result.ok) {
      run.push(o);
      continue;
    }
    await writeRun();
    await recordAttempt(tx, o.dest, o.d, o.result, opts, 'attempt');
  }
  await writeRun();
}

function attemptWhere(dest: DestinationRow, d: DueRow, kind: 'attempt' | 'replay') {
  return { site_id: d.site_id, integration: 'webhook', destination_id: dest.id, delivery_id: d.id, event_type: d.event_type, kind, attempt: d.attempts + 1 };
}

/**
 * Writes the outcome of one attempt: the health-log row, the delivery's new
 * state (delivered, retry at, or failed for good) and the destination's
 * failure streak, disabling the destination when the streak passes the
 * threshold. Runs inside a write operation, whose repositories are `tx`.
 */
export async function recordAttempt(
  tx: Repos,
  dest: DestinationRow,
  d: DueRow,
  r: AttemptResult,
  opts: Pick<DispatcherOptions, 'retry' | 'disableAfter'>,
  kind: 'attempt' | 'replay',
): Promise<void> {
  const now = Date.now();
  const attempt = d.attempts + 1;
  const repo = tx.webhooks;
  await repo.logAttempt(attemptWhere(dest, d, kind), r, now);
  if (r.ok) {
    await repo.markDelivered(d.id, r.status ?? 200, now);
    if (kind === 'attempt') await repo.destinationSucceeded(dest.id);
    return;
  }
  const error = `${r.errorClass}: ${r.message ?? ''}`.slice(0, 500);
  if (kind === 'replay') {
    // A failed replay changes nothing of the delivery's own schedule and does not count towards disabling.
    await repo.markFailedAttempt(d.id, { final: d.state === 'failed', nextAttemptAt: d.next_attempt_at, status: r.status, error, now });
    return;
  }
  const next = nextAttemptAt(opts.retry, attempt, now);
  await repo.markFailedAttempt(d.id, { final: next === null, nextAttemptAt: next ?? now, status: r.status, error, now });
  const streak = await repo.destinationFailed(dest.id, now);
  if (streak && streak.enabled && streak.consecutive >= opts.disableAfter.failures && now - streak.since >= opts.disableAfter.windowMs) {
    const reason = `disabled automatically after ${streak.consecutive} consecutive failed attempts since ${new Date(streak.since).toISOString()}; last: ${r.errorClass}${r.status ? ` ${r.status}` : ''}`;
    if (await repo.disableDestination(dest.id, reason, now)) {
      await repo.log({
        site_id: d.site_id,
        integration: 'webhook',
        destination_id: dest.id,
        delivery_id: null,
        event_type: null,
        kind: 'disabled',
        attempt: null,
        ok: false,
        status: null,
        latency_ms: null,
        error_class: 'destination_disabled',
        message: reason,
        response_excerpt: null,
        created_at: now,
      });
    }
  }
}

function subscribedSet(d: DestinationRow): ReadonlySet<string> | 'all' {
  const events = JSON.parse(d.events) as string[];
  return events.includes('all') ? 'all' : new Set(events);
}

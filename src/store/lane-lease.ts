import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Store } from './store.js';
import { newId } from './ids.js';

/**
 * Where this process runs: the host name and the PID namespace. Two holders
 * with the same place see the same process table, so one can tell whether the
 * other's process is still there.
 */
function place(): string {
  let ns = '';
  try {
    ns = readlinkSync('/proc/self/ns/pid'); // e.g. "pid:[4026531836]"; absent outside Linux
  } catch {
    ns = 'nons';
  }
  return `${hostname()}#${ns}`;
}

const PLACE = place();

/** This process, as a lease holder: a unique id, then where it runs and its pid (`inst_…@host#ns:pid`). */
export const INSTANCE_ID = `${newId('inst')}@${PLACE}:${process.pid}`;

/**
 * True when `holder` is another process of this host and PID namespace that no
 * longer exists (it was killed or crashed without giving its leases up).
 * Anything else (another machine, another namespace, a live or unreadable
 * process, an id of another form) is taken as alive: its lease then runs out
 * by itself.
 */
export function isDeadLocalHolder(holder: string): boolean {
  const at = holder.lastIndexOf('@');
  const colon = holder.lastIndexOf(':');
  if (at < 0 || colon < at) return false;
  if (holder.slice(at + 1, colon) !== PLACE) return false;
  const pid = Number(holder.slice(colon + 1));
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
  return isZombie(pid);
}

/** A process that has exited but not yet been reaped by its parent (`kill(pid, 0)` still finds it). */
function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) S ...": the state follows the last ')' (comm may hold parentheses).
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state === 'Z' || state === 'X';
  } catch {
    return false;
  }
}

/**
 * Gives up the leases of holders that died on this host (SIGKILL, a crash, a
 * power cut), so a restarted `svc serve` takes their lanes at once instead of
 * waiting SVC_LANE_LEASE_MS for them to run out: processes of this PID
 * namespace that are gone or not yet reaped, and `deadHolders` (earlier
 * processes of this data directory, found by claimHolder, whichever namespace
 * they ran in). Returns the lanes freed.
 */
export async function releaseDeadLocalLeases(store: Store, deadHolders: readonly string[] = []): Promise<string[]> {
  const gone = new Set(deadHolders);
  const dead = (await store.leases.all()).filter((l) => gone.has(l.holder) || isDeadLocalHolder(l.holder));
  if (dead.length === 0) return [];
  await store.write(async (tx) => {
    for (const l of dead) await tx.leases.release(l.lane, l.holder);
  });
  return dead.map((l) => l.lane);
}

export interface LeaseTiming {
  /** How long a lease lasts unless renewed (SVC_LANE_LEASE_MS). */
  ttlMs: number;
  /**
   * The longest one unit of work (an HTTP exchange) can take: work is started only while
   * the lease has at least this much (plus slack) left, so it ends before another
   * instance can take the lane over.
   */
  workMs: number;
}

const SLACK_MS = 2_000;
/** After failing to take a lane another instance holds, wait this long before trying again. */
const RETRY_TAKEN_MS = 2_000;

/**
 * The lease of one work lane (a webhook destination, an ad-platform connection)
 * as seen by this instance. `usable()` answers synchronously on the hot path;
 * `ensure()` takes or renews the lease through the store when it runs low.
 * Every instance runs the same lane code; only the holder sends.
 */
export class LaneLease {
  private until = 0;
  private busy: Promise<boolean> | null = null;
  private retryAt = 0;
  /** The last take or renewal could not reach the database (as opposed to another instance holding the lane). */
  failed = false;

  constructor(
    private readonly store: Store,
    readonly lane: string,
    private readonly timing: LeaseTiming,
  ) {}

  /** Time left on the lease, as this instance counts it (conservatively). */
  remaining(now = Date.now()): number {
    return this.until - now;
  }

  /** This instance holds the lease (it may be too close to its end to start work). */
  held(now = Date.now()): boolean {
    return this.until > now;
  }

  /** Work may start now: it will end before the lease could pass to another instance. */
  usable(now = Date.now()): boolean {
    return this.until - now >= this.timing.workMs + SLACK_MS;
  }

  private needsRenewal(now: number): boolean {
    return this.until - now < Math.max(this.timing.workMs + 2 * SLACK_MS, (this.timing.ttlMs * 2) / 3);
  }

  /**
   * Takes or renews the lease when it runs low; resolves whether work may start. A lease
   * still usable is renewed in the background: work goes on meanwhile (the renewal is a write,
   * queued behind the others, and a lane that waited for it would stall once a renewal period).
   */
  ensure(): Promise<boolean> | boolean {
    const now = Date.now();
    if (!this.needsRenewal(now)) return true;
    if (this.until <= now && now < this.retryAt) return false;
    this.busy ??= this.renew().finally(() => {
      this.busy = null;
    });
    return this.usable(now) ? true : this.busy;
  }

  private async renew(): Promise<boolean> {
    const start = Date.now();
    try {
      const left = await this.store.write((tx) => tx.leases.acquire(this.lane, INSTANCE_ID, this.timing.ttlMs));
      this.failed = false;
      if (left === null) {
        this.until = 0;
        this.retryAt = Date.now() + RETRY_TAKEN_MS;
      } else {
        // Counted from before the request: the database set the expiry no earlier than that.
        this.until = start + left;
      }
    } catch {
      // The database is unreachable: keep what is left of the lease, and stop once it runs low.
      this.failed = true;
    }
    return this.usable();
  }

  /** Gives the lane up so another instance can take it at once (on shutdown, with nothing in flight). */
  async release(): Promise<void> {
    // A renewal under way would otherwise land after the release and count the lease as held again.
    if (this.busy) await this.busy;
    if (this.until <= Date.now()) return;
    this.until = 0;
    await this.store.write((tx) => tx.leases.release(this.lane, INSTANCE_ID)).catch(() => undefined);
  }
}

import type { SessionRow } from './profiles.js';

/** Sessions kept at most; the oldest entry goes first beyond it. */
export const MAX_CACHED_SESSIONS = 100_000;

/**
 * What the ingestion hot path would otherwise read on every operation, kept by
 * the process that writes it. Only a store whose writer guarantees the rules
 * below turns it on (`enabled`): the SQLite group-commit writer. On
 * PostgreSQL other instances write at any time, so nothing is cached there.
 *
 * Consistency rules (GroupCommitWriter, SQLite):
 * - read and changed only inside a write operation, where no other connection
 *   can commit (the transaction holds the write lock);
 * - dropped at the start of a group transaction when `PRAGMA data_version`
 *   moved, i.e. another connection (the CLI: an erasure, a merge, a restore,
 *   another server on the same data directory) committed since the last one;
 * - dropped whenever a transaction or an operation's savepoint rolls back, so
 *   an entry never outlives the write that made it;
 * - this process's own writes of the cached rows keep them current (the
 *   session methods of ProfilesRepo) or drop them (a merge, an erasure, any
 *   change of a trigger).
 */
export class WriterCaches {
  enabled = false;
  /** `site_id \0 session_id` → the session's row as committed (or as written by the running transaction). */
  readonly sessions = new Map<string, SessionRow>();
  /** site_id → the event types enabled event triggers of the site listen for. */
  readonly eventTriggerTypes = new Map<string, ReadonlySet<string>>();
  /** Times the caches were dropped (for tests and benchmarks). */
  drops = 0;
  /**
   * Group transactions that found another connection's commits since the previous one (data_version
   * moved). Other caches of the process compare it while `enabled` instead of reading data_version.
   */
  foreignCommits = 0;

  clear(): void {
    this.drops++;
    this.sessions.clear();
    this.eventTriggerTypes.clear();
  }

  session(siteId: string, sessionId: string): SessionRow | undefined {
    return this.enabled ? this.sessions.get(`${siteId}\u0000${sessionId}`) : undefined;
  }

  putSession(siteId: string, sessionId: string, row: SessionRow): void {
    if (!this.enabled) return;
    const key = `${siteId}\u0000${sessionId}`;
    if (this.sessions.size >= MAX_CACHED_SESSIONS && !this.sessions.has(key)) {
      const oldest = this.sessions.keys().next();
      if (!oldest.done) this.sessions.delete(oldest.value);
    }
    this.sessions.set(key, row);
  }

  dropSession(siteId: string, sessionId: string): void {
    this.sessions.delete(`${siteId}\u0000${sessionId}`);
  }
}

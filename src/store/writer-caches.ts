import type { SessionRow } from './profiles.js';

/** Sessions kept at most; beyond it the oldest entry of the same site goes first (else the oldest of the site cached first). */
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
 *   change of a trigger or of a webhook destination).
 */
export class WriterCaches {
  enabled = false;
  /**
   * site_id → session_id → the session's row as committed (or as written by the running transaction).
   * Two levels instead of one map keyed by `site_id \u0000 session_id`: a look-up builds no key string
   * (concatenating, flattening and hashing it was about 3% of the event path's CPU).
   */
  private readonly sessionsBySite = new Map<string, Map<string, SessionRow>>();
  /** Sessions kept, over every site. */
  private sessionCount = 0;
  /** site_id → the event types enabled event triggers of the site listen for. */
  readonly eventTriggerTypes = new Map<string, ReadonlySet<string>>();
  /**
   * site_id → the event types its enabled webhook destinations subscribe to (`all` kept as such): whether a
   * behavioural event writes an outbox row (WebhooksRepo.receives). Every change of a destination drops it.
   */
  readonly destinationTypes = new Map<string, ReadonlySet<string>>();
  /** Times the caches were dropped (for tests and benchmarks). */
  drops = 0;
  /**
   * Group transactions that found another connection's commits since the previous one (data_version
   * moved). Other caches of the process compare it while `enabled` instead of reading data_version.
   */
  foreignCommits = 0;

  clear(): void {
    this.drops++;
    this.clearSessions();
    this.eventTriggerTypes.clear();
    this.destinationTypes.clear();
  }

  /** Drops every cached session (a merge moves sessions of any site). */
  clearSessions(): void {
    this.sessionsBySite.clear();
    this.sessionCount = 0;
  }

  session(siteId: string, sessionId: string): SessionRow | undefined {
    return this.enabled ? this.sessionsBySite.get(siteId)?.get(sessionId) : undefined;
  }

  /** Whether a session is cached (whether or not the caches are on), for tests. */
  hasSession(siteId: string, sessionId: string): boolean {
    return this.sessionsBySite.get(siteId)?.has(sessionId) === true;
  }

  /** Sessions cached, over every site. */
  get sessionsCached(): number {
    return this.sessionCount;
  }

  putSession(siteId: string, sessionId: string, row: SessionRow): void {
    if (!this.enabled) return;
    let site = this.sessionsBySite.get(siteId);
    if (site === undefined) {
      site = new Map();
      this.sessionsBySite.set(siteId, site);
    }
    if (!site.has(sessionId)) {
      if (this.sessionCount >= MAX_CACHED_SESSIONS) this.evictOne(siteId, site);
      this.sessionCount++;
    }
    site.set(sessionId, row);
  }

  dropSession(siteId: string, sessionId: string): void {
    const site = this.sessionsBySite.get(siteId);
    if (site?.delete(sessionId)) {
      this.sessionCount--;
      if (site.size === 0) this.sessionsBySite.delete(siteId);
    }
  }

  /** Makes room for one session of `siteId`: its site's oldest when the site has any, else the oldest of the site cached first. */
  private evictOne(siteId: string, site: Map<string, SessionRow>): void {
    let fromId = siteId;
    let from = site;
    if (site.size === 0) {
      const first = this.sessionsBySite.entries().next();
      if (first.done) return;
      [fromId, from] = first.value;
    }
    const oldest = from.keys().next();
    if (oldest.done) return;
    from.delete(oldest.value);
    this.sessionCount--;
    if (from.size === 0 && fromId !== siteId) this.sessionsBySite.delete(fromId);
  }
}

import type { Store } from '../../store/store.js';
import type { Repos } from '../../store/repos.js';
import type { SegmentRow } from '../../store/segments.js';
import { profileMatchesSql } from '../../store/rule-sql.js';
import { parseRule, referencedSegments, usesCompany, type Rule } from './rules.js';
import { onSegmentEntered } from '../triggers/service.js';
import { ProfileCompanies } from '../accounts/profile-company.js';

interface CompiledSegment {
  row: SegmentRow;
  rule: Rule;
}

/**
 * On PostgreSQL there is no data_version to tell that another process changed
 * the segments: changes are announced with NOTIFY, and as a fallback (a
 * notification still in flight, or lost with the connection) the cache is
 * dropped this often.
 */
const CACHE_TTL_MS = 2_000;

/**
 * Segment membership and the primary segment of profiles. Segments of a site
 * are cached: changes made in this process invalidate at once, and changes
 * committed by another process (`svc segment create` beside a running server)
 * are seen through SQLite's data_version, which moves exactly when another
 * connection commits (on PostgreSQL, through a notification at commit,
 * and within CACHE_TTL_MS at the latest). Segments are
 * evaluated in dependency order so a rule that tests membership of another
 * segment sees that segment's fresh result.
 */
export class SegmentMembership {
  private readonly cache = new Map<string, CompiledSegment[]>();
  private seenVersion = -1;
  /** The writer's count of transactions that found foreign commits, as last seen (see dropStale). */
  private seenForeign = -1;
  /** PostgreSQL only: when the cache is dropped next. */
  private expiresAt = 0;
  /** SQLite only: `PRAGMA data_version`, prepared once (it is read on every recompute, the ingestion hot path). */
  private dataVersion: { get: () => unknown } | null = null;
  /** The company of each profile (the company rule node), kept current by recompute. */
  readonly companies = new ProfileCompanies();

  constructor(private readonly store: Store) {
    // PostgreSQL: other instances and the CLI announce segment changes (NOTIFY); the TTL below covers the rest.
    store.onRemoteChange((topic) => {
      if (topic === 'segments' || topic === 'all') this.invalidate();
    });
  }

  /** Moves on every invalidation: a fill that started before one must not store what it read. */
  private generation = 0;

  invalidate(siteId?: string): void {
    this.generation += 1;
    if (siteId === undefined) this.cache.clear();
    else this.cache.delete(siteId);
  }

  /** Drops the cache when another process may have changed segments since it was filled. */
  private dropStale(): void {
    const db = this.store.db;
    const writer = this.store.shared.writerCaches;
    if (writer.enabled) {
      // Inside the SQLite writer's transaction: it read data_version when the transaction began.
      if (writer.foreignCommits !== this.seenForeign) {
        this.generation += 1;
        this.cache.clear();
        this.seenForeign = writer.foreignCommits;
      }
      return;
    }
    if (db !== null) {
      this.dataVersion ??= db.prepare('PRAGMA data_version').pluck();
      const version = this.dataVersion.get() as number;
      if (version !== this.seenVersion) {
        this.generation += 1;
        this.cache.clear();
        this.seenVersion = version;
      }
      return;
    }
    // PostgreSQL: no data_version; a time-to-live instead (see CACHE_TTL_MS).
    const now = Date.now();
    if (now >= this.expiresAt) {
      this.generation += 1;
      this.cache.clear();
      this.expiresAt = now + CACHE_TTL_MS;
    }
  }

  /** The site's live segments (drafts have no members) in evaluation order (dependencies first), read through `r` when not cached. */
  async segments(r: Repos, siteId: string): Promise<CompiledSegment[]> {
    this.dropStale();
    const hit = this.cache.get(siteId);
    if (hit) return hit;
    const generation = this.generation;
    const rows = await r.segments.list(siteId);
    const compiled: CompiledSegment[] = [];
    for (const row of rows) {
      if (row.status !== 'live') continue;
      const parsed = parseRule(JSON.parse(row.rule));
      if (parsed.ok) compiled.push({ row, rule: parsed.rule });
    }
    const ordered = dependencyOrder(compiled);
    // On PostgreSQL the read is a round trip: a change announced meanwhile (an invalidation) makes it stale.
    if (generation === this.generation) this.cache.set(siteId, ordered);
    return ordered;
  }

  /** Whether a live segment of the site tests the company (so company changes move memberships). */
  async usesCompany(r: Repos, siteId: string): Promise<boolean> {
    return (await this.segments(r, siteId)).some((s) => usesCompany(s.rule));
  }

  /**
   * After a change of one profile's data: brings its company facts up to date
   * (`identity`: its identities may have changed, as after identify or a merge),
   * then recomputes its memberships and primary segment (see evaluate). When
   * the change moved a company domain to or from exactly one known person,
   * every profile of that company is evaluated again. Runs inside the write
   * operation of the change that caused it, whose repositories are `tx`.
   */
  async recompute(
    tx: Repos,
    siteId: string,
    profileId: string,
    now: number,
    opts: { identity?: boolean } = {},
  ): Promise<{ changed: boolean; primary: string | null }> {
    const domains = await this.companies.refresh(tx, siteId, profileId, now, opts.identity === true);
    const out = await this.evaluate(tx, siteId, profileId, now);
    if (domains.length > 0) await this.cascade(tx, siteId, domains, now, profileId);
    return out;
  }

  /**
   * Evaluates again every profile of the given company domains, when a live
   * segment tests the company and the domain's number of known persons is at
   * most 2 (a change of one person moves it by one, so only then can the
   * domain have become, or stopped being, a one-person domain).
   */
  async cascade(tx: Repos, siteId: string, domains: readonly string[], now: number, except?: string): Promise<void> {
    if (domains.length === 0 || !(await this.usesCompany(tx, siteId))) return;
    for (const d of domains) {
      if ((await tx.companies.knownPersons(siteId, d)) > 2) continue;
      for (const p of await tx.companies.profilesOfCompany(siteId, d)) if (p !== except) await this.evaluate(tx, siteId, p, now);
    }
  }

  /**
   * Recomputes the memberships and primary segment of one profile from its
   * current facts; when the primary segment changes, writes segment.changed to
   * the outbox. Runs inside a write operation, whose repositories are `tx`.
   */
  async evaluate(tx: Repos, siteId: string, profileId: string, now: number): Promise<{ changed: boolean; primary: string | null }> {
    const segments = await this.segments(tx, siteId);
    if (segments.length === 0) return { changed: false, primary: null };
    const repo = tx.segments;
    const before = await repo.segmentsOf(profileId);
    let primary: SegmentRow | null = null;
    for (const s of segments) {
      const { sql, params } = profileMatchesSql(s.rule, { profileId, now, dialect: tx.sql.dialect });
      const match = await repo.matches(sql, params);
      if (match && !before.has(s.row.id)) {
        await repo.addMember(s.row.id, profileId, siteId, now);
        await onSegmentEntered(tx, siteId, profileId, s.row.id, now); // triggered messages
      }
      if (!match && before.has(s.row.id)) await repo.removeMember(s.row.id, profileId);
      if (match && (primary === null || s.row.priority > primary.priority || (s.row.priority === primary.priority && s.row.id < primary.id))) {
        primary = s.row;
      }
    }
    const previous = await repo.primaryOf(profileId);
    const current = primary?.id ?? null;
    if (previous === current) return { changed: false, primary: current };
    await repo.setPrimary(profileId, current);
    await tx.activity.enqueue(
      siteId,
      'segment.changed',
      {
        event: 'segment.changed',
        site_id: siteId,
        profile_id: profileId,
        previous_segment: previous,
        segment: current,
        timestamp: new Date(now).toISOString(),
      },
      now,
    );
    return { changed: true, primary: current };
  }
}

function dependencyOrder(segments: CompiledSegment[]): CompiledSegment[] {
  const byId = new Map(segments.map((s) => [s.row.id, s]));
  const out: CompiledSegment[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (s: CompiledSegment) => {
    const st = state.get(s.row.id);
    if (st === 'done' || st === 'visiting') return; // cycles are refused at write time; never loop here
    state.set(s.row.id, 'visiting');
    for (const dep of referencedSegments(s.rule)) {
      const d = byId.get(dep);
      if (d) visit(d);
    }
    state.set(s.row.id, 'done');
    out.push(s);
  };
  for (const s of segments) visit(s);
  return out;
}

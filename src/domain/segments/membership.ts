import type { Store } from '../../store/store.js';
import type { SegmentRow } from '../../store/segments.js';
import { profileMatchesSql } from '../../store/rule-sql.js';
import { parseRule, referencedSegments, type Rule } from './rules.js';

interface CompiledSegment {
  row: SegmentRow;
  rule: Rule;
}

/**
 * Segment membership and the primary segment of profiles. Segments of a site
 * are cached: changes made in this process invalidate at once, and changes
 * committed by another process (`svc segment create` beside a running server)
 * are seen through SQLite's data_version, which moves exactly when another
 * connection commits. Segments are evaluated in dependency order so a rule that
 * tests membership of another segment sees that segment's fresh result.
 */
export class SegmentMembership {
  private readonly cache = new Map<string, CompiledSegment[]>();
  private readonly dataVersion;
  private seenVersion = -1;

  constructor(private readonly store: Store) {
    this.dataVersion = store.db.prepare<[], { data_version: number }>('PRAGMA data_version');
  }

  invalidate(siteId?: string): void {
    if (siteId === undefined) this.cache.clear();
    else this.cache.delete(siteId);
  }

  /** The site's segments in evaluation order (dependencies first). */
  segments(siteId: string): CompiledSegment[] {
    const version = this.dataVersion.get()!.data_version;
    if (version !== this.seenVersion) {
      this.cache.clear();
      this.seenVersion = version;
    }
    const hit = this.cache.get(siteId);
    if (hit) return hit;
    const rows = this.store.segments.list(siteId);
    const compiled: CompiledSegment[] = [];
    for (const row of rows) {
      const parsed = parseRule(JSON.parse(row.rule));
      if (parsed.ok) compiled.push({ row, rule: parsed.rule });
    }
    const ordered = dependencyOrder(compiled);
    this.cache.set(siteId, ordered);
    return ordered;
  }

  /**
   * Recomputes the memberships and primary segment of one profile; when the
   * primary segment changes, writes segment.changed to the outbox. Runs inside
   * the write transaction of the change that caused it.
   */
  recompute(siteId: string, profileId: string, now: number): { changed: boolean; primary: string | null } {
    const segments = this.segments(siteId);
    if (segments.length === 0) return { changed: false, primary: null };
    const repo = this.store.segments;
    const before = repo.segmentsOf(profileId);
    let primary: SegmentRow | null = null;
    for (const s of segments) {
      const { sql, params } = profileMatchesSql(s.rule, { profileId, now });
      const match = (repo.get1<{ m: number }>(sql, params)?.m ?? 0) === 1;
      if (match && !before.has(s.row.id)) repo.addMember(s.row.id, profileId, siteId, now);
      if (!match && before.has(s.row.id)) repo.removeMember(s.row.id, profileId);
      if (match && (primary === null || s.row.priority > primary.priority || (s.row.priority === primary.priority && s.row.id < primary.id))) {
        primary = s.row;
      }
    }
    const previous = repo.primaryOf(profileId);
    const current = primary?.id ?? null;
    if (previous === current) return { changed: false, primary: current };
    repo.setPrimary(profileId, current);
    this.store.activity.enqueue(
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

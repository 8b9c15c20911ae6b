import type { Statement } from 'better-sqlite3';
import type { Db } from './db.js';
import { newId } from './ids.js';

export interface SegmentRow {
  id: string;
  site_id: string;
  name: string;
  rule: string;
  priority: number;
  created_at: number;
  updated_at: number;
}

/** Segments and their materialized memberships. */
export class SegmentsRepo {
  private readonly q;

  constructor(private readonly db: Db) {
    this.q = {
      insert: db.prepare('INSERT INTO segments (id, site_id, name, rule, priority, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)'),
      get: db.prepare<[string, string], SegmentRow>('SELECT * FROM segments WHERE id = ? AND site_id = ?'),
      byId: db.prepare<[string], SegmentRow>('SELECT * FROM segments WHERE id = ?'),
      list: db.prepare<[string], SegmentRow>('SELECT * FROM segments WHERE site_id = ? ORDER BY priority DESC, id'),
      listAll: db.prepare<[], SegmentRow>('SELECT * FROM segments ORDER BY site_id, priority DESC, id'),
      remove: db.prepare('DELETE FROM segments WHERE id = ?'),
      removeMembers: db.prepare('DELETE FROM segment_members WHERE segment_id = ?'),
      members: db.prepare<[string, string, number], { profile_id: string }>(
        'SELECT profile_id FROM segment_members WHERE segment_id = ? AND profile_id > ? ORDER BY profile_id LIMIT ?',
      ),
      memberCount: db.prepare<[string], { n: number }>('SELECT count(*) AS n FROM segment_members WHERE segment_id = ?'),
      profileSegments: db.prepare<[string], { segment_id: string }>('SELECT segment_id FROM segment_members WHERE profile_id = ?'),
      addMember: db.prepare('INSERT INTO segment_members (segment_id, profile_id, site_id, since) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING'),
      removeMember: db.prepare('DELETE FROM segment_members WHERE segment_id = ? AND profile_id = ?'),
      primary: db.prepare<[string], { primary_segment: string | null }>('SELECT primary_segment FROM profiles WHERE id = ?'),
      setPrimary: db.prepare('UPDATE profiles SET primary_segment = ? WHERE id = ?'),
      update: db.prepare('UPDATE segments SET name = ?, rule = ?, priority = ?, updated_at = ? WHERE id = ?'),
    };
  }

  create(s: { siteId: string; name: string; rule: string; priority: number }): SegmentRow {
    const id = newId('seg');
    const now = Date.now();
    this.q.insert.run(id, s.siteId, s.name, s.rule, s.priority, now, now);
    return this.q.byId.get(id)!;
  }

  get(siteId: string, id: string): SegmentRow | undefined {
    return this.q.get.get(id, siteId);
  }

  byId(id: string): SegmentRow | undefined {
    return this.q.byId.get(id);
  }

  list(siteId?: string): SegmentRow[] {
    return siteId === undefined ? this.q.listAll.all() : this.q.list.all(siteId);
  }

  update(id: string, s: { name: string; rule: string; priority: number }): void {
    this.q.update.run(s.name, s.rule, s.priority, Date.now(), id);
  }

  remove(id: string): void {
    this.q.removeMembers.run(id);
    this.q.remove.run(id);
  }

  /** One keyset page of member profile ids after `afterId` (exclusive), ascending. */
  members(segmentId: string, afterId: string, limit: number): string[] {
    return this.q.members.all(segmentId, afterId, limit).map((r) => r.profile_id);
  }

  memberCount(segmentId: string): number {
    return this.q.memberCount.get(segmentId)!.n;
  }

  segmentsOf(profileId: string): Set<string> {
    return new Set(this.q.profileSegments.all(profileId).map((r) => r.segment_id));
  }

  addMember(segmentId: string, profileId: string, siteId: string, now: number): void {
    this.q.addMember.run(segmentId, profileId, siteId, now);
  }

  removeMember(segmentId: string, profileId: string): void {
    this.q.removeMember.run(segmentId, profileId);
  }

  primaryOf(profileId: string): string | null {
    return this.q.primary.get(profileId)?.primary_segment ?? null;
  }

  setPrimary(profileId: string, segmentId: string | null): void {
    this.q.setPrimary.run(segmentId, profileId);
  }

  private readonly statements = new Map<string, Statement<unknown[]>>();

  private prepared(sql: string) {
    let st = this.statements.get(sql);
    if (!st) {
      if (this.statements.size > 500) this.statements.clear();
      st = this.db.prepare(sql);
      this.statements.set(sql, st);
    }
    return st;
  }

  /** Runs a compiled rule query (built by rule-sql.ts: parameters only, no user text in the SQL). */
  all<T>(sql: string, params: unknown[]): T[] {
    return this.prepared(sql).all(...params) as T[];
  }

  get1<T>(sql: string, params: unknown[]): T | undefined {
    return this.prepared(sql).get(...params) as T | undefined;
  }
}

import type { Sql, SqliteSql } from './sql.js';
import { newId } from './ids.js';

export type SegmentStatus = 'draft' | 'live';

export interface SegmentRow {
  id: string;
  site_id: string;
  name: string;
  rule: string;
  priority: number;
  /** draft: proposed under propose-only, no members until approved; live: evaluated. */
  status: SegmentStatus;
  created_at: number;
  updated_at: number;
}

const SEGMENT_BY_ID = 'SELECT * FROM segments WHERE id = ?';
const SEGMENTS_OF = 'SELECT segment_id FROM segment_members WHERE profile_id = ?';
const PRIMARY_OF = 'SELECT primary_segment FROM profiles WHERE id = ?';

/** Segments and their materialized memberships. Methods that write must run inside a write operation. */
export class SegmentsRepo {
  constructor(private readonly x: Sql) {}

  /** PostgreSQL: tells every instance (LISTEN, delivered at commit) that segment definitions changed. */
  private async announce(): Promise<void> {
    if (this.x.dialect === 'pg') await this.x.get("SELECT pg_notify('svc_segments', '')");
  }

  async create(s: { siteId: string; name: string; rule: string; priority: number; status?: SegmentStatus }): Promise<SegmentRow> {
    const id = newId('seg');
    const now = Date.now();
    await this.x.run('INSERT INTO segments (id, site_id, name, rule, priority, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)', [
      id,
      s.siteId,
      s.name,
      s.rule,
      s.priority,
      s.status ?? 'live',
      now,
      now,
    ]);
    await this.announce();
    return (await this.byId(id))!;
  }

  get(siteId: string, id: string): Promise<SegmentRow | undefined> {
    return this.x.get<SegmentRow>('SELECT * FROM segments WHERE id = ? AND site_id = ?', [id, siteId]);
  }

  byId(id: string): Promise<SegmentRow | undefined> {
    return this.x.get<SegmentRow>(SEGMENT_BY_ID, [id]);
  }

  list(siteId?: string): Promise<SegmentRow[]> {
    return siteId === undefined
      ? this.x.all<SegmentRow>('SELECT * FROM segments ORDER BY site_id, priority DESC, id')
      : this.x.all<SegmentRow>('SELECT * FROM segments WHERE site_id = ? ORDER BY priority DESC, id', [siteId]);
  }

  async update(id: string, s: { name: string; rule: string; priority: number }): Promise<void> {
    await this.x.run('UPDATE segments SET name = ?, rule = ?, priority = ?, updated_at = ? WHERE id = ?', [s.name, s.rule, s.priority, Date.now(), id]);
    await this.announce();
  }

  /** Makes a draft segment live (its members are computed by the caller). */
  async setStatus(id: string, status: SegmentStatus): Promise<void> {
    await this.x.run('UPDATE segments SET status = ?, updated_at = ? WHERE id = ?', [status, Date.now(), id]);
    await this.announce();
  }

  async remove(id: string): Promise<void> {
    await this.x.run('DELETE FROM segment_members WHERE segment_id = ?', [id]);
    await this.x.run('DELETE FROM segments WHERE id = ?', [id]);
    await this.announce();
  }

  /** One keyset page of member profile ids after `afterId` (exclusive), ascending. */
  async members(segmentId: string, afterId: string, limit: number): Promise<string[]> {
    const rows = await this.x.all<{ profile_id: string }>(
      'SELECT profile_id FROM segment_members WHERE segment_id = ? AND profile_id > ? ORDER BY profile_id LIMIT ?',
      [segmentId, afterId, limit],
    );
    return rows.map((r) => r.profile_id);
  }

  async memberCount(segmentId: string): Promise<number> {
    return Number((await this.x.get<{ n: number }>('SELECT count(*) AS n FROM segment_members WHERE segment_id = ?', [segmentId]))!.n);
  }

  async segmentsOf(profileId: string): Promise<Set<string>> {
    // SQLite (every event of a site with live segments): the ids as values (pluck mode), no object row per membership.
    if (this.x.dialect === 'sqlite') return new Set((this.x as SqliteSql).allValues(SEGMENTS_OF, [profileId]) as string[]);
    const rows = await this.x.all<{ segment_id: string }>(SEGMENTS_OF, [profileId]);
    return new Set(rows.map((r) => r.segment_id));
  }

  async addMember(segmentId: string, profileId: string, siteId: string, now: number): Promise<void> {
    await this.x.run('INSERT INTO segment_members (segment_id, profile_id, site_id, since) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING', [
      segmentId,
      profileId,
      siteId,
      now,
    ]);
  }

  async removeMember(segmentId: string, profileId: string): Promise<void> {
    await this.x.run('DELETE FROM segment_members WHERE segment_id = ? AND profile_id = ?', [segmentId, profileId]);
  }

  async primaryOf(profileId: string): Promise<string | null> {
    if (this.x.dialect === 'sqlite') return ((this.x as SqliteSql).getValue(PRIMARY_OF, [profileId]) as string | null | undefined) ?? null;
    return (await this.x.get<{ primary_segment: string | null }>(PRIMARY_OF, [profileId]))?.primary_segment ?? null;
  }

  async setPrimary(profileId: string, segmentId: string | null): Promise<void> {
    await this.x.run('UPDATE profiles SET primary_segment = ? WHERE id = ?', [segmentId, profileId]);
  }

  /** Runs a compiled rule query (built by rule-sql.ts: parameters only, no user text in the SQL). */
  all<T>(sql: string, params: unknown[]): Promise<T[]> {
    return this.x.all<T>(sql, params);
  }

  /**
   * Whether a profile matches a compiled rule (profileMatchesSql: one row, its column `m` 1 or 0). On SQLite the
   * column is read as a value (pluck mode): this runs for every live segment of the site on every event.
   */
  async matches(sql: string, params: unknown[]): Promise<boolean> {
    if (this.x.dialect === 'sqlite') return Number((this.x as SqliteSql).getValue(sql, params) ?? 0) === 1;
    return Number((await this.x.get<{ m: number }>(sql, params))?.m ?? 0) === 1;
  }
}

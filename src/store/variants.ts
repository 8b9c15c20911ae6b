import type { Sql } from './sql.js';
import { newId } from './ids.js';

export type VariantStatus = 'draft' | 'approved' | 'published' | 'disabled' | 'archived';

export interface VariantRow {
  id: string;
  site_id: string;
  zone_id: string;
  content_id: string;
  segment_id: string | null;
  name: string;
  status: VariantStatus;
  created_by: string;
  approved_by: string | null;
  approved_at: number | null;
  published_by: string | null;
  published_at: number | null;
  disabled_at: number | null;
  disabled_reason: string | null;
  created_at: number;
  updated_at: number;
}

/** Variants: what a zone may show (a content block, for a segment), with their lifecycle stamps. Every query is scoped by site. */
export class VariantsRepo {
  constructor(private readonly x: Sql) {}

  list(siteId: string, f: { zoneId?: string | undefined; status?: VariantStatus | undefined }): Promise<VariantRow[]> {
    const where = ['site_id = ?'];
    const params: unknown[] = [siteId];
    if (f.zoneId !== undefined) {
      where.push('zone_id = ?');
      params.push(f.zoneId);
    }
    if (f.status !== undefined) {
      where.push('status = ?');
      params.push(f.status);
    }
    return this.x.all<VariantRow>(`SELECT * FROM variants WHERE ${where.join(' AND ')} ORDER BY zone_id, created_at, id`, params);
  }

  get(siteId: string, id: string): Promise<VariantRow | undefined> {
    return this.x.get<VariantRow>('SELECT * FROM variants WHERE id = ? AND site_id = ?', [id, siteId]);
  }

  /** Variants showing a content block. */
  usingContent(siteId: string, contentId: string): Promise<VariantRow[]> {
    return this.x.all<VariantRow>('SELECT * FROM variants WHERE site_id = ? AND content_id = ? ORDER BY id', [siteId, contentId]);
  }

  async insert(v: { siteId: string; zoneId: string; contentId: string; segmentId: string | null; name: string; createdBy: string; now: number }): Promise<string> {
    const id = newId('var');
    await this.x.run(
      "INSERT INTO variants (id, site_id, zone_id, content_id, segment_id, name, status, created_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'draft', ?, ?, ?)",
      [id, v.siteId, v.zoneId, v.contentId, v.segmentId, v.name, v.createdBy, v.now, v.now],
    );
    return id;
  }

  async updateDraft(siteId: string, id: string, v: { contentId: string; segmentId: string | null; name: string; now: number }): Promise<number> {
    const r = await this.x.run("UPDATE variants SET content_id = ?, segment_id = ?, name = ?, updated_at = ? WHERE id = ? AND site_id = ? AND status = 'draft'", [
      v.contentId,
      v.segmentId,
      v.name,
      v.now,
      id,
      siteId,
    ]);
    return r.changes;
  }

  /**
   * Moves a variant from `from` to `to`, stamping who and when; returns 0 when
   * its status was no longer `from` (a concurrent change), so callers report a conflict.
   */
  async transition(siteId: string, id: string, from: VariantStatus, to: VariantStatus, by: string, now: number, reason: string | null = null): Promise<number> {
    const stamp =
      to === 'approved'
        ? 'approved_by = ?, approved_at = ?,'
        : to === 'published'
          ? 'published_by = ?, published_at = ?, disabled_at = NULL, disabled_reason = NULL,'
          : to === 'disabled'
            ? 'disabled_reason = ?, disabled_at = ?,'
            : '';
    const stampParams = to === 'approved' || to === 'published' ? [by, now] : to === 'disabled' ? [reason, now] : [];
    const r = await this.x.run(`UPDATE variants SET ${stamp} status = ?, updated_at = ? WHERE id = ? AND site_id = ? AND status = ?`, [
      ...stampParams,
      to,
      now,
      id,
      siteId,
      from,
    ]);
    return r.changes;
  }

  async delete(siteId: string, id: string): Promise<void> {
    await this.x.run('DELETE FROM variants WHERE id = ? AND site_id = ?', [id, siteId]);
  }
}

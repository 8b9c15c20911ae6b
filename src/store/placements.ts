import type { Sql } from './sql.js';
import { newId } from './ids.js';

export interface PlacementRow {
  id: string;
  site_id: string;
  zone_id: string;
  variant_id: string;
  segment_id: string | null;
  priority: number;
  enabled: number;
  created_at: number;
  updated_at: number;
}

/** Placements: a published variant wired to its zone for a segment, with a priority. Every query is scoped by site. */
export class PlacementsRepo {
  constructor(private readonly x: Sql) {}

  list(siteId: string, f: { zoneId?: string | undefined; variantId?: string | undefined }): Promise<PlacementRow[]> {
    const where = ['site_id = ?'];
    const params: unknown[] = [siteId];
    if (f.zoneId !== undefined) {
      where.push('zone_id = ?');
      params.push(f.zoneId);
    }
    if (f.variantId !== undefined) {
      where.push('variant_id = ?');
      params.push(f.variantId);
    }
    return this.x.all<PlacementRow>(`SELECT * FROM placements WHERE ${where.join(' AND ')} ORDER BY zone_id, priority DESC, id`, params);
  }

  get(siteId: string, id: string): Promise<PlacementRow | undefined> {
    return this.x.get<PlacementRow>('SELECT * FROM placements WHERE id = ? AND site_id = ?', [id, siteId]);
  }

  /** `id`: the id reserved for it (a draft approved later keeps the id it was proposed under); default a new one. */
  async insert(p: { siteId: string; zoneId: string; variantId: string; segmentId: string | null; priority: number; enabled: boolean; now: number; id?: string | undefined }): Promise<string> {
    const id = p.id ?? newId('plc');
    await this.x.run(
      'INSERT INTO placements (id, site_id, zone_id, variant_id, segment_id, priority, enabled, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
      [id, p.siteId, p.zoneId, p.variantId, p.segmentId, p.priority, p.enabled ? 1 : 0, p.now, p.now],
    );
    return id;
  }

  async update(siteId: string, id: string, p: { segmentId: string | null; priority: number; enabled: boolean; now: number }): Promise<void> {
    await this.x.run('UPDATE placements SET segment_id = ?, priority = ?, enabled = ?, updated_at = ? WHERE id = ? AND site_id = ?', [
      p.segmentId,
      p.priority,
      p.enabled ? 1 : 0,
      p.now,
      id,
      siteId,
    ]);
  }

  async delete(siteId: string, id: string): Promise<void> {
    await this.x.run('DELETE FROM placements WHERE id = ? AND site_id = ?', [id, siteId]);
  }

  async deleteOfVariant(siteId: string, variantId: string): Promise<void> {
    await this.x.run('DELETE FROM placements WHERE site_id = ? AND variant_id = ?', [siteId, variantId]);
  }

  async deleteOfZone(siteId: string, zoneId: string): Promise<void> {
    await this.x.run('DELETE FROM placements WHERE site_id = ? AND zone_id = ?', [siteId, zoneId]);
  }
}

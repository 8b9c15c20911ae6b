import type { Sql } from './sql.js';
import { newId } from './ids.js';

export interface ZoneRow {
  id: string;
  site_id: string;
  page_id: string;
  name: string;
  selector: string;
  default_content_id: string | null;
  created_at: number;
  updated_at: number;
}

/** Zones: named regions (CSS selectors) of a page, with their default content. Every query is scoped by site. */
export class ZonesRepo {
  constructor(private readonly x: Sql) {}

  list(siteId: string, pageId?: string): Promise<ZoneRow[]> {
    return pageId === undefined
      ? this.x.all<ZoneRow>('SELECT * FROM zones WHERE site_id = ? ORDER BY page_id, name, id', [siteId])
      : this.x.all<ZoneRow>('SELECT * FROM zones WHERE site_id = ? AND page_id = ? ORDER BY name, id', [siteId, pageId]);
  }

  get(siteId: string, id: string): Promise<ZoneRow | undefined> {
    return this.x.get<ZoneRow>('SELECT * FROM zones WHERE id = ? AND site_id = ?', [id, siteId]);
  }

  byName(pageId: string, name: string): Promise<ZoneRow | undefined> {
    return this.x.get<ZoneRow>('SELECT * FROM zones WHERE page_id = ? AND name = ?', [pageId, name]);
  }

  /** Zones showing a content block by default. */
  usingContent(siteId: string, contentId: string): Promise<ZoneRow[]> {
    return this.x.all<ZoneRow>('SELECT * FROM zones WHERE site_id = ? AND default_content_id = ? ORDER BY id', [siteId, contentId]);
  }

  async insert(z: { siteId: string; pageId: string; name: string; selector: string; defaultContentId: string | null; now: number }): Promise<string> {
    const id = newId('zone');
    await this.x.run(
      'INSERT INTO zones (id, site_id, page_id, name, selector, default_content_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      [id, z.siteId, z.pageId, z.name, z.selector, z.defaultContentId, z.now, z.now],
    );
    return id;
  }

  async update(siteId: string, id: string, z: { name: string; selector: string; defaultContentId: string | null; now: number }): Promise<void> {
    await this.x.run('UPDATE zones SET name = ?, selector = ?, default_content_id = ?, updated_at = ? WHERE id = ? AND site_id = ?', [
      z.name,
      z.selector,
      z.defaultContentId,
      z.now,
      id,
      siteId,
    ]);
  }

  /** Clears the default content of every zone showing a content block. */
  async clearDefault(siteId: string, contentId: string, now: number): Promise<void> {
    await this.x.run('UPDATE zones SET default_content_id = NULL, updated_at = ? WHERE site_id = ? AND default_content_id = ?', [now, siteId, contentId]);
  }

  async delete(siteId: string, id: string): Promise<void> {
    await this.x.run('DELETE FROM zones WHERE id = ? AND site_id = ?', [id, siteId]);
  }
}

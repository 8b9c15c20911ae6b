import type { Sql } from './sql.js';
import { newId } from './ids.js';

export type ContentKind = 'html' | 'json';

export interface ContentRow {
  id: string;
  site_id: string;
  name: string;
  kind: ContentKind;
  body: string;
  created_at: number;
  updated_at: number;
}

/** Content blocks: reusable HTML fragments or JSON that zones and variants show. Every query is scoped by site. */
export class ContentRepo {
  constructor(private readonly x: Sql) {}

  list(siteId: string, kind?: ContentKind): Promise<ContentRow[]> {
    return kind === undefined
      ? this.x.all<ContentRow>('SELECT * FROM content_blocks WHERE site_id = ? ORDER BY name, id', [siteId])
      : this.x.all<ContentRow>('SELECT * FROM content_blocks WHERE site_id = ? AND kind = ? ORDER BY name, id', [siteId, kind]);
  }

  get(siteId: string, id: string): Promise<ContentRow | undefined> {
    return this.x.get<ContentRow>('SELECT * FROM content_blocks WHERE id = ? AND site_id = ?', [id, siteId]);
  }

  async insert(c: { siteId: string; name: string; kind: ContentKind; body: string; now: number }): Promise<string> {
    const id = newId('cnt');
    await this.x.run('INSERT INTO content_blocks (id, site_id, name, kind, body, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)', [
      id,
      c.siteId,
      c.name,
      c.kind,
      c.body,
      c.now,
      c.now,
    ]);
    return id;
  }

  async update(siteId: string, id: string, c: { name: string; kind: ContentKind; body: string; now: number }): Promise<void> {
    await this.x.run('UPDATE content_blocks SET name = ?, kind = ?, body = ?, updated_at = ? WHERE id = ? AND site_id = ?', [
      c.name,
      c.kind,
      c.body,
      c.now,
      id,
      siteId,
    ]);
  }

  async delete(siteId: string, id: string): Promise<void> {
    await this.x.run('DELETE FROM content_blocks WHERE id = ? AND site_id = ?', [id, siteId]);
  }
}

import type { Sql } from './sql.js';
import { newId } from './ids.js';

export type MatchType = 'exact' | 'prefix' | 'glob';

export interface PageRow {
  id: string;
  site_id: string;
  name: string;
  match_type: MatchType;
  pattern: string;
  source: 'manual' | 'crawl';
  created_at: number;
  updated_at: number;
}

/** Pages: URL patterns whose zones the decision fills. Every query is scoped by site. */
export class PagesRepo {
  constructor(private readonly x: Sql) {}

  list(siteId: string): Promise<PageRow[]> {
    return this.x.all<PageRow>('SELECT * FROM pages WHERE site_id = ? ORDER BY name, id', [siteId]);
  }

  get(siteId: string, id: string): Promise<PageRow | undefined> {
    return this.x.get<PageRow>('SELECT * FROM pages WHERE id = ? AND site_id = ?', [id, siteId]);
  }

  byPattern(siteId: string, matchType: MatchType, pattern: string): Promise<PageRow | undefined> {
    return this.x.get<PageRow>('SELECT * FROM pages WHERE site_id = ? AND match_type = ? AND pattern = ?', [siteId, matchType, pattern]);
  }

  async insert(p: { siteId: string; name: string; matchType: MatchType; pattern: string; now: number }): Promise<string> {
    const id = newId('page');
    await this.x.run('INSERT INTO pages (id, site_id, name, match_type, pattern, source, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)', [
      id,
      p.siteId,
      p.name,
      p.matchType,
      p.pattern,
      'manual',
      p.now,
      p.now,
    ]);
    return id;
  }

  async update(siteId: string, id: string, p: { name: string; matchType: MatchType; pattern: string; now: number }): Promise<void> {
    await this.x.run('UPDATE pages SET name = ?, match_type = ?, pattern = ?, updated_at = ? WHERE id = ? AND site_id = ?', [
      p.name,
      p.matchType,
      p.pattern,
      p.now,
      id,
      siteId,
    ]);
  }

  async delete(siteId: string, id: string): Promise<void> {
    await this.x.run('DELETE FROM pages WHERE id = ? AND site_id = ?', [id, siteId]);
  }
}

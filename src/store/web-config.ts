import type { Sql } from './sql.js';

/** The site-wide facts a decision snapshot is keyed and scaled by. */
export class WebConfigRepo {
  constructor(private readonly x: Sql) {}

  /** The configuration version of a site (bumped by triggers on every change); 0 before the first change. */
  async version(siteId: string): Promise<number> {
    return Number((await this.x.get<{ version: number }>('SELECT version FROM web_versions WHERE site_id = ?', [siteId]))?.version ?? 0);
  }

  /** The holdout share of a site, read fresh (not through the sites cache). */
  async holdoutShare(siteId: string): Promise<number> {
    return Number((await this.x.get<{ holdout_share: number }>('SELECT holdout_share FROM sites WHERE id = ?', [siteId]))?.holdout_share ?? 0);
  }
}

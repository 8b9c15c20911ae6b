import type { Sql } from './sql.js';

/** The columns of experiments the decision reads (the experiments area owns the table). */
export interface ExperimentLite {
  id: string;
  page_id: string | null;
  zone_id: string | null;
  status: 'draft' | 'running' | 'paused' | 'ended' | 'shipped';
  seed: string;
  shipped_arm_id: string | null;
  started_at: number | null;
  shipped_at: number | null;
}

export interface ArmLite {
  id: string;
  experiment_id: string;
  label: string;
  is_control: number;
  variant_id: string | null;
  weight: number;
  position: number;
}

/** Experiments and arms as the web experience reads them (read only: the experiments area owns them). Every query is scoped by site. */
export class ExperimentRefsRepo {
  constructor(private readonly x: Sql) {}

  list(siteId: string): Promise<ExperimentLite[]> {
    return this.x.all<ExperimentLite>(
      'SELECT id, page_id, zone_id, status, seed, shipped_arm_id, started_at, shipped_at FROM experiments WHERE site_id = ? ORDER BY created_at, id',
      [siteId],
    );
  }

  get(siteId: string, id: string): Promise<ExperimentLite | undefined> {
    return this.x.get<ExperimentLite>(
      'SELECT id, page_id, zone_id, status, seed, shipped_arm_id, started_at, shipped_at FROM experiments WHERE id = ? AND site_id = ?',
      [id, siteId],
    );
  }

  arms(siteId: string): Promise<ArmLite[]> {
    return this.x.all<ArmLite>(
      'SELECT id, experiment_id, label, is_control, variant_id, weight, position FROM experiment_arms WHERE site_id = ? ORDER BY experiment_id, position, id',
      [siteId],
    );
  }

  /** Experiments that reference a page, a zone or a variant (through an arm), any status. */
  async referencing(siteId: string, ref: { pageId?: string; zoneId?: string; variantId?: string }): Promise<string[]> {
    let rows: { id: string }[];
    if (ref.pageId !== undefined) rows = await this.x.all('SELECT id FROM experiments WHERE site_id = ? AND page_id = ?', [siteId, ref.pageId]);
    else if (ref.zoneId !== undefined) rows = await this.x.all('SELECT id FROM experiments WHERE site_id = ? AND zone_id = ?', [siteId, ref.zoneId]);
    else rows = await this.x.all('SELECT DISTINCT experiment_id AS id FROM experiment_arms WHERE site_id = ? AND variant_id = ?', [siteId, ref.variantId]);
    return rows.map((r) => r.id).sort();
  }
}

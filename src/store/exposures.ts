import type { Sql } from './sql.js';

const INSERT_EXPOSURE =
  'INSERT INTO exposures (site_id, visitor_id, profile_id, zone_id, variant_id, experiment_id, arm_id, holdout, url, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)';

export interface ExposureInsert {
  siteId: string;
  visitorId: string;
  profileId: string | null;
  zoneId: string;
  variantId: string | null;
  experimentId: string | null;
  armId: string | null;
  holdout: boolean;
  url: string;
  at: number;
}

/** Exposures: what each decided zone showed a visitor, and the arm a visitor keeps. */
export class ExposuresRepo {
  constructor(private readonly x: Sql) {}

  /** The first arm a visitor was exposed to in each experiment (a visitor keeps its arm). */
  async earlierArms(siteId: string, visitorId: string): Promise<Map<string, string>> {
    const rows = await this.x.all<{ experiment_id: string; arm_id: string }>(
      'SELECT experiment_id, arm_id FROM exposures WHERE site_id = ? AND visitor_id = ? AND experiment_id IS NOT NULL AND arm_id IS NOT NULL ORDER BY id DESC',
      [siteId, visitorId],
    );
    const out = new Map<string, string>();
    for (const r of rows) out.set(r.experiment_id, r.arm_id);
    return out;
  }

  /** Writes one row per zone a request decided. */
  /** One statement text for every row: on PostgreSQL the rows of a whole group commit share one multi-row insert (pg/batch.ts). */
  async insert(rows: readonly ExposureInsert[]): Promise<void> {
    await this.x.runEach(
      INSERT_EXPOSURE,
      rows.map((r) => [r.siteId, r.visitorId, r.profileId, r.zoneId, r.variantId, r.experimentId, r.armId, r.holdout ? 1 : 0, r.url, r.at]),
    );
  }
}

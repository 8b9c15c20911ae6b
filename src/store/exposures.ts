import type { Sql } from './sql.js';

const INSERT_EXPOSURE =
  'INSERT INTO exposures (site_id, visitor_id, profile_id, zone_id, variant_id, experiment_id, arm_id, holdout, url, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)';

/** Rows per multi-row INSERT on SQLite (10 parameters each, far below SQLite's limit; bounds the statement texts cached). */
const MAX_ROWS_PER_INSERT = 64;
const insertTexts: string[] = [];

/** INSERT_EXPOSURE with `n` rows of values. */
function insertRows(n: number): string {
  return (insertTexts[n] ??= `${INSERT_EXPOSURE}${', (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)'.repeat(n - 1)}`);
}

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

/**
 * What one decision reads about a visitor, in one statement (one round trip on PostgreSQL):
 * kind 0, SQLite only: the site's configuration version (`n`; no row before the first change);
 * kind 1: the visitor identity's profile (`a`), that profile's row id (`c`, null when it is gone)
 * and what it was merged into (`b`); kind 2: an exposure to a test (`a` experiment, `b` arm, `n` row id);
 * kind 3: a segment (`a`) of the identity's profile when that profile is not merged.
 */
const FACTS_VISITOR = `SELECT 1 AS k, i.profile_id AS a, p.merged_into AS b, p.id AS c, NULL AS n FROM identities i
  LEFT JOIN profiles p ON p.id = i.profile_id AND p.site_id = i.site_id
 WHERE i.site_id = ? AND i.kind = 'visitor' AND i.value = ?
UNION ALL
SELECT 2, experiment_id, arm_id, NULL, id FROM exposures WHERE site_id = ? AND visitor_id = ? AND experiment_id IS NOT NULL AND arm_id IS NOT NULL
UNION ALL
SELECT 3, m.segment_id, NULL, NULL, NULL FROM identities i JOIN profiles p ON p.id = i.profile_id AND p.site_id = i.site_id AND p.merged_into IS NULL
  JOIN segment_members m ON m.profile_id = p.id
 WHERE i.site_id = ? AND i.kind = 'visitor' AND i.value = ?`;
const FACTS_SQLITE = `SELECT 0 AS k, NULL AS a, NULL AS b, NULL AS c, version AS n FROM web_versions WHERE site_id = ?
UNION ALL
${FACTS_VISITOR}`;

/** A visitor as one decision sees it (ExposuresRepo.decisionFacts). */
export interface DecisionFacts {
  /** SQLite: the site's configuration version (0 before the first change); PostgreSQL: null (notifications keep the cache). */
  version: number | null;
  /**
   * The profile the visitor identity names, when it is not merged into another (`segmentIds` are then its segments);
   * undefined when the identity names a merged profile: the caller follows the merge (VisitorsRepo.profileOf).
   */
  profileId: string | null | undefined;
  segmentIds: string[];
  /** The first arm the visitor was exposed to in each test. */
  earlierArms: Map<string, string>;
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

  /**
   * Everything a decision reads about a visitor in one statement: the site's configuration
   * version (SQLite), the visitor's profile and segments (VisitorsRepo.profileOf and
   * segmentsOfProfile when the profile is not merged) and its earlier arms (earlierArms).
   */
  async decisionFacts(siteId: string, visitorId: string): Promise<DecisionFacts> {
    const sqlite = this.x.dialect === 'sqlite';
    const visitor = [siteId, visitorId, siteId, visitorId, siteId, visitorId];
    const rows = await this.x.all<{ k: number | string; a: string | null; b: string | null; c: string | null; n: number | string | null }>(
      sqlite ? FACTS_SQLITE : FACTS_VISITOR,
      sqlite ? [siteId, ...visitor] : visitor,
    );
    let version: number | null = sqlite ? 0 : null;
    let profileId: string | null | undefined = null;
    const segmentIds: string[] = [];
    const first = new Map<string, { arm: string; id: number }>();
    for (const r of rows) {
      switch (Number(r.k)) {
        case 0:
          version = Number(r.n);
          break;
        case 1:
          // No profile row: none (as profileOf); merged: the caller follows the merge.
          profileId = r.c === null ? null : r.b === null ? r.a : undefined;
          break;
        case 2: {
          const id = Number(r.n);
          const seen = first.get(r.a!);
          if (!seen || id < seen.id) first.set(r.a!, { arm: r.b!, id });
          break;
        }
        default:
          segmentIds.push(r.a!);
      }
    }
    const earlierArms = new Map<string, string>();
    for (const [experimentId, f] of first) earlierArms.set(experimentId, f.arm);
    return { version, profileId, segmentIds: profileId === undefined ? [] : segmentIds, earlierArms };
  }

  /**
   * Writes one row per zone a request decided. On PostgreSQL one statement text for every row:
   * the rows of a whole group commit share one multi-row insert (pg/batch.ts); on SQLite the
   * request's rows are one multi-row INSERT (one call into SQLite instead of one per row).
   */
  async insert(rows: readonly ExposureInsert[]): Promise<void> {
    const sets = rows.map((r) => [r.siteId, r.visitorId, r.profileId, r.zoneId, r.variantId, r.experimentId, r.armId, r.holdout ? 1 : 0, r.url, r.at]);
    if (this.x.dialect !== 'sqlite' || rows.length === 1) {
      await this.x.runEach(INSERT_EXPOSURE, sets);
      return;
    }
    for (let i = 0; i < sets.length; i += MAX_ROWS_PER_INSERT) {
      const chunk = sets.slice(i, i + MAX_ROWS_PER_INSERT);
      await this.x.run(insertRows(chunk.length), chunk.flat());
    }
  }
}

import type { Sql } from './sql.js';
import { newId } from './ids.js';

const INSERT_EXPOSURE =
  'INSERT INTO exposures (site_id, visitor_id, profile_id, zone_id, variant_id, experiment_id, arm_id, holdout, url, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)';

export type MatchType = 'exact' | 'prefix' | 'glob';
export type ContentKind = 'html' | 'json';
export type VariantStatus = 'draft' | 'approved' | 'published' | 'disabled' | 'archived';
export type OverrideKind = 'personalization_off' | 'pin_zone' | 'force_arm';

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

export interface ContentRow {
  id: string;
  site_id: string;
  name: string;
  kind: ContentKind;
  body: string;
  created_at: number;
  updated_at: number;
}

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

export interface OverrideRow {
  id: string;
  site_id: string;
  kind: OverrideKind;
  page_id: string | null;
  zone_id: string | null;
  variant_id: string | null;
  experiment_id: string | null;
  arm_id: string | null;
  visitor_id: string | null;
  note: string | null;
  set_by: string;
  set_at: number;
  lifted_by: string | null;
  lifted_at: number | null;
}

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

/** Pages, zones, content, variants, placements, overrides, exposures and variant renders. Every query is scoped by site. */
export class WebRepo {
  constructor(private readonly x: Sql) {}

  // ---- pages -------------------------------------------------------------

  listPages(siteId: string): Promise<PageRow[]> {
    return this.x.all<PageRow>('SELECT * FROM pages WHERE site_id = ? ORDER BY name, id', [siteId]);
  }

  page(siteId: string, id: string): Promise<PageRow | undefined> {
    return this.x.get<PageRow>('SELECT * FROM pages WHERE id = ? AND site_id = ?', [id, siteId]);
  }

  pageByPattern(siteId: string, matchType: MatchType, pattern: string): Promise<PageRow | undefined> {
    return this.x.get<PageRow>('SELECT * FROM pages WHERE site_id = ? AND match_type = ? AND pattern = ?', [siteId, matchType, pattern]);
  }

  async insertPage(p: { siteId: string; name: string; matchType: MatchType; pattern: string; now: number }): Promise<string> {
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

  async updatePage(siteId: string, id: string, p: { name: string; matchType: MatchType; pattern: string; now: number }): Promise<void> {
    await this.x.run('UPDATE pages SET name = ?, match_type = ?, pattern = ?, updated_at = ? WHERE id = ? AND site_id = ?', [
      p.name,
      p.matchType,
      p.pattern,
      p.now,
      id,
      siteId,
    ]);
  }

  async deletePage(siteId: string, id: string): Promise<void> {
    await this.x.run('DELETE FROM pages WHERE id = ? AND site_id = ?', [id, siteId]);
  }

  // ---- content -----------------------------------------------------------

  listContent(siteId: string, kind?: ContentKind): Promise<ContentRow[]> {
    return kind === undefined
      ? this.x.all<ContentRow>('SELECT * FROM content_blocks WHERE site_id = ? ORDER BY name, id', [siteId])
      : this.x.all<ContentRow>('SELECT * FROM content_blocks WHERE site_id = ? AND kind = ? ORDER BY name, id', [siteId, kind]);
  }

  content(siteId: string, id: string): Promise<ContentRow | undefined> {
    return this.x.get<ContentRow>('SELECT * FROM content_blocks WHERE id = ? AND site_id = ?', [id, siteId]);
  }

  async insertContent(c: { siteId: string; name: string; kind: ContentKind; body: string; now: number }): Promise<string> {
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

  async updateContent(siteId: string, id: string, c: { name: string; kind: ContentKind; body: string; now: number }): Promise<void> {
    await this.x.run('UPDATE content_blocks SET name = ?, kind = ?, body = ?, updated_at = ? WHERE id = ? AND site_id = ?', [
      c.name,
      c.kind,
      c.body,
      c.now,
      id,
      siteId,
    ]);
  }

  async deleteContent(siteId: string, id: string): Promise<void> {
    await this.x.run('DELETE FROM content_blocks WHERE id = ? AND site_id = ?', [id, siteId]);
  }

  zonesUsingContent(siteId: string, contentId: string): Promise<ZoneRow[]> {
    return this.x.all<ZoneRow>('SELECT * FROM zones WHERE site_id = ? AND default_content_id = ? ORDER BY id', [siteId, contentId]);
  }

  variantsUsingContent(siteId: string, contentId: string): Promise<VariantRow[]> {
    return this.x.all<VariantRow>('SELECT * FROM variants WHERE site_id = ? AND content_id = ? ORDER BY id', [siteId, contentId]);
  }

  async clearZoneDefault(siteId: string, contentId: string, now: number): Promise<void> {
    await this.x.run('UPDATE zones SET default_content_id = NULL, updated_at = ? WHERE site_id = ? AND default_content_id = ?', [now, siteId, contentId]);
  }

  // ---- zones -------------------------------------------------------------

  listZones(siteId: string, pageId?: string): Promise<ZoneRow[]> {
    return pageId === undefined
      ? this.x.all<ZoneRow>('SELECT * FROM zones WHERE site_id = ? ORDER BY page_id, name, id', [siteId])
      : this.x.all<ZoneRow>('SELECT * FROM zones WHERE site_id = ? AND page_id = ? ORDER BY name, id', [siteId, pageId]);
  }

  zone(siteId: string, id: string): Promise<ZoneRow | undefined> {
    return this.x.get<ZoneRow>('SELECT * FROM zones WHERE id = ? AND site_id = ?', [id, siteId]);
  }

  zoneByName(pageId: string, name: string): Promise<ZoneRow | undefined> {
    return this.x.get<ZoneRow>('SELECT * FROM zones WHERE page_id = ? AND name = ?', [pageId, name]);
  }

  async insertZone(z: { siteId: string; pageId: string; name: string; selector: string; defaultContentId: string | null; now: number }): Promise<string> {
    const id = newId('zone');
    await this.x.run(
      'INSERT INTO zones (id, site_id, page_id, name, selector, default_content_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      [id, z.siteId, z.pageId, z.name, z.selector, z.defaultContentId, z.now, z.now],
    );
    return id;
  }

  async updateZone(siteId: string, id: string, z: { name: string; selector: string; defaultContentId: string | null; now: number }): Promise<void> {
    await this.x.run('UPDATE zones SET name = ?, selector = ?, default_content_id = ?, updated_at = ? WHERE id = ? AND site_id = ?', [
      z.name,
      z.selector,
      z.defaultContentId,
      z.now,
      id,
      siteId,
    ]);
  }

  async deleteZone(siteId: string, id: string): Promise<void> {
    await this.x.run('DELETE FROM zones WHERE id = ? AND site_id = ?', [id, siteId]);
  }

  // ---- variants ----------------------------------------------------------

  listVariants(siteId: string, f: { zoneId?: string | undefined; status?: VariantStatus | undefined }): Promise<VariantRow[]> {
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

  variant(siteId: string, id: string): Promise<VariantRow | undefined> {
    return this.x.get<VariantRow>('SELECT * FROM variants WHERE id = ? AND site_id = ?', [id, siteId]);
  }

  async insertVariant(v: { siteId: string; zoneId: string; contentId: string; segmentId: string | null; name: string; createdBy: string; now: number }): Promise<string> {
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

  async deleteVariant(siteId: string, id: string): Promise<void> {
    await this.x.run('DELETE FROM variants WHERE id = ? AND site_id = ?', [id, siteId]);
  }

  // ---- placements --------------------------------------------------------

  listPlacements(siteId: string, f: { zoneId?: string | undefined; variantId?: string | undefined }): Promise<PlacementRow[]> {
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

  placement(siteId: string, id: string): Promise<PlacementRow | undefined> {
    return this.x.get<PlacementRow>('SELECT * FROM placements WHERE id = ? AND site_id = ?', [id, siteId]);
  }

  /** `id`: the id reserved for it (a draft approved later keeps the id it was proposed under); default a new one. */
  async insertPlacement(p: { siteId: string; zoneId: string; variantId: string; segmentId: string | null; priority: number; enabled: boolean; now: number; id?: string | undefined }): Promise<string> {
    const id = p.id ?? newId('plc');
    await this.x.run(
      'INSERT INTO placements (id, site_id, zone_id, variant_id, segment_id, priority, enabled, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
      [id, p.siteId, p.zoneId, p.variantId, p.segmentId, p.priority, p.enabled ? 1 : 0, p.now, p.now],
    );
    return id;
  }

  async updatePlacement(siteId: string, id: string, p: { segmentId: string | null; priority: number; enabled: boolean; now: number }): Promise<void> {
    await this.x.run('UPDATE placements SET segment_id = ?, priority = ?, enabled = ?, updated_at = ? WHERE id = ? AND site_id = ?', [
      p.segmentId,
      p.priority,
      p.enabled ? 1 : 0,
      p.now,
      id,
      siteId,
    ]);
  }

  async deletePlacement(siteId: string, id: string): Promise<void> {
    await this.x.run('DELETE FROM placements WHERE id = ? AND site_id = ?', [id, siteId]);
  }

  async deletePlacementsOfVariant(siteId: string, variantId: string): Promise<void> {
    await this.x.run('DELETE FROM placements WHERE site_id = ? AND variant_id = ?', [siteId, variantId]);
  }

  async deletePlacementsOfZone(siteId: string, zoneId: string): Promise<void> {
    await this.x.run('DELETE FROM placements WHERE site_id = ? AND zone_id = ?', [siteId, zoneId]);
  }

  // ---- overrides ---------------------------------------------------------

  listOverrides(siteId: string, activeOnly: boolean): Promise<OverrideRow[]> {
    return activeOnly
      ? this.x.all<OverrideRow>('SELECT * FROM overrides WHERE site_id = ? AND lifted_at IS NULL ORDER BY set_at, id', [siteId])
      : this.x.all<OverrideRow>('SELECT * FROM overrides WHERE site_id = ? ORDER BY set_at DESC, id', [siteId]);
  }

  override(siteId: string, id: string): Promise<OverrideRow | undefined> {
    return this.x.get<OverrideRow>('SELECT * FROM overrides WHERE id = ? AND site_id = ?', [id, siteId]);
  }

  async insertOverride(o: {
    siteId: string;
    kind: OverrideKind;
    pageId: string | null;
    zoneId: string | null;
    variantId: string | null;
    experimentId: string | null;
    armId: string | null;
    visitorId: string | null;
    note: string | null;
    setBy: string;
    now: number;
    /** The id reserved for it (see insertPlacement); default a new one. */
    id?: string | undefined;
  }): Promise<string> {
    const id = o.id ?? newId('ovr');
    await this.x.run(
      'INSERT INTO overrides (id, site_id, kind, page_id, zone_id, variant_id, experiment_id, arm_id, visitor_id, note, set_by, set_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      [id, o.siteId, o.kind, o.pageId, o.zoneId, o.variantId, o.experimentId, o.armId, o.visitorId, o.note, o.setBy, o.now],
    );
    return id;
  }

  /** Lifts an active override; returns 0 when it was already lifted. */
  async liftOverride(siteId: string, id: string, by: string, now: number): Promise<number> {
    return (await this.x.run('UPDATE overrides SET lifted_by = ?, lifted_at = ? WHERE id = ? AND site_id = ? AND lifted_at IS NULL', [by, now, id, siteId])).changes;
  }

  /** Lifts every active override naming a page, zone or variant that is going away. */
  async liftOverridesOf(siteId: string, column: 'page_id' | 'zone_id' | 'variant_id', value: string, by: string, now: number): Promise<void> {
    await this.x.run(`UPDATE overrides SET lifted_by = ?, lifted_at = ? WHERE site_id = ? AND ${column} = ? AND lifted_at IS NULL`, [by, now, siteId, value]);
  }

  // ---- experiments (read only: the experiments area owns them) ----------

  listExperiments(siteId: string): Promise<ExperimentLite[]> {
    return this.x.all<ExperimentLite>(
      'SELECT id, page_id, zone_id, status, seed, shipped_arm_id, started_at, shipped_at FROM experiments WHERE site_id = ? ORDER BY created_at, id',
      [siteId],
    );
  }

  experiment(siteId: string, id: string): Promise<ExperimentLite | undefined> {
    return this.x.get<ExperimentLite>(
      'SELECT id, page_id, zone_id, status, seed, shipped_arm_id, started_at, shipped_at FROM experiments WHERE id = ? AND site_id = ?',
      [id, siteId],
    );
  }

  listArms(siteId: string): Promise<ArmLite[]> {
    return this.x.all<ArmLite>(
      'SELECT id, experiment_id, label, is_control, variant_id, weight, position FROM experiment_arms WHERE site_id = ? ORDER BY experiment_id, position, id',
      [siteId],
    );
  }

  /** Experiments that reference a page, a zone or a variant (through an arm), any status. */
  async experimentsReferencing(siteId: string, ref: { pageId?: string; zoneId?: string; variantId?: string }): Promise<string[]> {
    let rows: { id: string }[];
    if (ref.pageId !== undefined) rows = await this.x.all('SELECT id FROM experiments WHERE site_id = ? AND page_id = ?', [siteId, ref.pageId]);
    else if (ref.zoneId !== undefined) rows = await this.x.all('SELECT id FROM experiments WHERE site_id = ? AND zone_id = ?', [siteId, ref.zoneId]);
    else rows = await this.x.all('SELECT DISTINCT experiment_id AS id FROM experiment_arms WHERE site_id = ? AND variant_id = ?', [siteId, ref.variantId]);
    return rows.map((r) => r.id).sort();
  }

  // ---- decisions ---------------------------------------------------------

  /** The configuration version of a site (bumped by triggers on every change); 0 before the first change. */
  async version(siteId: string): Promise<number> {
    return Number((await this.x.get<{ version: number }>('SELECT version FROM web_versions WHERE site_id = ?', [siteId]))?.version ?? 0);
  }

  /** The holdout share of a site, read fresh (not through the sites cache). */
  async holdoutShare(siteId: string): Promise<number> {
    return Number((await this.x.get<{ holdout_share: number }>('SELECT holdout_share FROM sites WHERE id = ?', [siteId]))?.holdout_share ?? 0);
  }

  /** The visitor ids attached to a profile, the most recent first. */
  async visitorIdsOfProfile(siteId: string, profileId: string): Promise<string[]> {
    const rows = await this.x.all<{ value: string }>(
      "SELECT value FROM identities WHERE site_id = ? AND kind = 'visitor' AND profile_id = ? ORDER BY created_at DESC, value",
      [siteId, profileId],
    );
    return rows.map((r) => r.value);
  }

  /** The surviving profile a visitor id is attached to (identities kind 'visitor'), following merges. */
  async profileOfVisitor(siteId: string, visitorId: string): Promise<string | null> {
    let id = (await this.x.get<{ profile_id: string }>("SELECT profile_id FROM identities WHERE site_id = ? AND kind = 'visitor' AND value = ?", [siteId, visitorId]))
      ?.profile_id;
    for (let hops = 0; id !== undefined && hops < 16; hops++) {
      const row = await this.x.get<{ merged_into: string | null }>('SELECT merged_into FROM profiles WHERE id = ? AND site_id = ?', [id, siteId]);
      if (!row) return null;
      if (row.merged_into === null) return id;
      id = row.merged_into;
    }
    return null;
  }

  async segmentsOfProfile(profileId: string): Promise<string[]> {
    return (await this.x.all<{ segment_id: string }>('SELECT segment_id FROM segment_members WHERE profile_id = ?', [profileId])).map((r) => r.segment_id);
  }

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

  /** Writes: one multi-row INSERT for every zone a request decided. */
  /** One statement text for every row: on PostgreSQL the rows of a whole group commit share one multi-row insert (pg/batch.ts). */
  async insertExposures(rows: readonly ExposureInsert[]): Promise<void> {
    await this.x.runEach(
      INSERT_EXPOSURE,
      rows.map((r) => [r.siteId, r.visitorId, r.profileId, r.zoneId, r.variantId, r.experimentId, r.armId, r.holdout ? 1 : 0, r.url, r.at]),
    );
  }

  // ---- variant renders (watchdog) ---------------------------------------

  async insertRender(r: { siteId: string; variantId: string; ok: boolean; error: string | null; at: number }): Promise<void> {
    await this.x.run('INSERT INTO variant_renders (site_id, variant_id, ok, error, created_at) VALUES (?, ?, ?, ?, ?)', [
      r.siteId,
      r.variantId,
      r.ok ? 1 : 0,
      r.error,
      r.at,
    ]);
  }

  /** Renders and failures of a variant since `since` (inclusive). */
  async renderCounts(siteId: string, variantId: string, since: number): Promise<{ renders: number; failures: number }> {
    const row = await this.x.get<{ n: number; f: number | null }>(
      'SELECT count(*) AS n, sum(CASE WHEN ok = 0 THEN 1 ELSE 0 END) AS f FROM variant_renders WHERE variant_id = ? AND site_id = ? AND created_at >= ?',
      [variantId, siteId, since],
    );
    return { renders: Number(row?.n ?? 0), failures: Number(row?.f ?? 0) };
  }

  /** The most recent failure messages of a variant since `since`. */
  async recentRenderErrors(siteId: string, variantId: string, since: number, limit: number): Promise<{ error: string | null; created_at: number }[]> {
    return this.x.all(
      'SELECT error, created_at FROM variant_renders WHERE variant_id = ? AND site_id = ? AND created_at >= ? AND ok = 0 ORDER BY created_at DESC, id DESC LIMIT ?',
      [variantId, siteId, since, limit],
    );
  }

  /** Drops renders of a variant older than `before` (the watchdog only ever reads its window). */
  async pruneRenders(variantId: string, before: number): Promise<void> {
    await this.x.run('DELETE FROM variant_renders WHERE variant_id = ? AND created_at < ?', [variantId, before]);
  }
}

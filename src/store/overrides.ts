import type { Sql } from './sql.js';
import { newId } from './ids.js';

export type OverrideKind = 'personalization_off' | 'pin_zone' | 'force_arm';

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

/** Overrides: site-wide switches (personalization off, zone pins) and QA arm forces, with who set and lifted them. Every query is scoped by site. */
export class OverridesRepo {
  constructor(private readonly x: Sql) {}

  list(siteId: string, activeOnly: boolean): Promise<OverrideRow[]> {
    return activeOnly
      ? this.x.all<OverrideRow>('SELECT * FROM overrides WHERE site_id = ? AND lifted_at IS NULL ORDER BY set_at, id', [siteId])
      : this.x.all<OverrideRow>('SELECT * FROM overrides WHERE site_id = ? ORDER BY set_at DESC, id', [siteId]);
  }

  get(siteId: string, id: string): Promise<OverrideRow | undefined> {
    return this.x.get<OverrideRow>('SELECT * FROM overrides WHERE id = ? AND site_id = ?', [id, siteId]);
  }

  async insert(o: {
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
    /** The id reserved for it (see PlacementsRepo.insert); default a new one. */
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
  async lift(siteId: string, id: string, by: string, now: number): Promise<number> {
    return (await this.x.run('UPDATE overrides SET lifted_by = ?, lifted_at = ? WHERE id = ? AND site_id = ? AND lifted_at IS NULL', [by, now, id, siteId])).changes;
  }

  /** Lifts every active override naming a page, zone or variant that is going away. */
  async liftOf(siteId: string, column: 'page_id' | 'zone_id' | 'variant_id', value: string, by: string, now: number): Promise<void> {
    await this.x.run(`UPDATE overrides SET lifted_by = ?, lifted_at = ? WHERE site_id = ? AND ${column} = ? AND lifted_at IS NULL`, [by, now, siteId, value]);
  }
}

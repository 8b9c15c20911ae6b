import type { Sql } from './sql.js';

/** What is known of a visitor id when deciding: its profile (following merges) and that profile's segments. */
export class VisitorsRepo {
  constructor(private readonly x: Sql) {}

  /** The visitor ids attached to a profile, the most recent first. */
  async idsOfProfile(siteId: string, profileId: string): Promise<string[]> {
    const rows = await this.x.all<{ value: string }>(
      "SELECT value FROM identities WHERE site_id = ? AND kind = 'visitor' AND profile_id = ? ORDER BY created_at DESC, value",
      [siteId, profileId],
    );
    return rows.map((r) => r.value);
  }

  /** The surviving profile a visitor id is attached to (identities kind 'visitor'), following merges. */
  async profileOf(siteId: string, visitorId: string): Promise<string | null> {
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
}

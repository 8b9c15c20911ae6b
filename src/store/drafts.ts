import type { Sql } from './sql.js';

export type DraftStatus = 'pending' | 'approved' | 'rejected';

/** A change proposed under propose-only, awaiting a person (see the migration that creates `drafts`). */
export interface DraftRow {
  id: string;
  site_id: string;
  kind: string;
  target_id: string;
  /** JSON: exactly what was proposed. */
  payload: string;
  summary: string;
  status: DraftStatus;
  proposed_by: string;
  decided_by: string | null;
  decided_at: number | null;
  reason: string | null;
  /** JSON: what approval did (ids it created, the state it left). */
  result: string | null;
  created_at: number;
  updated_at: number;
}

/** Drafts: changes filed by propose-only tokens. Methods that write must run inside a write operation. */
export class DraftsRepo {
  constructor(private readonly x: Sql) {}

  async insert(d: { id: string; siteId: string; kind: string; targetId: string; payload: string; summary: string; proposedBy: string; now: number }): Promise<void> {
    await this.x.run(
      `INSERT INTO drafts (id, site_id, kind, target_id, payload, summary, status, proposed_by, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?)`,
      [d.id, d.siteId, d.kind, d.targetId, d.payload, d.summary, d.proposedBy, d.now, d.now],
    );
  }

  get(siteId: string, id: string): Promise<DraftRow | undefined> {
    return this.x.get<DraftRow>('SELECT * FROM drafts WHERE site_id = ? AND id = ?', [siteId, id]);
  }

  /** The pending drafts of one kind for one object, oldest first. */
  pendingFor(siteId: string, kind: string, targetId: string): Promise<DraftRow[]> {
    return this.x.all<DraftRow>("SELECT * FROM drafts WHERE site_id = ? AND target_id = ? AND kind = ? AND status = 'pending' ORDER BY created_at, id", [
      siteId,
      targetId,
      kind,
    ]);
  }

  /** Every pending draft naming an object, oldest first. */
  pendingOf(siteId: string, targetId: string): Promise<DraftRow[]> {
    return this.x.all<DraftRow>("SELECT * FROM drafts WHERE site_id = ? AND target_id = ? AND status = 'pending' ORDER BY created_at, id", [siteId, targetId]);
  }

  /** Replaces the proposal of a pending draft (a draft segment edited before anyone decided). */
  async revise(siteId: string, id: string, payload: string, summary: string, now: number): Promise<void> {
    await this.x.run("UPDATE drafts SET payload = ?, summary = ?, updated_at = ? WHERE site_id = ? AND id = ? AND status = 'pending'", [
      payload,
      summary,
      now,
      siteId,
      id,
    ]);
  }

  /** Decides a pending draft; false when it was no longer pending (decided concurrently). */
  async decide(siteId: string, id: string, d: { status: 'approved' | 'rejected'; by: string; at: number; reason: string | null; result: string | null }): Promise<boolean> {
    const r = await this.x.run(
      "UPDATE drafts SET status = ?, decided_by = ?, decided_at = ?, reason = ?, result = ?, updated_at = ? WHERE site_id = ? AND id = ? AND status = 'pending'",
      [d.status, d.by, d.at, d.reason, d.result, d.at, siteId, id],
    );
    return r.changes > 0;
  }
}

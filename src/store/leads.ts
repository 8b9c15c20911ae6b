import type { Sql } from './sql.js';
import type { LeadRow } from './insights.js';
import { whereOf } from './where.js';

export interface PipelineLeadRow extends LeadRow {
  owner_id: string | null;
  status_changed_at: number | null;
  open_tasks: number;
  next_due_at: number | null;
}

export interface LeadNoteRow {
  id: string;
  site_id: string;
  lead_id: string;
  body: string;
  author: string;
  created_at: number;
}

export interface LeadTaskRow {
  id: string;
  site_id: string;
  lead_id: string;
  title: string;
  due_at: number;
  state: 'open' | 'done';
  call_id: string | null;
  created_by: string;
  created_at: number;
  done_at: number | null;
  done_by: string | null;
}

export interface LeadCallRow {
  site_id: string;
  id: string;
  lead_id: string;
  profile_id: string;
  started_at: number;
  ended_at: number;
  outcome: string;
  notes: string | null;
  transcript: string | null;
  callback_at: number | null;
  task_id: string | null;
  status_before: string;
  status_after: string;
  source: 'tool' | 'import';
  recorded_by: string;
  created_at: number;
}

const LEAD_COLUMNS = `l.*,
  (SELECT count(*) FROM lead_tasks t WHERE t.lead_id = l.id AND t.state = 'open') AS open_tasks,
  (SELECT min(t.due_at) FROM lead_tasks t WHERE t.lead_id = l.id AND t.state = 'open') AS next_due_at`;

function num(r: PipelineLeadRow): PipelineLeadRow {
  return { ...r, open_tasks: Number(r.open_tasks), next_due_at: r.next_due_at === null ? null : Number(r.next_due_at) };
}

/** The leads pipeline: status moves, owners, notes, follow-up tasks and calls. Every query is scoped by site; writes run inside a write operation. */
export class LeadsRepo {
  constructor(private readonly x: Sql) {}

  async list(f: {
    siteId: string;
    status?: string | undefined;
    kind?: string | undefined;
    owner?: string | undefined;
    unowned?: boolean | undefined;
    hasOpenTask?: boolean | undefined;
    dueBefore?: number | undefined;
    since?: number | undefined;
    until?: number | undefined;
    limit: number;
  }): Promise<PipelineLeadRow[]> {
    const w = whereOf([
      ['l.site_id = ?', f.siteId],
      ['l.status = ?', f.status],
      ['l.kind = ?', f.kind],
      ['l.owner_id = ?', f.owner],
      ['l.owner_id IS NULL', f.unowned === true],
      ["EXISTS (SELECT 1 FROM lead_tasks t WHERE t.lead_id = l.id AND t.state = 'open')", f.hasOpenTask === true],
      ["NOT EXISTS (SELECT 1 FROM lead_tasks t WHERE t.lead_id = l.id AND t.state = 'open')", f.hasOpenTask === false ? true : undefined],
      ["EXISTS (SELECT 1 FROM lead_tasks t WHERE t.lead_id = l.id AND t.state = 'open' AND t.due_at < ?)", f.dueBefore],
      ['l.created_at >= ?', f.since],
      ['l.created_at < ?', f.until],
    ]);
    const rows = await this.x.all<PipelineLeadRow>(`SELECT ${LEAD_COLUMNS} FROM leads l ${w.sql} ORDER BY l.created_at DESC, l.id DESC LIMIT ?`, [
      ...w.params,
      f.limit,
    ]);
    return rows.map(num);
  }

  async get(siteId: string, id: string): Promise<PipelineLeadRow | undefined> {
    const r = await this.x.get<PipelineLeadRow>(`SELECT ${LEAD_COLUMNS} FROM leads l WHERE l.id = ? AND l.site_id = ?`, [id, siteId]);
    return r && num(r);
  }

  /** The newest lead of a profile (lead forms before opt-ins), for a call that names the profile. */
  newestOfProfile(siteId: string, profileId: string): Promise<{ id: string } | undefined> {
    return this.x.get<{ id: string }>(
      "SELECT id FROM leads WHERE profile_id = ? AND site_id = ? ORDER BY CASE WHEN kind = 'lead_form' THEN 0 ELSE 1 END, created_at DESC, id DESC LIMIT 1",
      [profileId, siteId],
    );
  }

  /** Leads with a booked appointment slot (the ISO text as captured); the caller sorts by instant. */
  withAppointments(siteId: string, limit: number): Promise<PipelineLeadRow[]> {
    return this.x
      .all<PipelineLeadRow>(`SELECT ${LEAD_COLUMNS} FROM leads l WHERE l.site_id = ? AND l.appointment_slot IS NOT NULL ORDER BY l.created_at DESC LIMIT ?`, [siteId, limit])
      .then((rows) => rows.map(num));
  }

  async setStatus(siteId: string, id: string, status: string, now: number): Promise<boolean> {
    return (await this.x.run('UPDATE leads SET status = ?, status_changed_at = ? WHERE id = ? AND site_id = ?', [status, now, id, siteId])).changes > 0;
  }

  async setOwner(siteId: string, id: string, owner: string | null): Promise<boolean> {
    return (await this.x.run('UPDATE leads SET owner_id = ? WHERE id = ? AND site_id = ?', [owner, id, siteId])).changes > 0;
  }

  async addNote(n: LeadNoteRow): Promise<void> {
    await this.x.run('INSERT INTO lead_notes (id, site_id, lead_id, body, author, created_at) VALUES (?, ?, ?, ?, ?, ?)', [
      n.id,
      n.site_id,
      n.lead_id,
      n.body,
      n.author,
      n.created_at,
    ]);
  }

  notes(siteId: string, leadId: string, limit: number): Promise<LeadNoteRow[]> {
    return this.x.all<LeadNoteRow>('SELECT * FROM lead_notes WHERE lead_id = ? AND site_id = ? ORDER BY created_at DESC, id DESC LIMIT ?', [leadId, siteId, limit]);
  }

  async addTask(t: Omit<LeadTaskRow, 'state' | 'done_at' | 'done_by'>): Promise<void> {
    await this.x.run(
      "INSERT INTO lead_tasks (id, site_id, lead_id, title, due_at, state, call_id, created_by, created_at) VALUES (?, ?, ?, ?, ?, 'open', ?, ?, ?)",
      [t.id, t.site_id, t.lead_id, t.title, t.due_at, t.call_id, t.created_by, t.created_at],
    );
  }

  task(siteId: string, id: string): Promise<LeadTaskRow | undefined> {
    return this.x.get<LeadTaskRow>('SELECT * FROM lead_tasks WHERE id = ? AND site_id = ?', [id, siteId]);
  }

  tasks(f: {
    siteId: string;
    leadId?: string | undefined;
    state?: 'open' | 'done' | undefined;
    dueBefore?: number | undefined;
    owner?: string | undefined;
    limit: number;
  }): Promise<LeadTaskRow[]> {
    const w = whereOf([
      ['t.site_id = ?', f.siteId],
      ['t.lead_id = ?', f.leadId],
      ['t.state = ?', f.state],
      ['t.due_at < ?', f.dueBefore],
      ['EXISTS (SELECT 1 FROM leads l WHERE l.id = t.lead_id AND l.owner_id = ?)', f.owner],
    ]);
    return this.x.all<LeadTaskRow>(`SELECT t.* FROM lead_tasks t ${w.sql} ORDER BY t.due_at, t.id LIMIT ?`, [...w.params, f.limit]);
  }

  /** Marks an open task done; false when it was not open. */
  async completeTask(siteId: string, id: string, by: string, now: number): Promise<boolean> {
    return (
      (await this.x.run("UPDATE lead_tasks SET state = 'done', done_at = ?, done_by = ? WHERE id = ? AND site_id = ? AND state = 'open'", [now, by, id, siteId]))
        .changes > 0
    );
  }

  call(siteId: string, id: string): Promise<LeadCallRow | undefined> {
    return this.x.get<LeadCallRow>('SELECT * FROM lead_calls WHERE site_id = ? AND id = ?', [siteId, id]);
  }

  calls(f: { siteId: string; leadId?: string | undefined; outcome?: string | undefined; since?: number | undefined; limit: number }): Promise<LeadCallRow[]> {
    const w = whereOf([
      ['site_id = ?', f.siteId],
      ['lead_id = ?', f.leadId],
      ['outcome = ?', f.outcome],
      ['started_at >= ?', f.since],
    ]);
    return this.x.all<LeadCallRow>(`SELECT * FROM lead_calls ${w.sql} ORDER BY started_at DESC, id DESC LIMIT ?`, [...w.params, f.limit]);
  }

  async insertCall(c: LeadCallRow): Promise<void> {
    await this.x.run(
      `INSERT INTO lead_calls (site_id, id, lead_id, profile_id, started_at, ended_at, outcome, notes, transcript, callback_at, task_id,
        status_before, status_after, source, recorded_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        c.site_id,
        c.id,
        c.lead_id,
        c.profile_id,
        c.started_at,
        c.ended_at,
        c.outcome,
        c.notes,
        c.transcript,
        c.callback_at,
        c.task_id,
        c.status_before,
        c.status_after,
        c.source,
        c.recorded_by,
        c.created_at,
      ],
    );
  }

  /** Erasure: the notes, tasks and calls (transcripts) of the given profiles' leads. Call before the leads are deleted. */
  async eraseProfiles(siteId: string, profileIds: readonly string[]): Promise<number> {
    if (profileIds.length === 0) return 0;
    const marks = profileIds.map(() => '?').join(',');
    const leads = `SELECT id FROM leads WHERE site_id = ? AND profile_id IN (${marks})`;
    let n = 0;
    n += (await this.x.run(`DELETE FROM lead_notes WHERE site_id = ? AND lead_id IN (${leads})`, [siteId, siteId, ...profileIds])).changes;
    n += (await this.x.run(`DELETE FROM lead_tasks WHERE site_id = ? AND lead_id IN (${leads})`, [siteId, siteId, ...profileIds])).changes;
    n += (await this.x.run(`DELETE FROM lead_calls WHERE site_id = ? AND profile_id IN (${marks})`, [siteId, ...profileIds])).changes;
    n += (await this.x.run(`DELETE FROM trigger_fires WHERE site_id = ? AND profile_id IN (${marks})`, [siteId, ...profileIds])).changes;
    return n;
  }
}

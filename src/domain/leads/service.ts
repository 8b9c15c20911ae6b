import { AppError } from '../../errors/app-error.js';
import { newId } from '../../store/ids.js';
import type { LeadNoteRow, LeadsRepo, PipelineLeadRow } from '../../store/leads.js';
import type { Store } from '../../store/store.js';
import { iso, siteTimeZone } from '../time.js';
import { isoInZone } from '../triggers/zoned.js';
import { checkTransition, type LeadStatus } from './pipeline.js';
import { leadView, noteView, taskView, type AppointmentList, type LeadView, type NoteView, type TaskList, type TaskView } from './views.js';

/** Filters of a lead list (the leads repository's, without the site). */
export type LeadFilter = Omit<Parameters<LeadsRepo['list']>[0], 'siteId'>;
/** Filters of a task list (the leads repository's, without the site). */
export type TaskFilter = Omit<Parameters<LeadsRepo['tasks']>[0], 'siteId'>;

async function ownLead(store: Store, siteId: string, id: string): Promise<PipelineLeadRow> {
  const r = await store.leads.get(siteId, id);
  if (!r) throw new AppError('not_found', `no lead ${id}`, { field: 'id' });
  return r;
}

/** Leads of the site, newest first; contact values only with `pii`. */
export async function listLeads(store: Store, siteId: string, f: LeadFilter, pii: boolean): Promise<LeadView[]> {
  return (await store.leads.list({ siteId, ...f })).map((r) => leadView(r, pii));
}

export async function getLead(store: Store, siteId: string, id: string, pii: boolean): Promise<LeadView> {
  return leadView(await ownLead(store, siteId, id), pii);
}

/** Moves a lead in the pipeline when the move is allowed (conflict otherwise). */
export async function setLeadStatus(store: Store, siteId: string, id: string, status: LeadStatus, pii: boolean): Promise<LeadView> {
  await store.write(async (tx) => {
    const lead = await tx.leads.get(siteId, id);
    if (!lead) throw new AppError('not_found', `no lead ${id}`, { field: 'id' });
    const check = checkTransition(lead.status, status, lead.workable === 1);
    if (!check.ok) throw new AppError('conflict', check.reason, { field: 'status', from: lead.status, to: status });
    if (lead.status !== status) await tx.leads.setStatus(siteId, lead.id, status, Date.now());
  });
  return getLead(store, siteId, id, pii);
}

/** Makes an account user (by id or email) the owner of a lead; null clears the owner. */
export async function assignLeadOwner(store: Store, siteId: string, id: string, owner: string | null, pii: boolean): Promise<LeadView> {
  await store.write(async (tx) => {
    const lead = await tx.leads.get(siteId, id);
    if (!lead) throw new AppError('not_found', `no lead ${id}`, { field: 'id' });
    let ownerId: string | null = null;
    if (owner !== null) {
      const s = await tx.sites.get(siteId);
      const user = s ? await tx.users.find(s.account_id, owner) : undefined;
      if (!user) throw new AppError('not_found', 'owner: no user of this account matches', { field: 'owner' });
      ownerId = user.id;
    }
    await tx.leads.setOwner(siteId, lead.id, ownerId);
  });
  return getLead(store, siteId, id, pii);
}

export async function addLeadNote(store: Store, siteId: string, by: string, id: string, body: string): Promise<NoteView> {
  const note: LeadNoteRow = { id: newId('note'), site_id: siteId, lead_id: id, body, author: by, created_at: Date.now() };
  await store.write(async (tx) => {
    if (!(await tx.leads.get(siteId, id))) throw new AppError('not_found', `no lead ${id}`, { field: 'id' });
    await tx.leads.addNote(note);
  });
  return noteView(note);
}

/** Notes of a lead, newest first. */
export async function leadNotes(store: Store, siteId: string, id: string, limit: number): Promise<NoteView[]> {
  await ownLead(store, siteId, id);
  return (await store.leads.notes(siteId, id, limit)).map(noteView);
}

/** Follow-up tasks, earliest due first, with the site's time zone. */
export async function listTasks(store: Store, siteId: string, f: TaskFilter): Promise<TaskList> {
  const tz = await siteTimeZone(store, siteId);
  const rows = await store.leads.tasks({ siteId, ...f });
  return { tasks: rows.map((t) => taskView(t, tz)), timezone: tz };
}

/** Adds an open follow-up task to a lead. */
export async function createTask(store: Store, siteId: string, by: string, leadId: string, task: { title: string; dueAt: number }): Promise<TaskView> {
  const id = newId('task');
  await store.write(async (tx) => {
    if (!(await tx.leads.get(siteId, leadId))) throw new AppError('not_found', `no lead ${leadId}`, { field: 'id' });
    await tx.leads.addTask({ id, site_id: siteId, lead_id: leadId, title: task.title, due_at: task.dueAt, call_id: null, created_by: by, created_at: Date.now() });
  });
  return taskView((await store.leads.task(siteId, id))!, await siteTimeZone(store, siteId));
}

/** Marks an open task done; a done task stays as it is. */
export async function completeTask(store: Store, siteId: string, by: string, taskId: string): Promise<TaskView> {
  await store.write(async (tx) => {
    const t = await tx.leads.task(siteId, taskId);
    if (!t) throw new AppError('not_found', `no task ${taskId}`, { field: 'task_id' });
    if (t.state === 'open') await tx.leads.completeTask(siteId, t.id, by, Date.now());
  });
  return taskView((await store.leads.task(siteId, taskId))!, await siteTimeZone(store, siteId));
}

/** Booked appointment slots: upcoming ones soonest first, then (with includePast) past ones most recent first. */
export async function appointments(store: Store, siteId: string, opts: { includePast: boolean; limit: number }): Promise<AppointmentList> {
  const tz = await siteTimeZone(store, siteId);
  const now = Date.now();
  const rows = (await store.leads.withAppointments(siteId, 10_000))
    .map((r) => ({ r, at: Date.parse(r.appointment_slot!) }))
    .filter((x) => Number.isFinite(x.at) && (opts.includePast || x.at >= now));
  const upcoming = rows.filter((x) => x.at >= now).sort((a, b) => a.at - b.at);
  const past = rows.filter((x) => x.at < now).sort((a, b) => b.at - a.at);
  return {
    timezone: tz,
    appointments: [...upcoming, ...past].slice(0, opts.limit).map(({ r, at }) => ({
      lead_id: r.id,
      profile_id: r.profile_id,
      status: r.status,
      owner_id: r.owner_id,
      appointment_slot: r.appointment_slot!,
      at: iso(at)!,
      local: isoInZone(at, tz),
      upcoming: at >= now,
    })),
  };
}

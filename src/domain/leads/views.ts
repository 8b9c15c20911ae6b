import { z } from 'zod';
import type { LeadNoteRow, LeadTaskRow, PipelineLeadRow } from '../../store/leads.js';
import { iso } from '../time.js';
import { isoInZone } from '../triggers/zoned.js';
import { LEAD_STATUSES } from './pipeline.js';

export const LEAD_KINDS = ['lead_form', 'optin'] as const;
export const TASK_STATES = ['open', 'done'] as const;

/** A lead of the pipeline as tools show it; contact values only with `pii`. */
export const leadViewSchema = z.object({
  id: z.string().describe('Lead id.'),
  profile_id: z.string().describe('The profile the lead is attached to.'),
  form_id: z.string().describe('The form it came from.'),
  kind: z.enum(LEAD_KINDS).describe('lead_form, or optin for a newsletter/opt-in capture.'),
  status: z.string().describe(`Pipeline status: ${LEAD_STATUSES.join(', ')}.`),
  workable: z.boolean().describe('Whether the lead has a contact value.'),
  owner_id: z.string().nullable().describe('The account user who owns the lead.'),
  open_tasks: z.number().int().describe('Open follow-up tasks.'),
  next_due_at: z.string().nullable().describe('Due time of the earliest open task.'),
  status_changed_at: z.string().nullable().describe('When the status last changed.'),
  source: z.string().nullable().describe('The source given at capture.'),
  appointment_slot: z.string().nullable().describe('Booked appointment time as captured (ISO 8601).'),
  created_at: z.string().describe('When the lead was captured.'),
  has_email: z.boolean().describe('Whether an email was captured.'),
  has_phone: z.boolean().describe('Whether a phone number was captured.'),
  has_name: z.boolean().describe('Whether a name was captured.'),
  email: z.string().nullable().optional().describe('Plaintext; admin scope only.'),
  phone: z.string().nullable().optional().describe('Plaintext; admin scope only.'),
  name: z.string().nullable().optional().describe('Plaintext; admin scope only.'),
});
export type LeadView = z.input<typeof leadViewSchema>;

export function leadView(r: PipelineLeadRow, pii: boolean): LeadView {
  const v: LeadView = {
    id: r.id,
    profile_id: r.profile_id,
    form_id: r.form_id,
    kind: r.kind,
    status: r.status,
    workable: r.workable === 1,
    owner_id: r.owner_id,
    open_tasks: r.open_tasks,
    next_due_at: iso(r.next_due_at),
    status_changed_at: iso(r.status_changed_at),
    source: r.source,
    appointment_slot: r.appointment_slot,
    created_at: iso(r.created_at)!,
    has_email: r.email !== null,
    has_phone: r.phone !== null,
    has_name: r.name !== null,
  };
  if (pii) Object.assign(v, { email: r.email, phone: r.phone, name: r.name });
  return v;
}

export const noteViewSchema = z.object({
  id: z.string().describe('Note id.'),
  lead_id: z.string().describe('The lead.'),
  body: z.string().describe('The note.'),
  author: z.string().describe('Who wrote it (token:<id>).'),
  created_at: z.string().describe('When.'),
});
export type NoteView = z.input<typeof noteViewSchema>;

export const noteView = (n: LeadNoteRow): NoteView => ({ id: n.id, lead_id: n.lead_id, body: n.body, author: n.author, created_at: iso(n.created_at)! });

export const taskViewSchema = z.object({
  id: z.string().describe('Task id.'),
  lead_id: z.string().describe('The lead.'),
  title: z.string().describe('What to do.'),
  due_at: z.string().describe('When it is due (ISO 8601 UTC).'),
  due_local: z.string().describe("Due time in the site's time zone (ISO 8601 with offset)."),
  state: z.enum(TASK_STATES).describe('open or done.'),
  call_id: z.string().nullable().describe('The call whose callback created the task.'),
  created_by: z.string().describe('Who created it.'),
  created_at: z.string().describe('When it was created.'),
  done_at: z.string().nullable().describe('When it was completed.'),
  done_by: z.string().nullable().describe('Who completed it.'),
});
export type TaskView = z.input<typeof taskViewSchema>;

/** A follow-up task with its due time also in `tz`, the site's time zone. */
export const taskView = (t: LeadTaskRow, tz: string): TaskView => ({
  id: t.id,
  lead_id: t.lead_id,
  title: t.title,
  due_at: iso(t.due_at)!,
  due_local: isoInZone(t.due_at, tz),
  state: t.state,
  call_id: t.call_id,
  created_by: t.created_by,
  created_at: iso(t.created_at)!,
  done_at: iso(t.done_at),
  done_by: t.done_by,
});

/** Follow-up tasks and the site's time zone. */
export const taskListSchema = z.object({ tasks: z.array(taskViewSchema).describe('The tasks.'), timezone: z.string().describe("The site's time zone.") });
export type TaskList = z.input<typeof taskListSchema>;

export const appointmentViewSchema = z.object({
  lead_id: z.string().describe('The lead.'),
  profile_id: z.string().describe('Its profile.'),
  status: z.string().describe('Its pipeline status.'),
  owner_id: z.string().nullable().describe('Its owner.'),
  appointment_slot: z.string().describe('The booked slot as captured (ISO 8601).'),
  at: z.string().describe('The slot as an instant, ISO 8601 UTC.'),
  local: z.string().describe("The slot in the site's time zone, ISO 8601 with offset."),
  upcoming: z.boolean().describe('Whether the slot is still ahead.'),
});

/** Booked appointments and the site's time zone. */
export const appointmentListSchema = z.object({ appointments: z.array(appointmentViewSchema).describe('The appointments.'), timezone: z.string().describe("The site's time zone.") });
export type AppointmentList = z.input<typeof appointmentListSchema>;

import { z } from 'zod';
import { AppError } from '../../errors/app-error.js';
import { newId } from '../../store/ids.js';
import type { LeadNoteRow, LeadTaskRow, PipelineLeadRow } from '../../store/leads.js';
import { checkTransition, LEAD_STATUSES, LEAD_TRANSITIONS } from '../../domain/leads/pipeline.js';
import { isoInZone, safeTimeZone } from '../../domain/triggers/zoned.js';
import { defineTool, type ToolContext } from '../tool.js';
import { iso, isoInput, limitInput, ms } from './shared.js';

const area = 'leads';

export { LEAD_STATUSES };

const TRANSITIONS_TEXT = LEAD_STATUSES.map((s) => `${s} → ${LEAD_TRANSITIONS[s].length > 0 ? LEAD_TRANSITIONS[s].join('/') : '(final)'}`).join('; ');

const leadView = z.object({
  id: z.string().describe('Lead id.'),
  profile_id: z.string().describe('The profile the lead is attached to.'),
  form_id: z.string().describe('The form it came from.'),
  kind: z.enum(['lead_form', 'optin']).describe('lead_form, or optin for a newsletter/opt-in capture.'),
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

function view(ctx: ToolContext, r: PipelineLeadRow): z.input<typeof leadView> {
  const v: z.input<typeof leadView> = {
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
  if (ctx.pii) Object.assign(v, { email: r.email, phone: r.phone, name: r.name });
  return v;
}

const noteView = z.object({
  id: z.string().describe('Note id.'),
  lead_id: z.string().describe('The lead.'),
  body: z.string().describe('The note.'),
  author: z.string().describe('Who wrote it (token:<id>).'),
  created_at: z.string().describe('When.'),
});
const noteOf = (n: LeadNoteRow): z.input<typeof noteView> => ({ id: n.id, lead_id: n.lead_id, body: n.body, author: n.author, created_at: iso(n.created_at)! });

const taskView = z.object({
  id: z.string().describe('Task id.'),
  lead_id: z.string().describe('The lead.'),
  title: z.string().describe('What to do.'),
  due_at: z.string().describe('When it is due (ISO 8601 UTC).'),
  due_local: z.string().describe("Due time in the site's time zone (ISO 8601 with offset)."),
  state: z.enum(['open', 'done']).describe('open or done.'),
  call_id: z.string().nullable().describe('The call whose callback created the task.'),
  created_by: z.string().describe('Who created it.'),
  created_at: z.string().describe('When it was created.'),
  done_at: z.string().nullable().describe('When it was completed.'),
  done_by: z.string().nullable().describe('Who completed it.'),
});
const taskOf = (t: LeadTaskRow, tz: string): z.input<typeof taskView> => ({
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

const leadId = z.string().min(1).max(128).describe('Lead id.');
const actor = (ctx: ToolContext) => `token:${ctx.grant.tokenId}`;

async function siteTz(ctx: ToolContext): Promise<string> {
  return safeTimeZone((await ctx.store.sites.get(ctx.grant.siteId))?.timezone);
}

async function ownLead(ctx: ToolContext, id: string): Promise<PipelineLeadRow> {
  const r = await ctx.store.leads.get(ctx.grant.siteId, id);
  if (!r) throw new AppError('not_found', `no lead ${id}`, { field: 'id' });
  return r;
}

export const leadsList = defineTool({
  name: 'leads_list',
  title: 'List leads',
  description:
    'Leads of the site, newest first, filtered by status, kind, owner, open follow-up tasks, due date and capture time. Contact values only for admin-scope tokens. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({
    status: z.enum(LEAD_STATUSES).optional().describe(`Only this status (${LEAD_STATUSES.join(', ')}).`),
    kind: z.enum(['lead_form', 'optin']).optional().describe('Only lead forms or only opt-ins.'),
    owner_id: z.string().min(1).max(128).optional().describe('Only leads owned by this account user id.'),
    unowned: z.boolean().optional().describe('true: only leads without an owner.'),
    has_open_task: z.boolean().optional().describe('true: only leads with an open follow-up task; false: only leads without one.'),
    due_before: isoInput.optional().describe('Only leads with an open task due before this time (ISO 8601), e.g. overdue ones.'),
    since: isoInput.optional().describe('Captured at or after this time.'),
    until: isoInput.optional().describe('Captured before this time.'),
    limit: limitInput(500, 50),
  }),
  output: z.object({ leads: z.array(leadView).describe('The leads.') }),
  handler: async (ctx, input) => ({
    leads: (
      await ctx.store.leads.list({
        siteId: ctx.grant.siteId,
        status: input.status,
        kind: input.kind,
        owner: input.owner_id,
        unowned: input.unowned,
        hasOpenTask: input.has_open_task,
        dueBefore: ms(input.due_before),
        since: ms(input.since),
        until: ms(input.until),
        limit: input.limit,
      })
    ).map((r) => view(ctx, r)),
  }),
});

export const leadsGet = defineTool({
  name: 'leads_get',
  title: 'Read a lead',
  description: 'One lead with its owner and open follow-up tasks. Contact values only for admin-scope tokens. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ id: leadId }),
  output: leadView,
  handler: async (ctx, input) => view(ctx, await ownLead(ctx, input.id)),
});

export const leadsSetStatus = defineTool({
  name: 'leads_set_status',
  title: 'Set the status of a lead',
  description: `Moves a lead in the pipeline. Allowed moves: ${TRANSITIONS_TEXT}. A lead with no contact value cannot become working, qualified or won (it is unworkable). Scope: write.`,
  area,
  scope: 'write',
  flags: { changesData: true, idempotent: true },
  input: z.object({ id: leadId, status: z.enum(LEAD_STATUSES).describe('The new status.') }),
  output: leadView,
  handler: async (ctx, input) => {
    const site = ctx.grant.siteId;
    await ctx.store.write(async (tx) => {
      const lead = await tx.leads.get(site, input.id);
      if (!lead) throw new AppError('not_found', `no lead ${input.id}`, { field: 'id' });
      const check = checkTransition(lead.status, input.status, lead.workable === 1);
      if (!check.ok) throw new AppError('conflict', check.reason, { field: 'status', from: lead.status, to: input.status });
      if (lead.status !== input.status) await tx.leads.setStatus(site, lead.id, input.status, Date.now());
    });
    return view(ctx, await ownLead(ctx, input.id));
  },
});

export const leadsAssignOwner = defineTool({
  name: 'leads_assign_owner',
  title: 'Assign a lead to an owner',
  description: "Makes an account user (by id or email) the owner of a lead, or clears the owner with null. Scope: write.",
  area,
  scope: 'write',
  flags: { changesData: true, idempotent: true },
  input: z.object({
    id: leadId,
    owner: z.string().min(1).max(320).nullable().describe("The account user's id (usr_...) or email; null clears the owner."),
  }),
  output: leadView,
  handler: async (ctx, input) => {
    const site = ctx.grant.siteId;
    await ctx.store.write(async (tx) => {
      const lead = await tx.leads.get(site, input.id);
      if (!lead) throw new AppError('not_found', `no lead ${input.id}`, { field: 'id' });
      let owner: string | null = null;
      if (input.owner !== null) {
        const s = await tx.sites.get(site);
        const user = s ? await tx.users.find(s.account_id, input.owner) : undefined;
        if (!user) throw new AppError('not_found', 'owner: no user of this account matches', { field: 'owner' });
        owner = user.id;
      }
      await tx.leads.setOwner(site, lead.id, owner);
    });
    return view(ctx, await ownLead(ctx, input.id));
  },
});

export const leadsAddNote = defineTool({
  name: 'leads_add_note',
  title: 'Add a note to a lead',
  description: 'Adds a free-text note to a lead (who wrote it is recorded). Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true },
  input: z.object({ id: leadId, body: z.string().trim().min(1).max(10_000).describe('The note.') }),
  output: noteView,
  handler: async (ctx, input) => {
    const site = ctx.grant.siteId;
    const note: LeadNoteRow = { id: newId('note'), site_id: site, lead_id: input.id, body: input.body, author: actor(ctx), created_at: Date.now() };
    await ctx.store.write(async (tx) => {
      if (!(await tx.leads.get(site, input.id))) throw new AppError('not_found', `no lead ${input.id}`, { field: 'id' });
      await tx.leads.addNote(note);
    });
    return noteOf(note);
  },
});

export const leadsNotes = defineTool({
  name: 'leads_notes',
  title: 'Notes of a lead',
  description: 'The notes of a lead, newest first. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ id: leadId, limit: limitInput(500, 50) }),
  output: z.object({ notes: z.array(noteView).describe('The notes.') }),
  handler: async (ctx, input) => {
    await ownLead(ctx, input.id);
    return { notes: (await ctx.store.leads.notes(ctx.grant.siteId, input.id, input.limit)).map(noteOf) };
  },
});

export const leadsTasksList = defineTool({
  name: 'leads_tasks_list',
  title: 'List follow-up tasks',
  description: "Follow-up tasks of the site or of one lead, earliest due first, by state, due date and lead owner; due times also in the site's time zone. Scope: read.",
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({
    lead_id: leadId.optional().describe('Only tasks of this lead.'),
    state: z.enum(['open', 'done']).optional().describe('open or done (default: both).'),
    due_before: isoInput.optional().describe('Only tasks due before this time (ISO 8601).'),
    owner_id: z.string().min(1).max(128).optional().describe("Only tasks of leads owned by this account user id."),
    limit: limitInput(500, 100),
  }),
  output: z.object({ tasks: z.array(taskView).describe('The tasks.'), timezone: z.string().describe("The site's time zone.") }),
  handler: async (ctx, input) => {
    const tz = await siteTz(ctx);
    const rows = await ctx.store.leads.tasks({
      siteId: ctx.grant.siteId,
      leadId: input.lead_id,
      state: input.state,
      dueBefore: ms(input.due_before),
      owner: input.owner_id,
      limit: input.limit,
    });
    return { tasks: rows.map((t) => taskOf(t, tz)), timezone: tz };
  },
});

export const leadsTaskCreate = defineTool({
  name: 'leads_task_create',
  title: 'Create a follow-up task',
  description: 'Adds an open follow-up task with a due date to a lead. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true },
  input: z.object({
    id: leadId,
    title: z.string().trim().min(1).max(500).describe('What to do, e.g. "Send the offer".'),
    due_at: isoInput.describe('When it is due (ISO 8601 with offset).'),
  }),
  output: taskView,
  handler: async (ctx, input) => {
    const site = ctx.grant.siteId;
    const id = newId('task');
    await ctx.store.write(async (tx) => {
      if (!(await tx.leads.get(site, input.id))) throw new AppError('not_found', `no lead ${input.id}`, { field: 'id' });
      await tx.leads.addTask({ id, site_id: site, lead_id: input.id, title: input.title, due_at: Date.parse(input.due_at), call_id: null, created_by: actor(ctx), created_at: Date.now() });
    });
    return taskOf((await ctx.store.leads.task(site, id))!, await siteTz(ctx));
  },
});

export const leadsTaskComplete = defineTool({
  name: 'leads_task_complete',
  title: 'Complete a follow-up task',
  description: 'Marks an open follow-up task done. Completing a done task again changes nothing. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true, idempotent: true },
  input: z.object({ task_id: z.string().min(1).max(128).describe('Task id (task_...).') }),
  output: taskView,
  handler: async (ctx, input) => {
    const site = ctx.grant.siteId;
    await ctx.store.write(async (tx) => {
      const t = await tx.leads.task(site, input.task_id);
      if (!t) throw new AppError('not_found', `no task ${input.task_id}`, { field: 'task_id' });
      if (t.state === 'open') await tx.leads.completeTask(site, t.id, actor(ctx), Date.now());
    });
    return taskOf((await ctx.store.leads.task(site, input.task_id))!, await siteTz(ctx));
  },
});

const appointmentView = z.object({
  lead_id: z.string().describe('The lead.'),
  profile_id: z.string().describe('Its profile.'),
  status: z.string().describe('Its pipeline status.'),
  owner_id: z.string().nullable().describe('Its owner.'),
  appointment_slot: z.string().describe('The booked slot as captured (ISO 8601).'),
  at: z.string().describe('The slot as an instant, ISO 8601 UTC.'),
  local: z.string().describe("The slot in the site's time zone, ISO 8601 with offset."),
  upcoming: z.boolean().describe('Whether the slot is still ahead.'),
});

export const leadsAppointments = defineTool({
  name: 'leads_appointments',
  title: 'Booked appointments',
  description:
    "The booked appointment slots of leads (the appointment_slot captured with the lead, as shown on the Leads page): upcoming ones first, soonest first, then past ones most recent first; each shown in the site's time zone. Scope: read.",
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({
    include_past: z.boolean().default(false).describe('Also list slots that have passed (after the upcoming ones).'),
    limit: limitInput(500, 50),
  }),
  output: z.object({ appointments: z.array(appointmentView).describe('The appointments.'), timezone: z.string().describe("The site's time zone.") }),
  handler: async (ctx, input) => {
    const tz = await siteTz(ctx);
    const now = Date.now();
    const rows = (await ctx.store.leads.withAppointments(ctx.grant.siteId, 10_000))
      .map((r) => ({ r, at: Date.parse(r.appointment_slot!) }))
      .filter((x) => Number.isFinite(x.at) && (input.include_past || x.at >= now));
    const upcoming = rows.filter((x) => x.at >= now).sort((a, b) => a.at - b.at);
    const past = rows.filter((x) => x.at < now).sort((a, b) => b.at - a.at);
    return {
      timezone: tz,
      appointments: [...upcoming, ...past].slice(0, input.limit).map(({ r, at }) => ({
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
  },
});

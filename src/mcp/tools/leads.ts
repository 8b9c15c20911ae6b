import { z } from 'zod';
import { LEAD_STATUSES, LEAD_TRANSITIONS } from '../../domain/leads/pipeline.js';
import {
  addLeadNote,
  appointments,
  assignLeadOwner,
  completeTask,
  createTask,
  getLead,
  leadNotes,
  listLeads,
  listTasks,
  setLeadStatus,
} from '../../domain/leads/service.js';
import { appointmentListSchema, LEAD_KINDS, leadViewSchema, noteViewSchema, TASK_STATES, taskListSchema, taskViewSchema } from '../../domain/leads/views.js';
import { defineTool, type ToolContext } from '../tool.js';
import { isoInput, limitInput, ms } from './shared.js';

const area = 'leads';

export { LEAD_STATUSES };

const TRANSITIONS_TEXT = LEAD_STATUSES.map((s) => `${s} → ${LEAD_TRANSITIONS[s].length > 0 ? LEAD_TRANSITIONS[s].join('/') : '(final)'}`).join('; ');

const leadId = z.string().min(1).max(128).describe('Lead id.');
const actor = (ctx: ToolContext) => `token:${ctx.grant.tokenId}`;

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
    kind: z.enum(LEAD_KINDS).optional().describe('Only lead forms or only opt-ins.'),
    owner_id: z.string().min(1).max(128).optional().describe('Only leads owned by this account user id.'),
    unowned: z.boolean().optional().describe('true: only leads without an owner.'),
    has_open_task: z.boolean().optional().describe('true: only leads with an open follow-up task; false: only leads without one.'),
    due_before: isoInput.optional().describe('Only leads with an open task due before this time (ISO 8601), e.g. overdue ones.'),
    since: isoInput.optional().describe('Captured at or after this time.'),
    until: isoInput.optional().describe('Captured before this time.'),
    limit: limitInput(500, 50),
  }),
  output: z.object({ leads: z.array(leadViewSchema).describe('The leads.') }),
  handler: async (ctx, input) => ({
    leads: await listLeads(
      ctx.store,
      ctx.grant.siteId,
      {
        status: input.status,
        kind: input.kind,
        owner: input.owner_id,
        unowned: input.unowned,
        hasOpenTask: input.has_open_task,
        dueBefore: ms(input.due_before),
        since: ms(input.since),
        until: ms(input.until),
        limit: input.limit,
      },
      ctx.pii,
    ),
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
  output: leadViewSchema,
  handler: (ctx, input) => getLead(ctx.store, ctx.grant.siteId, input.id, ctx.pii),
});

export const leadsSetStatus = defineTool({
  name: 'leads_set_status',
  title: 'Set the status of a lead',
  description: `Moves a lead in the pipeline. Allowed moves: ${TRANSITIONS_TEXT}. A lead with no contact value cannot become working, qualified or won (it is unworkable). Scope: write.`,
  area,
  scope: 'write',
  flags: { changesData: true, idempotent: true },
  input: z.object({ id: leadId, status: z.enum(LEAD_STATUSES).describe('The new status.') }),
  output: leadViewSchema,
  handler: (ctx, input) => setLeadStatus(ctx.store, ctx.grant.siteId, input.id, input.status, ctx.pii),
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
  output: leadViewSchema,
  handler: (ctx, input) => assignLeadOwner(ctx.store, ctx.grant.siteId, input.id, input.owner, ctx.pii),
});

export const leadsAddNote = defineTool({
  name: 'leads_add_note',
  title: 'Add a note to a lead',
  description: 'Adds a free-text note to a lead (who wrote it is recorded). Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true },
  input: z.object({ id: leadId, body: z.string().trim().min(1).max(10_000).describe('The note.') }),
  output: noteViewSchema,
  handler: (ctx, input) => addLeadNote(ctx.store, ctx.grant.siteId, actor(ctx), input.id, input.body),
});

export const leadsNotes = defineTool({
  name: 'leads_notes',
  title: 'Notes of a lead',
  description: 'The notes of a lead, newest first. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ id: leadId, limit: limitInput(500, 50) }),
  output: z.object({ notes: z.array(noteViewSchema).describe('The notes.') }),
  handler: async (ctx, input) => ({ notes: await leadNotes(ctx.store, ctx.grant.siteId, input.id, input.limit) }),
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
    state: z.enum(TASK_STATES).optional().describe('open or done (default: both).'),
    due_before: isoInput.optional().describe('Only tasks due before this time (ISO 8601).'),
    owner_id: z.string().min(1).max(128).optional().describe("Only tasks of leads owned by this account user id."),
    limit: limitInput(500, 100),
  }),
  output: taskListSchema,
  handler: (ctx, input) =>
    listTasks(ctx.store, ctx.grant.siteId, { leadId: input.lead_id, state: input.state, dueBefore: ms(input.due_before), owner: input.owner_id, limit: input.limit }),
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
  output: taskViewSchema,
  handler: (ctx, input) => createTask(ctx.store, ctx.grant.siteId, actor(ctx), input.id, { title: input.title, dueAt: Date.parse(input.due_at) }),
});

export const leadsTaskComplete = defineTool({
  name: 'leads_task_complete',
  title: 'Complete a follow-up task',
  description: 'Marks an open follow-up task done. Completing a done task again changes nothing. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true, idempotent: true },
  input: z.object({ task_id: z.string().min(1).max(128).describe('Task id (task_...).') }),
  output: taskViewSchema,
  handler: (ctx, input) => completeTask(ctx.store, ctx.grant.siteId, actor(ctx), input.task_id),
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
  output: appointmentListSchema,
  handler: (ctx, input) => appointments(ctx.store, ctx.grant.siteId, { includePast: input.include_past, limit: input.limit }),
});

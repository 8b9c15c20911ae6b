import { z } from 'zod';
import { AppError } from '../../http/errors.js';
import type { LeadRow } from '../../store/insights.js';
import { defineTool, type ToolContext } from '../tool.js';
import { iso, isoInput, limitInput, ms } from './shared.js';

const area = 'leads';

export const LEAD_STATUSES = ['new', 'contacted', 'qualified', 'won', 'lost', 'unworkable'] as const;

const leadView = z.object({
  id: z.string(),
  profile_id: z.string(),
  form_id: z.string(),
  kind: z.enum(['lead_form', 'optin']),
  status: z.string(),
  workable: z.boolean().describe('Whether the lead has a contact value.'),
  source: z.string().nullable(),
  appointment_slot: z.string().nullable(),
  created_at: z.string(),
  has_email: z.boolean(),
  has_phone: z.boolean(),
  has_name: z.boolean(),
  email: z.string().nullable().optional().describe('Plaintext; admin scope only.'),
  phone: z.string().nullable().optional().describe('Plaintext; admin scope only.'),
  name: z.string().nullable().optional().describe('Plaintext; admin scope only.'),
});

function view(ctx: ToolContext, r: LeadRow): z.input<typeof leadView> {
  const v: z.input<typeof leadView> = {
    id: r.id,
    profile_id: r.profile_id,
    form_id: r.form_id,
    kind: r.kind,
    status: r.status,
    workable: r.workable === 1,
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

const leadId = z.string().min(1).max(128).describe('Lead id.');

export const leadsList = defineTool({
  name: 'leads_list',
  title: 'List leads',
  description: 'Leads of the site, newest first, filtered by status, kind and time. Contact values only for admin-scope tokens.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({
    status: z.string().min(1).max(40).optional().describe(`Only this status (${LEAD_STATUSES.join(', ')}).`),
    kind: z.enum(['lead_form', 'optin']).optional(),
    since: isoInput.optional(),
    until: isoInput.optional(),
    limit: limitInput(500, 50),
  }),
  output: z.object({ leads: z.array(leadView) }),
  handler: async (ctx, input) => ({
    leads: (
      await ctx.store.insights.leads({ siteId: ctx.grant.siteId, status: input.status, kind: input.kind, since: ms(input.since), until: ms(input.until), limit: input.limit })
    ).map((r) => view(ctx, r)),
  }),
});

export const leadsGet = defineTool({
  name: 'leads_get',
  title: 'Read a lead',
  description: 'One lead. Contact values only for admin-scope tokens.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ id: leadId }),
  output: leadView,
  handler: async (ctx, input) => {
    const r = await ctx.store.insights.lead(ctx.grant.siteId, input.id);
    if (!r) throw new AppError('not_found', `no lead ${input.id}`, { field: 'id' });
    return view(ctx, r);
  },
});

export const leadsSetStatus = defineTool({
  name: 'leads_set_status',
  title: 'Set the status of a lead',
  description: `Moves a lead in the pipeline: ${LEAD_STATUSES.join(', ')}.`,
  area,
  scope: 'write',
  flags: { changesData: true, idempotent: true },
  input: z.object({ id: leadId, status: z.enum(LEAD_STATUSES) }),
  output: leadView,
  handler: async (ctx, input) => {
    const site = ctx.grant.siteId;
    const changed = await ctx.store.write((tx) => tx.insights.setLeadStatus(site, input.id, input.status));
    if (!changed) throw new AppError('not_found', `no lead ${input.id}`, { field: 'id' });
    return view(ctx, (await ctx.store.insights.lead(site, input.id))!);
  },
});

import { z } from 'zod';
import { stepsInput } from '../../domain/funnels/schema.js';
import { createFunnel, deleteFunnel, getFunnel, listFunnels, reportFunnel, updateFunnel } from '../../domain/funnels/service.js';
import { funnelReportSchema, funnelViewSchema } from '../../domain/funnels/views.js';
import { defineTool } from '../tool.js';
import { isoInput, ms } from './shared.js';

const area = 'funnels';

const funnelId = z.string().min(1).max(128).describe('Funnel id (fnl_...).');
const name = z.string().trim().min(1).max(200).describe('Name of the funnel, unique in the site.');

export const funnelsList = defineTool({
  name: 'funnels_list',
  title: 'List funnels',
  description: 'Every funnel of the site with its ordered steps (page patterns or event types), by name. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({}),
  output: z.object({ funnels: z.array(funnelViewSchema).describe('The funnels.') }),
  handler: async (ctx) => ({ funnels: await listFunnels(ctx.store, ctx.grant.siteId) }),
});

export const funnelsGet = defineTool({
  name: 'funnels_get',
  title: 'Read a funnel',
  description: 'One funnel with its ordered steps. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ id: funnelId }),
  output: funnelViewSchema,
  handler: (ctx, input) => getFunnel(ctx.store, ctx.grant.siteId, input.id),
});

export const funnelsCreate = defineTool({
  name: 'funnels_create',
  title: 'Create a funnel',
  description:
    'Creates a funnel: a name and 2 to 10 ordered steps, each a page pattern (exact, prefix or glob over the pageview URL path) or an event type. A session passes step k when it did steps 1..k in that order within the session. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true },
  input: z.object({ name, steps: stepsInput }),
  output: funnelViewSchema,
  handler: (ctx, input) => createFunnel(ctx.store, ctx.grant.siteId, input),
});

export const funnelsUpdate = defineTool({
  name: 'funnels_update',
  title: 'Change a funnel',
  description: 'Renames a funnel or replaces its steps. Findings already filed keep the step positions they were filed for. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true, idempotent: true },
  input: z.object({ id: funnelId, name: name.optional(), steps: stepsInput.optional() }),
  output: funnelViewSchema,
  handler: (ctx, input) => updateFunnel(ctx.store, ctx.grant.siteId, input.id, input),
});

export const funnelsDelete = defineTool({
  name: 'funnels_delete',
  title: 'Delete a funnel',
  description: 'Deletes a funnel. Findings and inbox items filed for it stay as history. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true, destructive: true },
  input: z.object({ id: funnelId }),
  output: z.object({ removed: z.string().describe('Id of the deleted funnel.') }),
  handler: (ctx, input) => deleteFunnel(ctx.store, ctx.grant.siteId, input.id),
});

export const analyticsFunnel = defineTool({
  name: 'analytics_funnel',
  title: 'Funnel report',
  description:
    'A funnel over the sessions that started in a window (default the last 28 days): per step the sessions that did steps 1..k in order within the session, the overall rate (k / step 1) and the step-to-step rate (k / k-1); optionally only for a cohort (high_intent, or segment:<segment id>). Scope: read.',
  area: 'analytics',
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({
    funnel_id: funnelId,
    from: isoInput.optional().describe('Start of the window (sessions that started at or after), ISO 8601; default 28 days before `to`.'),
    to: isoInput.optional().describe('End of the window (exclusive), ISO 8601; default now.'),
    cohort: z.string().min(1).max(200).optional().describe('Only sessions of this cohort: high_intent (highest session score >= 70) or segment:<segment id> (the profile is a member now).'),
  }),
  output: funnelReportSchema,
  handler: (ctx, input) => reportFunnel(ctx.store, ctx.grant.siteId, { funnelId: input.funnel_id, from: ms(input.from), to: ms(input.to), cohort: input.cohort }),
});

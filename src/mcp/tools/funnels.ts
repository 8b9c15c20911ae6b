import { z } from 'zod';
import { AppError } from '../../errors/app-error.js';
import { funnelStepView, stepsInput, stepView } from '../../domain/funnels/schema.js';
import { createFunnel, deleteFunnel, funnelReport, requireFunnel, resolveCohort, updateFunnel, type Funnel } from '../../domain/funnels/service.js';
import { defineTool } from '../tool.js';
import { iso, isoInput } from './shared.js';

const area = 'funnels';

const funnelView = z.object({
  id: z.string().describe('Funnel id (fnl_...).'),
  name: z.string().describe('Name, unique in the site.'),
  steps: z.array(funnelStepView).describe('The ordered steps.'),
  created_at: z.string().describe('ISO 8601.'),
  updated_at: z.string().describe('ISO 8601.'),
});

const view = (f: Funnel): z.input<typeof funnelView> => ({
  id: f.id,
  name: f.name,
  steps: f.steps.map(stepView),
  created_at: iso(f.createdAt)!,
  updated_at: iso(f.updatedAt)!,
});

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
  output: z.object({ funnels: z.array(funnelView).describe('The funnels.') }),
  handler: async (ctx) => {
    const rows = await ctx.store.stall.funnels(ctx.grant.siteId);
    return { funnels: rows.map((r) => view({ id: r.id, siteId: r.site_id, name: r.name, steps: JSON.parse(r.steps) as Funnel['steps'], createdAt: r.created_at, updatedAt: r.updated_at })) };
  },
});

export const funnelsGet = defineTool({
  name: 'funnels_get',
  title: 'Read a funnel',
  description: 'One funnel with its ordered steps. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ id: funnelId }),
  output: funnelView,
  handler: async (ctx, input) => view(await requireFunnel(ctx.store, ctx.grant.siteId, input.id)),
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
  output: funnelView,
  handler: async (ctx, input) => view(await ctx.store.write((tx) => createFunnel(tx, ctx.grant.siteId, input))),
});

export const funnelsUpdate = defineTool({
  name: 'funnels_update',
  title: 'Change a funnel',
  description: 'Renames a funnel or replaces its steps. Findings already filed keep the step positions they were filed for. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true, idempotent: true },
  input: z.object({ id: funnelId, name: name.optional(), steps: stepsInput.optional() }),
  output: funnelView,
  handler: async (ctx, input) => {
    if (input.name === undefined && input.steps === undefined) throw new AppError('validation_failed', 'give name or steps (or both) to change', { field: 'name' });
    return view(await ctx.store.write((tx) => updateFunnel(tx, ctx.grant.siteId, input.id, input)));
  },
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
  handler: async (ctx, input) => {
    await ctx.store.write((tx) => deleteFunnel(tx, ctx.grant.siteId, input.id));
    return { removed: input.id };
  },
});

const DAY = 86_400_000;

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
  output: z.object({
    funnel_id: z.string().describe('The funnel.'),
    from: z.string().describe('Window start, ISO 8601.'),
    to: z.string().describe('Window end (exclusive), ISO 8601.'),
    cohort: z.string().nullable().describe('The cohort key; null for all sessions.'),
    sessions_scanned: z.number().int().describe('Sessions of the site that started in the window.'),
    steps: z
      .array(
        z.object({
          position: z.number().int().describe('1-based position.'),
          key: z.string().describe('Machine name of the step.'),
          label: z.string().describe('Display label.'),
          sessions: z.number().int().describe('Sessions that did steps 1..k in order.'),
          overall_rate: z.number().nullable().describe('sessions / sessions of step 1; null when step 1 has none.'),
          step_rate: z.number().nullable().describe('sessions / sessions of step k-1 (1 for step 1); null when the previous step has none.'),
        }),
      )
      .describe('Per step, in order.'),
  }),
  handler: async (ctx, input) => {
    const f = await requireFunnel(ctx.store, ctx.grant.siteId, input.funnel_id);
    const to = input.to !== undefined ? Date.parse(input.to) : Date.now();
    const from = input.from !== undefined ? Date.parse(input.from) : to - 28 * DAY;
    if (!(from < to)) throw new AppError('validation_failed', 'from must be before to', { field: 'from' });
    if (to - from > 366 * DAY) throw new AppError('validation_failed', 'the window is at most 366 days', { field: 'from' });
    const cohort = input.cohort === undefined ? null : resolveCohort(input.cohort, await ctx.store.segments.list(ctx.grant.siteId));
    const r = await funnelReport(ctx.store, f, from, to, cohort);
    return { funnel_id: f.id, from: iso(from)!, to: iso(to)!, cohort: cohort?.key ?? null, sessions_scanned: r.sessions_scanned, steps: r.steps };
  },
});

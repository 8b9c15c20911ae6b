import { z } from 'zod';
import { filedDraft } from '../../domain/drafts/schema.js';
import { SegmentCatalog } from '../../domain/segments/catalog.js';
import { segmentView } from '../../domain/segments/views.js';
import { defineTool, type ToolContext } from '../tool.js';
import { checkedRule, limitInput, ruleInput } from './shared.js';

const area = 'segments';

/** A segment change's result: the segment, and the draft when the change was filed for approval. */
const segmentChange = segmentView.extend({ draft: filedDraft });

const segmentId = z.string().min(1).max(128).describe('Segment id (seg_...).');
const actor = (ctx: ToolContext) => `token:${ctx.grant.tokenId}`;

const catalog = (ctx: ToolContext) => new SegmentCatalog(ctx.store, ctx.segments);

export const segmentsList = defineTool({
  name: 'segments_list',
  title: 'List segments',
  description: 'Every segment of the site with its rule, priority and member count, highest priority first.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({}),
  output: z.object({ segments: z.array(segmentView) }),
  handler: async (ctx) => ({ segments: await catalog(ctx).list(ctx.grant.siteId) }),
});

export const segmentsGet = defineTool({
  name: 'segments_get',
  title: 'Read a segment',
  description: 'One segment with its rule, priority and member count.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ id: segmentId }),
  output: segmentView,
  handler: (ctx, input) => catalog(ctx).get(ctx.grant.siteId, input.id),
});

export const segmentsPreview = defineTool({
  name: 'segments_preview',
  title: 'Preview a rule',
  description: 'How many profiles a rule matches right now, without creating a segment.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ rule: ruleInput }),
  output: z.object({ matches: z.number().int(), evaluated_at: z.string() }),
  handler: async (ctx, input) => {
    checkedRule(ctx, input.rule);
    return catalog(ctx).preview(ctx.grant.siteId, input.rule);
  },
});

export const segmentsMembers = defineTool({
  name: 'segments_members',
  title: 'Members of a segment',
  description: 'Profile ids of a segment in ascending id order; page with `after`.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ id: segmentId, limit: limitInput(1000, 100), after: z.string().min(1).max(128).optional().describe('next_after of the previous page.') }),
  output: z.object({ segment_id: z.string(), profile_ids: z.array(z.string()), next_after: z.string().nullable() }),
  handler: (ctx, input) => catalog(ctx).members(ctx.grant.siteId, input.id, input.after, input.limit),
});

export const segmentsCreate = defineTool({
  name: 'segments_create',
  title: 'Create a segment',
  description:
    'Creates a segment from a name, a rule and a priority, and computes its members at once. For a propose-only token the segment is created as a draft (status draft: no members, no webhooks, invisible to decisions and the profile REST API) with an inbox item; a person approves it (inbox_approve), which makes it live as if created then.',
  area,
  scope: 'write',
  flags: { changesData: true, changesExposure: true },
  input: z.object({
    name: z.string().min(1).max(200).describe('Unique in the site.'),
    rule: ruleInput,
    priority: z.number().int().min(-1_000_000).max(1_000_000).default(0).describe('Higher wins as primary segment.'),
  }),
  output: segmentChange,
  handler: async (ctx, input) => {
    checkedRule(ctx, input.rule);
    return catalog(ctx).create(ctx.grant.siteId, actor(ctx), input, { propose: ctx.drafts === true });
  },
});

export const segmentsUpdate = defineTool({
  name: 'segments_update',
  title: 'Change a segment',
  description:
    'Changes the name, rule or priority of a segment and recomputes the memberships it affects. A draft segment is changed in place (it stays a draft, and its pending draft shows the change). For a propose-only token a change of a live segment is filed as a draft and the segment keeps its rule until approved.',
  area,
  scope: 'write',
  flags: { changesData: true, idempotent: true, changesExposure: true },
  input: z.object({
    id: segmentId,
    name: z.string().min(1).max(200).optional(),
    rule: ruleInput.optional(),
    priority: z.number().int().min(-1_000_000).max(1_000_000).optional(),
  }),
  output: segmentChange,
  handler: async (ctx, input) => {
    if (input.rule !== undefined) checkedRule(ctx, input.rule);
    const { id, ...patch } = input;
    return catalog(ctx).update(ctx.grant.siteId, actor(ctx), id, patch, { propose: ctx.drafts === true });
  },
});

export const segmentsDelete = defineTool({
  name: 'segments_delete',
  title: 'Delete a segment',
  description: 'Deletes a segment (refused while another segment uses it) and recomputes its former members.',
  area,
  scope: 'admin',
  flags: { changesData: true, destructive: true, idempotent: true },
  input: z.object({ id: segmentId }),
  output: z.object({ removed: z.string(), members: z.number().int() }),
  handler: (ctx, input) => catalog(ctx).remove(ctx.grant.siteId, input.id),
});

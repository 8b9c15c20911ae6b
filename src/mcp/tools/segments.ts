import { z } from 'zod';
import { filedDraft } from '../../domain/drafts/schema.js';
import { proposeSegmentCreate, proposeSegmentUpdate } from '../../domain/drafts/service.js';
import type { Store } from '../../store/store.js';
import type { SegmentRow } from '../../store/segments.js';
import { defineTool, type ToolContext } from '../tool.js';
import { checkedRule, iso, limitInput, ruleInput } from './shared.js';

const area = 'segments';

const segmentView = z.object({
  id: z.string(),
  name: z.string(),
  priority: z.number().int(),
  rule: z.unknown(),
  status: z.enum(['draft', 'live']).describe('draft: proposed under propose-only and awaiting approval (no members, evaluated nowhere); live: evaluated.'),
  members: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
});

/** A segment change's result: the segment, and the draft when the change was filed for approval. */
const segmentChange = segmentView.extend({ draft: filedDraft });

async function view(store: Store, row: SegmentRow): Promise<z.input<typeof segmentView>> {
  return {
    id: row.id,
    name: row.name,
    priority: row.priority,
    rule: JSON.parse(row.rule) as unknown,
    status: row.status,
    members: await store.segments.memberCount(row.id),
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  };
}

const segmentId = z.string().min(1).max(128).describe('Segment id (seg_...).');
const actor = (ctx: ToolContext) => `token:${ctx.grant.tokenId}`;

function own(ctx: ToolContext, id: string): Promise<SegmentRow> {
  return ctx.segments.require(ctx.grant.siteId, id);
}

export const segmentsList = defineTool({
  name: 'segments_list',
  title: 'List segments',
  description: 'Every segment of the site with its rule, priority and member count, highest priority first.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({}),
  output: z.object({ segments: z.array(segmentView) }),
  handler: async (ctx) => {
    const rows = await ctx.store.segments.list(ctx.grant.siteId);
    return { segments: await Promise.all(rows.map((r) => view(ctx.store, r))) };
  },
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
  handler: async (ctx, input) => view(ctx.store, await own(ctx, input.id)),
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
    return { matches: await ctx.segments.preview(ctx.grant.siteId, input.rule), evaluated_at: iso(Date.now())! };
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
  handler: async (ctx, input) => {
    const seg = await own(ctx, input.id);
    const ids = await ctx.store.segments.members(seg.id, input.after ?? '', input.limit + 1);
    const page = ids.slice(0, input.limit);
    return { segment_id: seg.id, profile_ids: page, next_after: ids.length > input.limit ? page[page.length - 1]! : null };
  },
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
    if (ctx.drafts) {
      const r = await proposeSegmentCreate(ctx, ctx.grant.siteId, actor(ctx), input);
      return { ...(await view(ctx.store, r.segment)), draft: r.draft };
    }
    const row = await ctx.store.write((tx) => ctx.segments.create(tx, ctx.grant.siteId, input));
    return view(ctx.store, row);
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
    const seg = await own(ctx, input.id);
    const { id, ...patch } = input;
    // A draft segment's pending draft follows every edit, whoever makes it, so approval applies what the reviewer reads.
    if (ctx.drafts || seg.status === 'draft') {
      const r = await proposeSegmentUpdate(ctx, ctx.grant.siteId, actor(ctx), id, patch);
      return { ...(await view(ctx.store, r.segment)), draft: r.draft };
    }
    const row = await ctx.store.write((tx) => ctx.segments.update(tx, ctx.grant.siteId, id, patch));
    return view(ctx.store, row);
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
  handler: async (ctx, input) => {
    await own(ctx, input.id);
    return ctx.store.write((tx) => ctx.segments.remove(tx, ctx.grant.siteId, input.id));
  },
});

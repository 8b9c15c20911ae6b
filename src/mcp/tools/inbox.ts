import { z } from 'zod';
import { approveInboxItem, dismissInboxItem, requireInboxItem } from '../../domain/drafts/inbox.js';
import { draftView } from '../../domain/drafts/schema.js';
import type { InboxItemRow, ProposalRow } from '../../store/stall.js';
import { defineTool, type ToolContext } from '../tool.js';
import { iso, limitInput } from './shared.js';
import { findingOut, findingView } from './stall.js';

const area = 'inbox';

const proposalView = z.object({
  id: z.string().describe('Proposal id (prop_...).'),
  name: z.string().describe('Name the draft experiment gets.'),
  page_match_type: z.enum(['exact', 'prefix', 'glob']).nullable().describe('Match type of the page to test on; null when the step has no page.'),
  page_pattern: z.string().nullable().describe('Pattern of the page to test on.'),
  hypothesis: z.string().describe('What the test should show.'),
  primary_metric: z.string().describe('Primary metric of the test.'),
});

const itemView = z.object({
  id: z.string().describe('Inbox item id (inbox_...).'),
  kind: z.string().describe('What filed it: stall (the weekly stall pass: an experiment proposal) or draft (a change proposed by a propose-only token).'),
  title: z.string().describe('One line.'),
  proposed_action: z.string().describe('The proposed action as text.'),
  status: z.enum(['pending', 'approved', 'dismissed']).describe('pending until a human approves or dismisses it.'),
  finding_id: z.string().nullable().describe('The stall finding (stall items).'),
  proposal_id: z.string().nullable().describe('The experiment proposal (stall items).'),
  draft_id: z.string().nullable().describe('The draft (draft items): the change approval applies.'),
  decided_by: z.string().nullable().describe('Who approved or dismissed it (token:<id>).'),
  decided_at: z.string().nullable().describe('When, ISO 8601.'),
  dismiss_reason: z.string().nullable().describe('Why it was dismissed.'),
  experiment_id: z.string().nullable().describe('The draft experiment its approval created (stall items).'),
  created_at: z.string().describe('ISO 8601.'),
});

const itemOut = (r: InboxItemRow): z.input<typeof itemView> => ({
  id: r.id,
  kind: r.kind,
  title: r.title,
  proposed_action: r.proposed_action,
  status: r.status,
  finding_id: r.finding_id,
  proposal_id: r.proposal_id,
  draft_id: r.draft_id,
  decided_by: r.decided_by,
  decided_at: iso(r.decided_at),
  dismiss_reason: r.dismiss_reason,
  experiment_id: r.experiment_id,
  created_at: iso(r.created_at)!,
});

const proposalOut = (p: ProposalRow): z.input<typeof proposalView> => ({
  id: p.id,
  name: p.name,
  page_match_type: p.page_match_type,
  page_pattern: p.page_pattern,
  hypothesis: p.hypothesis,
  primary_metric: p.primary_metric,
});

const itemId = z.string().min(1).max(128).describe('Inbox item id (inbox_...).');
const actor = (ctx: ToolContext) => `token:${ctx.grant.tokenId}`;

export const inboxList = defineTool({
  name: 'inbox_list',
  title: 'List the inbox',
  description:
    'Proposals awaiting a human, newest first: experiment proposals of the stall pass, and drafts of propose-only tokens (segments, placements, zone defaults, layout test starts, overrides). Filter by status (default pending). Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({
    status: z.enum(['pending', 'approved', 'dismissed', 'all']).default('pending').describe('Which items (default pending).'),
    limit: limitInput(500, 100),
  }),
  output: z.object({ items: z.array(itemView).describe('The items.') }),
  handler: async (ctx, input) => {
    const rows = await ctx.store.stall.inbox(ctx.grant.siteId, input.status === 'all' ? undefined : input.status, input.limit);
    return { items: rows.map(itemOut) };
  },
});

export const inboxGet = defineTool({
  name: 'inbox_get',
  title: 'Read an inbox item',
  description: 'One inbox item: for a stall item its finding (the stall statistics) and experiment proposal; for a draft, exactly what approval would apply. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ id: itemId }),
  output: z.object({
    item: itemView.describe('The item.'),
    finding: findingView.nullable().describe('The stall finding it was filed for (stall items).'),
    proposal: proposalView.nullable().describe('The proposed layout test (stall items).'),
    draft: draftView.nullable().describe('The proposed change (draft items).'),
  }),
  handler: async (ctx, input) => {
    const { item, draft } = await requireInboxItem(ctx, ctx.grant.siteId, input.id);
    const [finding, proposal] = await Promise.all([
      item.finding_id === null ? undefined : ctx.store.stall.finding(ctx.grant.siteId, item.finding_id),
      item.proposal_id === null ? undefined : ctx.store.stall.proposal(ctx.grant.siteId, item.proposal_id),
    ]);
    return { item: itemOut(item), finding: finding ? findingOut(finding) : null, proposal: proposal ? proposalOut(proposal) : null, draft };
  },
});

export const inboxApprove = defineTool({
  name: 'inbox_approve',
  title: 'Approve a proposal',
  description:
    'Approves a pending item. A stall proposal: creates the proposed layout test as a DRAFT experiment owned by the caller on the stalled step\'s page (the page row is created if the site has none) with a control arm (weight 1); add a variant arm before starting it. ' +
    'A draft: applies exactly the proposed change as if the caller made it (a draft segment becomes live and gets its members, with segment.changed webhooks; placements, zone defaults, test starts and overrides reach visitors at once); if it no longer applies, nothing changes and it stays pending. ' +
    'Marks the item approved with who and when. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true, approvesOrPublishes: true },
  input: z.object({ id: itemId }),
  output: z.object({
    item: itemView.describe('The approved item.'),
    experiment_id: z.string().nullable().describe('The draft experiment created (stall items; status draft).'),
    page_id: z.string().nullable().describe('The page it is on (stall items).'),
    draft: draftView.nullable().describe('The applied draft with what it did (draft items).'),
  }),
  handler: async (ctx, input) => {
    const r = await approveInboxItem(ctx, ctx.grant.siteId, input.id, actor(ctx));
    return { item: itemOut(r.item), experiment_id: r.experimentId, page_id: r.pageId, draft: r.draft };
  },
});

export const inboxDismiss = defineTool({
  name: 'inbox_dismiss',
  title: 'Dismiss a proposal',
  description:
    'Dismisses a pending item with a reason. A stall proposal: nothing else changes. A draft: rejects it, nothing of it applies (a proposed segment is deleted); refused to propose-only tokens. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true },
  input: z.object({ id: itemId, reason: z.string().trim().min(1).max(1000).describe('Why it is dismissed (kept with the item).') }),
  output: z.object({ item: itemView.describe('The dismissed item.'), draft: draftView.nullable().describe('The rejected draft (draft items).') }),
  handler: async (ctx, input) => {
    const r = await dismissInboxItem(ctx, ctx.grant.siteId, input.id, actor(ctx), input.reason, { proposeOnly: ctx.grant.restrictions.propose_only });
    return { item: itemOut(r.item), draft: r.draft };
  },
});

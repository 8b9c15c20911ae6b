import { z } from 'zod';
import { approveInboxItem, dismissInboxItem, getInboxEntry, listInbox } from '../../domain/drafts/inbox.js';
import { INBOX_STATUSES, inboxApprovalSchema, inboxDismissalSchema, inboxEntrySchema, inboxItemViewSchema } from '../../domain/drafts/views.js';
import { defineTool, type ToolContext } from '../tool.js';
import { limitInput } from './shared.js';

const area = 'inbox';

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
    status: z.enum([...INBOX_STATUSES, 'all']).default('pending').describe('Which items (default pending).'),
    limit: limitInput(500, 100),
  }),
  output: z.object({ items: z.array(inboxItemViewSchema).describe('The items.') }),
  handler: async (ctx, input) => ({ items: await listInbox(ctx.store, ctx.grant.siteId, input.status === 'all' ? undefined : input.status, input.limit) }),
});

export const inboxGet = defineTool({
  name: 'inbox_get',
  title: 'Read an inbox item',
  description: 'One inbox item: for a stall item its finding (the stall statistics) and experiment proposal; for a draft, exactly what approval would apply. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ id: itemId }),
  output: inboxEntrySchema,
  handler: (ctx, input) => getInboxEntry(ctx.store, ctx.grant.siteId, input.id),
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
  output: inboxApprovalSchema,
  handler: (ctx, input) => approveInboxItem(ctx, ctx.grant.siteId, input.id, actor(ctx)),
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
  output: inboxDismissalSchema,
  handler: (ctx, input) => dismissInboxItem(ctx, ctx.grant.siteId, input.id, actor(ctx), input.reason, { proposeOnly: ctx.grant.restrictions.propose_only }),
});

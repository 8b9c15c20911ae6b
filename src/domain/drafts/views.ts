import { z } from 'zod';
import type { InboxItemRow, ProposalRow } from '../../store/stall.js';
import { findingViewSchema } from '../stall/views.js';
import { iso } from '../time.js';
import { draftView } from './schema.js';

export const INBOX_STATUSES = ['pending', 'approved', 'dismissed'] as const;

/** An experiment proposal of the stall pass. */
export const proposalViewSchema = z.object({
  id: z.string().describe('Proposal id (prop_...).'),
  name: z.string().describe('Name the draft experiment gets.'),
  page_match_type: z.enum(['exact', 'prefix', 'glob']).nullable().describe('Match type of the page to test on; null when the step has no page.'),
  page_pattern: z.string().nullable().describe('Pattern of the page to test on.'),
  hypothesis: z.string().describe('What the test should show.'),
  primary_metric: z.string().describe('Primary metric of the test.'),
});
export type ProposalView = z.input<typeof proposalViewSchema>;

/** An inbox item: a stall proposal or a draft awaiting a human. */
export const inboxItemViewSchema = z.object({
  id: z.string().describe('Inbox item id (inbox_...).'),
  kind: z.string().describe('What filed it: stall (the weekly stall pass: an experiment proposal) or draft (a change proposed by a propose-only token).'),
  title: z.string().describe('One line.'),
  proposed_action: z.string().describe('The proposed action as text.'),
  status: z.enum(INBOX_STATUSES).describe('pending until a human approves or dismisses it.'),
  finding_id: z.string().nullable().describe('The stall finding (stall items).'),
  proposal_id: z.string().nullable().describe('The experiment proposal (stall items).'),
  draft_id: z.string().nullable().describe('The draft (draft items): the change approval applies.'),
  decided_by: z.string().nullable().describe('Who approved or dismissed it (token:<id>).'),
  decided_at: z.string().nullable().describe('When, ISO 8601.'),
  dismiss_reason: z.string().nullable().describe('Why it was dismissed.'),
  experiment_id: z.string().nullable().describe('The draft experiment its approval created (stall items).'),
  created_at: z.string().describe('ISO 8601.'),
});
export type InboxItemView = z.input<typeof inboxItemViewSchema>;

export const inboxItemView = (r: InboxItemRow): InboxItemView => ({
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

export const proposalView = (p: ProposalRow): ProposalView => ({
  id: p.id,
  name: p.name,
  page_match_type: p.page_match_type,
  page_pattern: p.page_pattern,
  hypothesis: p.hypothesis,
  primary_metric: p.primary_metric,
});

/** An inbox item with what it was filed for. */
export const inboxEntrySchema = z.object({
  item: inboxItemViewSchema.describe('The item.'),
  finding: findingViewSchema.nullable().describe('The stall finding it was filed for (stall items).'),
  proposal: proposalViewSchema.nullable().describe('The proposed layout test (stall items).'),
  draft: draftView.nullable().describe('The proposed change (draft items).'),
});
export type InboxEntry = z.input<typeof inboxEntrySchema>;

/** What approving an inbox item did. */
export const inboxApprovalSchema = z.object({
  item: inboxItemViewSchema.describe('The approved item.'),
  experiment_id: z.string().nullable().describe('The draft experiment created (stall items; status draft).'),
  page_id: z.string().nullable().describe('The page it is on (stall items).'),
  draft: draftView.nullable().describe('The applied draft with what it did (draft items).'),
});
export type InboxApproval = z.input<typeof inboxApprovalSchema>;

/** What dismissing an inbox item did. */
export const inboxDismissalSchema = z.object({ item: inboxItemViewSchema.describe('The dismissed item.'), draft: draftView.nullable().describe('The rejected draft (draft items).') });
export type InboxDismissal = z.input<typeof inboxDismissalSchema>;

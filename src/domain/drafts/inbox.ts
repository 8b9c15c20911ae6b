import { AppError } from '../../errors/app-error.js';
import type { Store } from '../../store/store.js';
import type { InboxItemRow } from '../../store/stall.js';
import { findingView } from '../stall/views.js';
import { approveItem, dismissItem } from '../stall/inbox.js';
import { decisionService } from '../web/decisions.js';
import { approveDraftIn, rejectDraftIn, requireDraft, type DraftDeps } from './service.js';
import type { DraftView } from './schema.js';
import { inboxItemView, proposalView, type InboxApproval, type InboxDismissal, type InboxEntry, type InboxItemView } from './views.js';

/** What deciding an inbox item did: the item, and per kind the draft experiment created (stall) or the draft decided. */
interface InboxDecision {
  item: InboxItemRow;
  experimentId: string | null;
  pageId: string | null;
  draft: DraftView | null;
}

/** Items of the inbox, newest first, of one status or all. */
export async function listInbox(store: Store, siteId: string, status: InboxItemRow['status'] | undefined, limit: number): Promise<InboxItemView[]> {
  return (await store.stall.inbox(siteId, status, limit)).map(inboxItemView);
}

/** An inbox item of the site with its finding and proposal (stall items) or its draft (draft items); not_found when there is none. */
export async function getInboxEntry(store: Store, siteId: string, id: string): Promise<InboxEntry> {
  const { item, draft } = await requireInboxItem({ store }, siteId, id);
  const [finding, proposal] = await Promise.all([
    item.finding_id === null ? undefined : store.stall.finding(siteId, item.finding_id),
    item.proposal_id === null ? undefined : store.stall.proposal(siteId, item.proposal_id),
  ]);
  return { item: inboxItemView(item), finding: finding ? findingView(finding) : null, proposal: proposal ? proposalView(proposal) : null, draft };
}

/** An inbox item of the site, or not_found. */
async function requireInboxItem(deps: Pick<DraftDeps, 'store'>, siteId: string, id: string): Promise<{ item: InboxItemRow; draft: DraftView | null }> {
  const item = await deps.store.stall.inboxItem(siteId, id);
  if (!item) throw new AppError('not_found', `no inbox item ${JSON.stringify(id)} in this site`, { field: 'id' });
  return { item, draft: item.draft_id === null ? null : (await requireDraft(deps.store, siteId, item.draft_id)).view };
}

/**
 * Approves an inbox item in one write operation: a stall proposal becomes a
 * draft experiment (approveItem); a draft is applied exactly as proposed
 * (approveDraftIn), after which the site's decisions are rebuilt at once.
 */
export async function approveInboxItem(deps: DraftDeps, siteId: string, id: string, actor: string): Promise<InboxApproval> {
  const out = await deps.store.write(async (tx): Promise<InboxDecision> => {
    const item = await tx.stall.inboxItem(siteId, id);
    if (!item) throw new AppError('not_found', `no inbox item ${JSON.stringify(id)} in this site`, { field: 'id' });
    if (item.kind === 'draft' && item.draft_id !== null) {
      const draft = await approveDraftIn(tx, deps, siteId, item.draft_id, actor);
      return { item: (await tx.stall.inboxItem(siteId, id))!, experimentId: null, pageId: null, draft };
    }
    const r = await approveItem(tx, siteId, id, actor);
    return { item: r.item, experimentId: r.experimentId, pageId: r.pageId, draft: null };
  });
  if (out.draft) decisionService(deps.store).invalidate(siteId);
  return { item: inboxItemView(out.item), experiment_id: out.experimentId, page_id: out.pageId, draft: out.draft };
}

/**
 * Dismisses an inbox item with a reason; for a draft that rejects it (nothing
 * of it applies; a proposed segment is deleted). Deciding on drafts is the
 * reviewer's: a propose-only caller may dismiss stall proposals but not
 * reject drafts.
 */
export async function dismissInboxItem(
  deps: DraftDeps,
  siteId: string,
  id: string,
  actor: string,
  reason: string,
  opts: { proposeOnly: boolean },
): Promise<InboxDismissal> {
  const out = await deps.store.write(async (tx): Promise<{ item: InboxItemRow; draft: DraftView | null }> => {
    const item = await tx.stall.inboxItem(siteId, id);
    if (!item) throw new AppError('not_found', `no inbox item ${JSON.stringify(id)} in this site`, { field: 'id' });
    if (item.kind === 'draft' && item.draft_id !== null) {
      if (opts.proposeOnly) {
        throw new AppError('insufficient_scope', 'rejecting a draft decides on it; a propose-only token may only propose', {
          reason: 'propose_only',
          missing: 'restriction:not propose-only',
          tool: 'inbox_dismiss',
        });
      }
      const draft = await rejectDraftIn(tx, deps, siteId, item.draft_id, actor, reason);
      return { item: (await tx.stall.inboxItem(siteId, id))!, draft };
    }
    return { item: await dismissItem(tx, siteId, id, actor, reason), draft: null };
  });
  return { item: inboxItemView(out.item), draft: out.draft };
}

import { AppError } from '../../errors/app-error.js';
import type { InboxItemRow } from '../../store/stall.js';
import { approveItem, dismissItem } from '../stall/inbox.js';
import { decisionService } from '../web/decisions.js';
import { approveDraftIn, rejectDraftIn, requireDraft, type DraftDeps } from './service.js';
import type { DraftView } from './schema.js';

/** What deciding an inbox item did: the item, and per kind the draft experiment created (stall) or the draft decided. */
export interface InboxDecision {
  item: InboxItemRow;
  experimentId: string | null;
  pageId: string | null;
  draft: DraftView | null;
}

/** An inbox item of the site, or not_found. */
export async function requireInboxItem(deps: Pick<DraftDeps, 'store'>, siteId: string, id: string): Promise<{ item: InboxItemRow; draft: DraftView | null }> {
  const item = await deps.store.stall.inboxItem(siteId, id);
  if (!item) throw new AppError('not_found', `no inbox item ${JSON.stringify(id)} in this site`, { field: 'id' });
  return { item, draft: item.draft_id === null ? null : (await requireDraft(deps.store, siteId, item.draft_id)).view };
}

/**
 * Approves an inbox item in one write operation: a stall proposal becomes a
 * draft experiment (approveItem); a draft is applied exactly as proposed
 * (approveDraftIn), after which the site's decisions are rebuilt at once.
 */
export async function approveInboxItem(deps: DraftDeps, siteId: string, id: string, actor: string): Promise<InboxDecision> {
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
  return out;
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
): Promise<{ item: InboxItemRow; draft: DraftView | null }> {
  return deps.store.write(async (tx) => {
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
}

import { AppError } from '../../errors/app-error.js';
import { newId } from '../../store/ids.js';
import type { Repos } from '../../store/repos.js';
import type { InboxItemRow } from '../../store/stall.js';

async function pendingItem(tx: Repos, siteId: string, id: string): Promise<InboxItemRow> {
  const item = await tx.stall.inboxItem(siteId, id);
  if (!item) throw new AppError('not_found', `no inbox item ${JSON.stringify(id)} in this site`, { field: 'id' });
  if (item.status !== 'pending') {
    throw new AppError('conflict', `inbox item ${id} is already ${item.status}`, { field: 'id', status: item.status });
  }
  return item;
}

/**
 * Approves a proposal (a write operation): creates the proposed layout test as a
 * DRAFT experiment owned by the approver, on the page of the stalled step (the
 * page row of its pattern, created when the site has none), with one control arm
 * (weight 1). A draft cannot start without a variant arm: the team adds one
 * (experiments_update) before experiments_start. Marks the item approved.
 */
export async function approveItem(tx: Repos, siteId: string, id: string, actor: string): Promise<{ item: InboxItemRow; experimentId: string; pageId: string }> {
  const item = await pendingItem(tx, siteId, id);
  if (item.proposal_id === null) throw new AppError('conflict', `inbox item ${id} is not an experiment proposal`, { field: 'id', kind: item.kind });
  const proposal = await tx.stall.proposal(siteId, item.proposal_id);
  if (!proposal) throw new AppError('not_found', `the proposal of inbox item ${id} no longer exists`, { field: 'id' });
  if (proposal.page_match_type === null || proposal.page_pattern === null) {
    throw new AppError('conflict', 'the stalled step has no page (every step up to it is an event), so there is no page to test a layout on; dismiss it instead', {
      field: 'id',
    });
  }
  const now = Date.now();
  const pageId = await tx.stall.ensurePage(siteId, proposal.page_match_type, proposal.page_pattern, newId('page'), now);
  const experimentId = newId('exp');
  await tx.stall.insertDraftExperiment({ id: experimentId, siteId, name: proposal.name, pageId, createdBy: actor, armId: newId('arm'), now });
  if (!(await tx.stall.decide(siteId, id, { status: 'approved', by: actor, at: now, reason: null, experimentId }))) {
    throw new AppError('conflict', `inbox item ${id} was decided concurrently`, { field: 'id' });
  }
  return { item: (await tx.stall.inboxItem(siteId, id))!, experimentId, pageId };
}

/** Dismisses a pending proposal with a reason (a write operation). */
export async function dismissItem(tx: Repos, siteId: string, id: string, actor: string, reason: string): Promise<InboxItemRow> {
  await pendingItem(tx, siteId, id);
  if (!(await tx.stall.decide(siteId, id, { status: 'dismissed', by: actor, at: Date.now(), reason, experimentId: null }))) {
    throw new AppError('conflict', `inbox item ${id} was decided concurrently`, { field: 'id' });
  }
  return (await tx.stall.inboxItem(siteId, id))!;
}

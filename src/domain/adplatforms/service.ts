import { AppError } from '../../errors/app-error.js';
import type { Repos } from '../../store/repos.js';
import type { Store } from '../../store/store.js';
import { AD_PLATFORMS, type AdConnectionRow, type AdJobRow, type AdPlatform } from '../../store/adplatforms.js';
import { prepareConnection, rotateSecrets } from '../../adplatforms/connections.js';
import { adAttemptLog, type AdAttemptView, type AttemptFilter } from '../webhooks/attempts.js';
import { connectionView, jobView, type ConnectionView, type JobView } from './views.js';

export { AD_PLATFORMS, type AdPlatform };

/** Which connections a caller may reach: every one (CLI) or a site's (MCP). */
export interface ConnectionOwner {
  siteId?: string | undefined;
}

async function reachable(r: Repos, id: string, owner: ConnectionOwner): Promise<AdConnectionRow | undefined> {
  const row = await r.adplatforms.connection(id);
  return row && (owner.siteId === undefined || row.site_id === owner.siteId) ? row : undefined;
}

function notFound(id: string): AppError {
  return new AppError('not_found', `no ad-platform connection ${id}`);
}

/** Connects a site to an ad platform: the settings are validated, the credentials sealed. */
export async function addConnection(
  store: Store,
  input: { siteId: string; platform: AdPlatform; name?: string | null | undefined; config: unknown; secrets: unknown },
): Promise<ConnectionView> {
  const prepared = await prepareConnection(store, input);
  return connectionView(await store.write((tx) => tx.adplatforms.create(prepared)));
}

/** The connections of a site (or of every site). */
export async function listConnections(store: Store, siteId?: string): Promise<ConnectionView[]> {
  return (await store.adplatforms.list(siteId)).map(connectionView);
}

/** One connection `owner` may reach, or undefined (each surface answers a miss in its own words). */
export async function findConnection(store: Store, id: string, owner: ConnectionOwner): Promise<ConnectionView | undefined> {
  const row = await reachable(store, id, owner);
  return row ? connectionView(row) : undefined;
}

/**
 * Replaces some credentials of a connection (the others stay) and enables or
 * disables it, in one write.
 */
export async function updateConnection(store: Store, id: string, change: { secrets: Record<string, string>; enabled?: boolean | undefined }): Promise<ConnectionView> {
  const current = await store.adplatforms.connection(id);
  if (!current) throw notFound(id);
  const row = await store.write(async (tx) => {
    if (Object.keys(change.secrets).length > 0) await tx.adplatforms.setSecrets(id, rotateSecrets(store, current, change.secrets));
    if (change.enabled !== undefined) await tx.adplatforms.setEnabled(id, change.enabled);
    return (await tx.adplatforms.connection(id))!;
  });
  return connectionView(row);
}

/** Removes a connection `owner` may reach: its pending jobs fail for good, its history stays. False when there is none. */
export async function removeConnection(store: Store, id: string, owner: ConnectionOwner): Promise<boolean> {
  if (!(await reachable(store, id, owner))) return false;
  await store.write((tx) => tx.adplatforms.remove(id));
  return true;
}

/** The delivery log of the ad-platform connections (filter by site and connection). */
export function connectionLog(store: Store, filter: Omit<AttemptFilter, 'integration'>): Promise<AdAttemptView[]> {
  return adAttemptLog(store, { ...filter, integration: AD_PLATFORMS });
}

/** Conversion jobs and their state, newest first. */
export async function listJobs(
  store: Store,
  filter: { siteId?: string | undefined; connectionId?: string | undefined; state?: AdJobRow['state'] | undefined; limit: number },
): Promise<JobView[]> {
  return (await store.adplatforms.jobs(filter)).map(jobView);
}

/**
 * Queues jobs that failed for good again (one, or every failed job of a
 * connection); they keep their event id, so nothing counts twice. Answers how
 * many were queued.
 */
export async function retryJobs(store: Store, target: { jobId: string } | { connectionId: string }): Promise<number> {
  return store.write(async (tx) => {
    const now = Date.now();
    if ('jobId' in target) {
      const job = await tx.adplatforms.job(target.jobId);
      if (!job) throw new AppError('not_found', `no ad-platform job ${target.jobId}`);
      if (job.state !== 'failed') throw new AppError('conflict', `job ${target.jobId} is ${job.state}, not failed`);
      return (await tx.adplatforms.requeue(target.jobId, now)) ? 1 : 0;
    }
    if (!(await tx.adplatforms.connection(target.connectionId))) throw notFound(target.connectionId);
    return tx.adplatforms.requeueFailed(target.connectionId, now);
  });
}

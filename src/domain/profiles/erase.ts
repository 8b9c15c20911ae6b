import type { Repos } from '../../store/repos.js';
import type { ErasureCounts } from '../../store/privacy.js';
import type { SegmentMembership } from '../segments/membership.js';

/**
 * GDPR erasure of a person (the profile and the profiles merged into it), in
 * the caller's write operation. Their company rows go first; when that leaves
 * a company domain with exactly one known person (or none), the memberships of
 * its remaining profiles are evaluated again (a one-person domain is personal
 * data and never matches the company node).
 */
export async function eraseProfile(tx: Repos, membership: SegmentMembership, siteId: string, profileId: string, now: number): Promise<ErasureCounts> {
  const domains = await membership.companies.forget(tx, siteId, profileId);
  const removed = await tx.privacy.erase(siteId, profileId);
  await membership.cascade(tx, siteId, domains, now);
  return removed;
}

import { AppError } from '../../errors/app-error.js';
import type { Store } from '../../store/store.js';
import type { SegmentMembership } from '../segments/membership.js';
import type { IpRange } from './ip-ranges.js';
import { rebuildCompanies } from './profile-company.js';

/**
 * Replaces a site's IP ranges (parsed by parseRangesCsv) in one write
 * operation, derives the company of every profile again (a session's range
 * may now name another company, or none), and re-evaluates the memberships of
 * the profiles that moved when a live segment tests the company.
 */
export async function loadIpRanges(
  store: Store,
  membership: SegmentMembership,
  siteId: string,
  ranges: readonly IpRange[],
): Promise<{ replaced: number; profiles_reassigned: number }> {
  const out = await store.write(async (tx) => {
    if (!(await tx.sites.get(siteId))) throw new AppError('not_found', `no site ${siteId}`);
    const now = Date.now();
    const replaced = await tx.companies.replaceRanges(siteId, ranges, now);
    const changed = await rebuildCompanies(tx, siteId, now);
    if (await membership.usesCompany(tx, siteId)) for (const p of changed) await membership.evaluate(tx, siteId, p, now);
    return { replaced, profiles_reassigned: changed.length };
  });
  membership.companies.invalidate(siteId);
  return out;
}

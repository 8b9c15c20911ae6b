import type { Store } from '../../store/store.js';
import { profilesMatchingSql } from '../../store/rule-sql.js';
import { ensureCompanyIndex } from '../accounts/profile-company.js';
import { usesCompany, type Rule } from '../segments/rules.js';
import { PII_TRAITS } from './snapshot.js';

/** Names of the traits a rule tests, at any depth. */
function traitsOf(rule: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(rule)) for (const r of rule) traitsOf(r, out);
  else if (rule && typeof rule === 'object') {
    const o = rule as Record<string, unknown>;
    if (typeof o.trait === 'string') out.add(o.trait);
    for (const v of Object.values(o)) if (v && typeof v === 'object') traitsOf(v, out);
  }
  return out;
}

/** The personal-data traits (email, phone, name) a rule tests: reading them needs the right to read them. */
export function piiTraitsOf(rule: unknown): string[] {
  return [...traitsOf(rule)].filter((t) => PII_TRAITS.has(t));
}

/**
 * One keyset page of the profile ids of a site a rule matches at `now`, in
 * ascending id order after `afterId`: up to `limit` ids, and whether more follow.
 * The company node is company-level (one-person domains never match).
 */
export async function profilesMatching(
  store: Store,
  siteId: string,
  rule: Rule,
  page: { now: number; afterId: string; limit: number },
): Promise<{ ids: string[]; more: boolean }> {
  if (usesCompany(rule)) await ensureCompanyIndex(store, siteId);
  const { sql, params } = profilesMatchingSql(rule, { siteId, now: page.now, afterId: page.afterId, limit: page.limit + 1, dialect: store.dialect });
  const ids = (await store.segments.all<{ id: string }>(sql, params)).map((r) => r.id);
  return { ids: ids.slice(0, page.limit), more: ids.length > page.limit };
}

/** A live segment of the site (a draft awaiting approval does not exist for readers of members), or undefined. */
export async function liveSegment(store: Store, siteId: string, segmentId: string): Promise<{ id: string } | undefined> {
  const segment = await store.segments.get(siteId, segmentId);
  return segment && segment.status === 'live' ? { id: segment.id } : undefined;
}

/** One keyset page of a segment's member profile ids after `afterId`, ascending, and whether more follow. */
export async function segmentMembers(store: Store, segmentId: string, page: { afterId: string; limit: number }): Promise<{ ids: string[]; more: boolean }> {
  const ids = await store.segments.members(segmentId, page.afterId, page.limit + 1);
  return { ids: ids.slice(0, page.limit), more: ids.length > page.limit };
}

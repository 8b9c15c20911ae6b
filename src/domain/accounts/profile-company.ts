import type { Repos } from '../../store/repos.js';
import type { Store } from '../../store/store.js';
import type { ProfileCompanyRow } from '../../store/companies.js';
import { companyDomainOfEmail } from './domain.js';
import { IpRangeIndex } from './ip-ranges.js';

/**
 * The company of each profile, as the company rule node tests it (the same key
 * as the accounts_* tools):
 *
 * - email_domain: the registrable domain of the profile's corporate email
 *   address (free mail never counts); with several, the first address in sort
 *   order that has one.
 * - ip_domain: the company of the loaded IP range holding the address of the
 *   profile's most recent session that falls in a range.
 *
 * The company is email_domain, else ip_domain. A domain that exactly one known
 * person of the site has (one profile whose email_domain it is) is personal
 * data: the rule node never matches it (rule-sql.ts, evaluate.ts).
 */

const HOST_CACHE_MAX = 10_000;
const hostDomains = new Map<string, string | null>();

function domainOfEmail(email: string): string | null {
  const host = email.slice(email.lastIndexOf('@') + 1);
  let d = hostDomains.get(host);
  if (d === undefined) {
    d = companyDomainOfEmail(email);
    if (hostDomains.size >= HOST_CACHE_MAX) hostDomains.clear();
    hostDomains.set(host, d);
  }
  return d;
}

/** The company domain of a profile's normalized email addresses: the first in sort order with a corporate domain, or null. */
export function companyOfEmails(emails: readonly string[]): string | null {
  for (const e of [...emails].sort()) {
    if (!e.includes('@')) continue;
    const d = domainOfEmail(e);
    if (d !== null) return d;
  }
  return null;
}

const SESSION_PAGE = 5000;

/** How long a site's loaded IP ranges are cached (ranges loaded by another process are seen after this at the latest). */
const RANGES_TTL_MS = 5_000;

/**
 * Derives every company row of a site from its identities, sessions and IP
 * ranges, writes the differences and records the site as indexed. Returns the
 * profiles whose segment memberships may have changed: those whose company
 * changed, and every profile of a domain whose personal status flipped (its
 * number of known persons moved to or from exactly one). Runs inside the
 * caller's write operation.
 */
export async function rebuildCompanies(tx: Repos, siteId: string, now: number): Promise<string[]> {
  const emails = new Map<string, string[]>();
  for (const e of await tx.companies.emails(siteId)) {
    const list = emails.get(e.profile_id);
    if (list) list.push(e.value);
    else emails.set(e.profile_id, [e.value]);
  }
  const next = new Map<string, ProfileCompanyRow>();
  for (const [profileId, values] of emails) {
    const d = companyOfEmails(values);
    if (d !== null) next.set(profileId, { profile_id: profileId, email_domain: d, ip_domain: null });
  }
  const ranges = await tx.companies.ranges(siteId);
  if (ranges.length > 0) {
    const index = new IpRangeIndex(ranges);
    const best = new Map<string, { first_seen: number; id: string; domain: string }>();
    for (let after = ''; ; ) {
      const page = await tx.companies.sessionAddresses(siteId, after, SESSION_PAGE);
      for (const s of page) {
        const hit = index.lookup(s.ip);
        if (!hit) continue;
        const seen = Number(s.first_seen);
        const b = best.get(s.profile_id);
        if (!b || seen > b.first_seen || (seen === b.first_seen && s.id > b.id)) best.set(s.profile_id, { first_seen: seen, id: s.id, domain: hit.domain });
      }
      if (page.length < SESSION_PAGE) break;
      after = page[page.length - 1]!.id;
    }
    for (const [profileId, b] of best) {
      const row = next.get(profileId);
      if (row) row.ip_domain = b.domain;
      else next.set(profileId, { profile_id: profileId, email_domain: null, ip_domain: b.domain });
    }
  }
  const current = new Map((await tx.companies.companyRows(siteId)).map((r) => [r.profile_id, r]));
  const changes: ProfileCompanyRow[] = [];
  for (const [id, row] of next) {
    const cur = current.get(id);
    if (!cur || cur.email_domain !== row.email_domain || cur.ip_domain !== row.ip_domain) changes.push(row);
  }
  for (const id of current.keys()) if (!next.has(id)) changes.push({ profile_id: id, email_domain: null, ip_domain: null });
  await tx.companies.setCompanies(siteId, changes, now);
  await tx.companies.markIndexBuilt(siteId, now);

  const persons = (rows: Iterable<ProfileCompanyRow>) => {
    const n = new Map<string, number>();
    for (const r of rows) if (r.email_domain !== null) n.set(r.email_domain, (n.get(r.email_domain) ?? 0) + 1);
    return n;
  };
  const before = persons(current.values());
  const after = persons(next.values());
  const flipped = new Set<string>();
  for (const d of new Set([...before.keys(), ...after.keys()])) if ((before.get(d) === 1) !== (after.get(d) === 1)) flipped.add(d);
  const affected = new Set(changes.map((c) => c.profile_id));
  for (const row of next.values()) {
    const company = row.email_domain ?? row.ip_domain;
    if (company !== null && flipped.has(company)) affected.add(row.profile_id);
  }
  for (const row of current.values()) {
    const company = row.email_domain ?? row.ip_domain;
    if (company !== null && flipped.has(company)) affected.add(row.profile_id);
  }
  return [...affected].sort();
}

/**
 * Makes sure the site's company rows cover data written before they were kept
 * (older data, `svc seed`): the first use of a company rule in a site derives
 * them all once. Resolves with the profiles whose memberships may have changed
 * (none when the site was indexed already).
 */
export async function ensureCompanyIndex(store: Store, siteId: string): Promise<string[]> {
  if ((await store.companies.indexBuiltAt(siteId)) !== null) return [];
  return store.write(async (tx) => ((await tx.companies.indexBuiltAt(siteId)) !== null ? [] : rebuildCompanies(tx, siteId, Date.now())));
}

/**
 * Keeps the company rows of profiles current as their data changes (identify,
 * merges, new sessions, erasure). Holds each site's loaded IP ranges for a few
 * seconds, so sites without ranges pay nothing on the ingestion path.
 */
export class ProfileCompanies {
  private readonly ranges = new Map<string, { index: IpRangeIndex | null; at: number }>();

  /** Drops the cached IP ranges of a site (after loading new ones), or of every site. */
  invalidate(siteId?: string): void {
    if (siteId === undefined) this.ranges.clear();
    else this.ranges.delete(siteId);
  }

  private async rangeIndex(r: Repos, siteId: string): Promise<IpRangeIndex | null> {
    const now = Date.now();
    const hit = this.ranges.get(siteId);
    if (hit && now - hit.at < RANGES_TTL_MS) return hit.index;
    const rows = await r.companies.ranges(siteId);
    const index = rows.length > 0 ? new IpRangeIndex(rows) : null;
    this.ranges.set(siteId, { index, at: now });
    return index;
  }

  /**
   * Brings the company row of one profile up to date after a change of it.
   * `identity`: its identities may have changed (identify, a merge), so its
   * email domain is derived again, every session is looked at for its IP
   * company, and the rows of profiles merged into it are dropped. Otherwise
   * only its most recent session's address is looked at (and only when the
   * site has IP ranges). Returns the email domains whose number of known
   * persons changed. Runs inside the caller's write operation.
   */
  async refresh(tx: Repos, siteId: string, profileId: string, now: number, identity: boolean): Promise<string[]> {
    // The common case first (an event of a site without IP ranges): nothing to look at, nothing allocated.
    const index = await this.rangeIndex(tx, siteId);
    if (!identity && index === null) return [];
    const domains = new Set<string>();
    if (identity) {
      for (const r of await tx.companies.dropCompanies(siteId, profileId, false)) if (r.email_domain !== null) domains.add(r.email_domain);
    }
    const cur = await tx.companies.companyOf(profileId);
    const curEmail = cur?.email_domain ?? null;
    const curIp = cur?.ip_domain ?? null;
    const email = identity ? companyOfEmails(await tx.companies.emailsOf(profileId)) : curEmail;
    let ip = curIp;
    if (index !== null) {
      if (identity) {
        ip = null;
        for (const addr of await tx.companies.sessionIpsOf(siteId, profileId)) {
          const hit = index.lookup(addr);
          if (hit) {
            ip = hit.domain;
            break;
          }
        }
      } else {
        const hit = index.lookup(await tx.companies.latestSessionIp(siteId, profileId));
        if (hit) ip = hit.domain;
      }
    }
    if (email !== curEmail || ip !== curIp) await tx.companies.setCompany(siteId, profileId, email, ip, now);
    if (email !== curEmail) {
      if (curEmail !== null) domains.add(curEmail);
      if (email !== null) domains.add(email);
    }
    return [...domains];
  }

  /** Drops the company rows of a profile and of the profiles merged into it (before erasure); returns their email domains. */
  async forget(tx: Repos, siteId: string, profileId: string): Promise<string[]> {
    const rows = await tx.companies.dropCompanies(siteId, profileId, true);
    return [...new Set(rows.map((r) => r.email_domain).filter((d): d is string => d !== null))];
  }
}

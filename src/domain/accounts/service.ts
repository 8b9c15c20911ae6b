import type { Repos } from '../../store/repos.js';
import { companyDomainOfEmail } from './domain.js';
import { IpRangeIndex } from './ip-ranges.js';
import { aggregateSignals, Attributor, type CompanySignals } from './signals.js';

/** An account as listed: its key, what makes it exist, and counts (never a person). */
export interface AccountSummary {
  domain: string;
  name: string | null;
  website: string | null;
  /** record: an explicit account with a website; contacts: known profiles with a corporate email here; ip_ranges: loaded ranges. */
  sources: ('record' | 'contacts' | 'ip_ranges')[];
  known_contacts: number;
  ip_ranges: number;
}

export interface SignalOptions {
  threshold: number;
  topPages: number;
}

/** The corporate email domain of each profile with a known email (free mail and malformed addresses have none). */
export async function contactDomains(repos: Repos, siteId: string): Promise<Map<string, string>> {
  const byHost = new Map<string, string | null>();
  const out = new Map<string, string>();
  for (const e of await repos.companies.emails(siteId)) {
    const host = e.value.slice(e.value.lastIndexOf('@') + 1);
    let d = byHost.get(host);
    if (d === undefined) {
      d = companyDomainOfEmail(e.value);
      byHost.set(host, d);
    }
    if (d !== null) out.set(e.profile_id, d);
  }
  return out;
}

async function rangeIndex(repos: Repos, siteId: string): Promise<{ index: IpRangeIndex; rows: Awaited<ReturnType<Repos['companies']['ranges']>> }> {
  const rows = await repos.companies.ranges(siteId);
  return { index: new IpRangeIndex(rows), rows };
}

/**
 * Every account of a site. Accounts come to exist three ways: an explicit
 * record (accounts_upsert, keyed by its website's registrable domain), known
 * contacts whose email has a corporate domain (derived: the identities of
 * profiles, so merges and erasure apply at once), and loaded IP ranges.
 */
export async function listAccounts(repos: Repos, siteId: string): Promise<AccountSummary[]> {
  const byDomain = new Map<string, AccountSummary>();
  const get = (domain: string) => {
    let a = byDomain.get(domain);
    if (!a) byDomain.set(domain, (a = { domain, name: null, website: null, sources: [], known_contacts: 0, ip_ranges: 0 }));
    return a;
  };
  for (const r of await repos.companies.records(siteId)) {
    const a = get(r.domain);
    a.name = r.name;
    a.website = r.website;
    a.sources.push('record');
  }
  for (const d of (await contactDomains(repos, siteId)).values()) {
    const a = get(d);
    if (a.known_contacts++ === 0) a.sources.push('contacts');
  }
  for (const r of await repos.companies.ranges(siteId)) {
    const a = get(r.domain);
    if (a.ip_ranges++ === 0) a.sources.push('ip_ranges');
    if (a.name === null && r.name !== null) a.name = r.name;
  }
  return [...byDomain.values()].sort((x, y) => (x.domain < y.domain ? -1 : x.domain > y.domain ? 1 : 0));
}

/** Company-level signals of every company active in [since, until). */
export async function signalsByCompany(repos: Repos, siteId: string, since: number, until: number, opts: SignalOptions): Promise<Map<string, CompanySignals>> {
  const site = await repos.sites.get(siteId);
  const [profiles, ranges] = await Promise.all([contactDomains(repos, siteId), rangeIndex(repos, siteId)]);
  const by = new Attributor(profiles, ranges.index.size > 0 ? ranges.index : null);
  const c = repos.companies;
  const [sessions, pageviews, scores, conversions] = [
    await c.sessions(siteId, since, until),
    await c.pageviews(siteId, since, until),
    await c.scores(siteId, since, until),
    await c.conversions(siteId, since, until),
  ];
  return aggregateSignals({ sessions, pageviews, scores, conversions }, by, {
    threshold: opts.threshold,
    topPages: opts.topPages,
    currency: site?.currency ?? 'USD',
  });
}

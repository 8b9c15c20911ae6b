import { PROFILE_CHUNK } from '../../store/companies.js';
import type { Repos } from '../../store/repos.js';
import { companyOfEmails } from './profile-company.js';
import { IpRangeIndex } from './ip-ranges.js';
import { aggregateSignals, Attributor, emptySignals, type CompanySignals, type WindowRows } from './signals.js';
import type { AccountSummary } from './views.js';

export type { AccountSummary };

export interface SignalOptions {
  threshold: number;
  topPages: number;
}

/** The corporate email domain of each profile with a known email (free mail and malformed addresses have none; see companyOfEmails). */
export async function contactDomains(repos: Repos, siteId: string): Promise<Map<string, string>> {
  const byProfile = new Map<string, string[]>();
  for (const e of await repos.companies.emails(siteId)) {
    const list = byProfile.get(e.profile_id);
    if (list) list.push(e.value);
    else byProfile.set(e.profile_id, [e.value]);
  }
  const out = new Map<string, string>();
  for (const [profileId, emails] of byProfile) {
    const d = companyOfEmails(emails);
    if (d !== null) out.set(profileId, d);
  }
  return out;
}

/** What the account tools read once per call: every account, and how sessions are tied to companies. */
export interface AccountsView {
  accounts: AccountSummary[];
  attributor: Attributor;
  /** Company domain of each known contact's profile. */
  contacts: ReadonlyMap<string, string>;
  currency: string;
}

/**
 * Every account of a site, and the attribution of its sessions. Accounts come
 * to exist three ways: an explicit record (accounts_upsert, keyed by its
 * website's registrable domain), known contacts whose email has a corporate
 * domain (derived from the identities of profiles at read time, so merges and
 * erasure apply at once), and loaded IP ranges.
 */
export async function loadAccounts(repos: Repos, siteId: string): Promise<AccountsView> {
  const [records, profiles, ranges, site] = [
    await repos.companies.records(siteId),
    await contactDomains(repos, siteId),
    await repos.companies.ranges(siteId),
    await repos.sites.get(siteId),
  ];
  const byDomain = new Map<string, AccountSummary>();
  const get = (domain: string) => {
    let a = byDomain.get(domain);
    if (!a) byDomain.set(domain, (a = { domain, name: null, website: null, sources: [], known_contacts: 0, ip_ranges: 0 }));
    return a;
  };
  for (const r of records) {
    const a = get(r.domain);
    a.name = r.name;
    a.website = r.website;
    a.sources.push('record');
  }
  for (const d of profiles.values()) {
    const a = get(d);
    if (a.known_contacts++ === 0) a.sources.push('contacts');
  }
  for (const r of ranges) {
    const a = get(r.domain);
    if (a.ip_ranges++ === 0) a.sources.push('ip_ranges');
    if (a.name === null && r.name !== null) a.name = r.name;
  }
  const index = new IpRangeIndex(ranges);
  return {
    accounts: [...byDomain.values()].sort((x, y) => (x.domain < y.domain ? -1 : x.domain > y.domain ? 1 : 0)),
    attributor: new Attributor(profiles, index.size > 0 ? index : null),
    contacts: profiles,
    currency: site?.currency ?? 'USD',
  };
}

/** Up to this many known contacts (and no IP ranges), signals are read per contact rather than by scanning the window. */
export const CONTACT_PATH_MAX = 20_000;

async function rowsOfProfiles(repos: Repos, siteId: string, ids: readonly string[], since: number, until: number): Promise<WindowRows> {
  const rows: { [K in keyof WindowRows]: WindowRows[K][number][] } = { sessions: [], pageviews: [], scores: [], conversions: [] };
  for (let i = 0; i < ids.length; i += PROFILE_CHUNK) {
    const part = await repos.companies.ofProfiles(siteId, ids.slice(i, i + PROFILE_CHUNK), since, until);
    rows.sessions.push(...part.sessions);
    rows.pageviews.push(...part.pageviews);
    rows.scores.push(...part.scores);
    rows.conversions.push(...part.conversions);
  }
  return rows;
}

async function rowsOfWindow(repos: Repos, siteId: string, since: number, until: number): Promise<WindowRows> {
  const c = repos.companies;
  return {
    sessions: await c.sessions(siteId, since, until),
    pageviews: await c.pageviews(siteId, since, until),
    scores: await c.scores(siteId, since, until),
    conversions: await c.conversions(siteId, since, until),
  };
}

/**
 * Company-level signals of every company active in [since, until). Without
 * IP ranges only known contacts' sessions count, so up to CONTACT_PATH_MAX
 * contacts they are read through the per-profile indexes; otherwise the
 * site's window is scanned (anonymous sessions may belong to a company).
 */
export async function windowSignals(
  repos: Repos,
  siteId: string,
  view: AccountsView,
  since: number,
  until: number,
  opts: SignalOptions,
): Promise<Map<string, CompanySignals>> {
  const byContacts = !view.accounts.some((a) => a.ip_ranges > 0) && view.contacts.size <= CONTACT_PATH_MAX;
  const rows = byContacts ? await rowsOfProfiles(repos, siteId, [...view.contacts.keys()], since, until) : await rowsOfWindow(repos, siteId, since, until);
  return aggregateSignals(rows, view.attributor, { threshold: opts.threshold, topPages: opts.topPages, currency: view.currency });
}

/**
 * The signals of one company in [since, until). Without IP ranges its
 * sessions are exactly its contacts' sessions, read through the per-profile
 * indexes; with ranges, anonymous sessions can belong to it too, so the
 * site's window is scanned.
 */
export async function accountSignals(
  repos: Repos,
  siteId: string,
  view: AccountsView,
  account: AccountSummary,
  since: number,
  until: number,
  opts: SignalOptions,
): Promise<CompanySignals> {
  if (account.ip_ranges > 0) return (await windowSignals(repos, siteId, view, since, until, opts)).get(account.domain) ?? emptySignals();
  const ids = [...view.contacts].filter(([, d]) => d === account.domain).map(([id]) => id);
  const rows = await rowsOfProfiles(repos, siteId, ids, since, until);
  const out = aggregateSignals(rows, view.attributor, { threshold: opts.threshold, topPages: opts.topPages, currency: view.currency });
  return out.get(account.domain) ?? emptySignals();
}

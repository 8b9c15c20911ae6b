import { AppError } from '../../errors/app-error.js';
import type { Store } from '../../store/store.js';
import type { SegmentMembership } from '../segments/membership.js';
import { iso } from '../time.js';
import { resolveCompanyDomain } from './domain.js';
import { rankHot } from './hot.js';
import { parseRangesCsv } from './ip-ranges.js';
import { loadIpRanges } from './load-ranges.js';
import { accountSignals, loadAccounts, windowSignals, type AccountsView } from './service.js';
import { emptySignals } from './signals.js';
import type {
  AccountDetail,
  AccountList,
  AccountRecord,
  AccountSignalsReport,
  AccountSummary,
  DomainResolution,
  HotAccounts,
  IpRangesLoad,
} from './views.js';

const DAY = 86_400_000;

/** The window of `days` days ending at `until` (default now), and the window before it. */
function windowOf(days: number, until: number | undefined): { since: number; until: number; prevSince: number } {
  const end = until ?? Date.now();
  const len = days * DAY;
  return { since: end - len, until: end, prevSince: end - 2 * len };
}

/** The company domain named by a domain, website or email; free mail and malformed input are refused. */
function domainOf(input: string, field: string): string {
  const r = resolveCompanyDomain(input);
  if (!r.ok) throw new AppError('validation_failed', `${field}: ${r.message}`, { field, reason: r.reason });
  return r.domain;
}

async function requireAccount(store: Store, siteId: string, input: string): Promise<{ account: AccountSummary; view: AccountsView }> {
  const domain = domainOf(input, 'account');
  const view = await loadAccounts(store, siteId);
  const account = view.accounts.find((a) => a.domain === domain);
  if (!account) throw new AppError('not_found', `no account ${domain} in this site (no record, no known contact, no IP range)`, { field: 'account', domain });
  return { account, view };
}

/** A website, email or host as a company key; free mail is answered (ok false), malformed input refused. */
export function resolveDomain(value: string): DomainResolution {
  const r = resolveCompanyDomain(value);
  if (r.ok) return { ok: true, domain: r.domain, input_kind: r.kind, refusal: null, message: `company domain ${r.domain}` };
  if (r.reason === 'free_mail') return { ok: false, domain: r.domain, input_kind: r.kind, refusal: 'free_mail', message: r.message };
  throw new AppError('validation_failed', `value: ${r.message}`, { field: 'value' });
}

/** Accounts of the site by domain, filtered by text and source, a page after `after`. */
export async function listAccounts(
  store: Store,
  siteId: string,
  f: { query?: string | undefined; source?: AccountSummary['sources'][number] | undefined; after?: string | undefined; limit: number },
): Promise<AccountList> {
  const q = f.query?.toLowerCase();
  const all = (await loadAccounts(store, siteId)).accounts.filter(
    (a) =>
      (q === undefined || a.domain.includes(q) || (a.name ?? '').toLowerCase().includes(q)) &&
      (f.source === undefined || a.sources.includes(f.source)) &&
      (f.after === undefined || a.domain > f.after),
  );
  const page = all.slice(0, f.limit);
  return { accounts: page, next_after: all.length > f.limit ? page[page.length - 1]!.domain : null };
}

/** One account with its signals over the last `days` days. */
export async function getAccount(store: Store, siteId: string, ref: string, days: number): Promise<AccountDetail> {
  const { account, view } = await requireAccount(store, siteId, ref);
  const w = windowOf(days, undefined);
  const signals = await accountSignals(store, siteId, view, account, w.since, w.until, { threshold: 70, topPages: 10 });
  return { ...account, window: { since: iso(w.since)!, until: iso(w.until)! }, signals };
}

/** The signals of one account over a window and the window before it, with the score trend. */
export async function accountSignalsReport(
  store: Store,
  siteId: string,
  q: { ref: string; days: number; until?: number | undefined; threshold: number; topPages: number },
): Promise<AccountSignalsReport> {
  const { account, view } = await requireAccount(store, siteId, q.ref);
  const w = windowOf(q.days, q.until);
  const opts = { threshold: q.threshold, topPages: q.topPages };
  const cur = await accountSignals(store, siteId, view, account, w.since, w.until, opts);
  const prev = await accountSignals(store, siteId, view, account, w.prevSince, w.since, opts);
  const change = cur.score_avg === null || prev.score_avg === null ? null : Math.round((cur.score_avg - prev.score_avg) * 100) / 100;
  return {
    domain: account.domain,
    window: { since: iso(w.since)!, until: iso(w.until)! },
    previous_window: { since: iso(w.prevSince)!, until: iso(w.since)! },
    current: cur,
    previous: prev,
    score_trend: {
      current_avg: cur.score_avg,
      previous_avg: prev.score_avg,
      change,
      direction: change === null ? 'unknown' : change > 0 ? 'rising' : change < 0 ? 'falling' : 'flat',
    },
  };
}

/** Accounts whose signals rose most in a window against the window before it. */
export async function hotAccounts(
  store: Store,
  siteId: string,
  q: { days: number; until?: number | undefined; threshold: number; minSessions: number; limit: number },
): Promise<HotAccounts> {
  const w = windowOf(q.days, q.until);
  const opts = { threshold: q.threshold, topPages: 5 };
  const view = await loadAccounts(store, siteId);
  const cur = await windowSignals(store, siteId, view, w.since, w.until, opts);
  const prev = await windowSignals(store, siteId, view, w.prevSince, w.since, opts);
  const names = new Map(view.accounts.map((a) => [a.domain, a.name]));
  const ranked = rankHot(cur, prev, emptySignals, { minSessions: q.minSessions, limit: q.limit });
  return {
    window: { since: iso(w.since)!, until: iso(w.until)! },
    previous_window: { since: iso(w.prevSince)!, until: iso(w.since)! },
    accounts: ranked.map((h) => ({ domain: h.domain, name: names.get(h.domain) ?? null, heat: h.heat, why: h.rises, current: h.current, previous: h.previous })),
  };
}

/** Creates or updates the explicit record of the company of `website` (free mail refused). */
export async function upsertAccount(store: Store, siteId: string, by: string, input: { website: string; name?: string | undefined }): Promise<AccountRecord> {
  const domain = domainOf(input.website, 'website');
  const now = Date.now();
  const row = await store.write((tx) => tx.companies.upsert({ siteId, domain, name: input.name ?? null, website: input.website.trim(), by, now }));
  const account = (await loadAccounts(store, siteId)).accounts.find((a) => a.domain === domain)!;
  return { ...account, created_at: iso(row.created_at)!, updated_at: iso(row.updated_at)! };
}

/** Replaces the site's IP ranges with a CSV; any bad line refuses the whole file (the first one named). */
export async function loadIpRangesCsv(store: Store, membership: SegmentMembership, siteId: string, csv: string): Promise<IpRangesLoad> {
  const parsed = parseRangesCsv(csv);
  if (parsed.errors.length > 0) {
    const first = parsed.errors[0]!;
    throw new AppError('validation_failed', `csv line ${first.line}: ${first.message} (${parsed.errors.length} bad line(s); nothing loaded)`, {
      field: 'csv',
      errors: parsed.errors.slice(0, 20),
    });
  }
  const { replaced } = await loadIpRanges(store, membership, siteId, parsed.ranges);
  return { loaded: parsed.ranges.length, replaced, companies: new Set(parsed.ranges.map((r) => r.domain)).size };
}

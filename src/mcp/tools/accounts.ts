import { z } from 'zod';
import { AppError } from '../../errors/app-error.js';
import { resolveCompanyDomain } from '../../domain/accounts/domain.js';
import { rankHot, HEAT_WEIGHTS } from '../../domain/accounts/hot.js';
import { parseRangesCsv } from '../../domain/accounts/ip-ranges.js';
import { loadIpRanges } from '../../domain/accounts/load-ranges.js';
import { accountSignals, loadAccounts, windowSignals, type AccountsView, type AccountSummary } from '../../domain/accounts/service.js';
import { emptySignals } from '../../domain/accounts/signals.js';
import { defineTool, type ToolContext } from '../tool.js';
import { iso, isoInput, limitInput } from './shared.js';

const area = 'accounts';
const DAY = 86_400_000;

const accountRef = z
  .string()
  .min(1)
  .max(2048)
  .describe('The account: its company domain, its website URL, or a corporate email address of a contact (resolved like accounts_resolve_domain).');
const daysInput = (def: number) => z.number().int().min(1).max(366).default(def).describe(`Window length in days, ending at \`until\` (default ${def}).`);
const untilInput = isoInput.optional().describe('End of the window, ISO 8601 (default now).');
const thresholdInput = z
  .number()
  .min(0)
  .max(1_000_000)
  .default(70)
  .describe('High-intent threshold: a session is high-intent when its highest score (POST /api/score) in the window is at least this (default 70).');

const accountView = z.object({
  domain: z.string().describe('The company key: the registrable domain, lower-case ASCII.'),
  name: z.string().nullable().describe('Company name from its record or its IP ranges.'),
  website: z.string().nullable().describe('Website of the explicit record, when there is one.'),
  sources: z.array(z.enum(['record', 'contacts', 'ip_ranges'])).describe('What makes the account exist: an explicit record, known contacts with a corporate email here, loaded IP ranges.'),
  known_contacts: z.number().int().describe('How many known profiles have an email at this domain (a count, never who).'),
  ip_ranges: z.number().int().describe('How many loaded IP ranges belong to it.'),
});

const signalsView = z.object({
  sessions: z.number().int().describe('Sessions of the company (by its contacts or from its IP ranges) started in the window.'),
  ip_attributed_sessions: z.number().int().describe('Of those, sessions tied to it only by IP range (anonymous visitors).'),
  known_visitors: z.number().int().describe('Distinct known contacts of the company who visited (a count).'),
  page_views: z.number().int(),
  high_intent_page_views: z.number().int().describe('Page views in high-intent sessions (see intent_threshold).'),
  high_intent_sessions: z.number().int(),
  top_pages: z.array(z.object({ path: z.string(), views: z.number().int() })).describe('Pages most viewed (path only; no query string; segments that look like emails or phone numbers redacted).'),
  conversions: z.number().int(),
  revenue: z.number().describe("Revenue of its conversions in the site's currency."),
  score_avg: z.number().nullable().describe('Average score received in the window; null without scores.'),
  score_max: z.number().nullable(),
});

const windowView = z.object({ since: z.string(), until: z.string() });

function windowOf(days: number, until: string | undefined): { since: number; until: number; prevSince: number } {
  const end = until === undefined ? Date.now() : Date.parse(until);
  const len = days * DAY;
  return { since: end - len, until: end, prevSince: end - 2 * len };
}

/** The company domain named by a domain, website or email; free mail and malformed input are refused. */
function domainOf(input: string, field: string): string {
  const r = resolveCompanyDomain(input);
  if (!r.ok) throw new AppError('validation_failed', `${field}: ${r.message}`, { field, reason: r.reason });
  return r.domain;
}

async function requireAccount(ctx: ToolContext, input: string): Promise<{ account: AccountSummary; view: AccountsView }> {
  const domain = domainOf(input, 'account');
  const view = await loadAccounts(ctx.store, ctx.grant.siteId);
  const account = view.accounts.find((a) => a.domain === domain);
  if (!account) throw new AppError('not_found', `no account ${domain} in this site (no record, no known contact, no IP range)`, { field: 'account', domain });
  return { account, view };
}

export const accountsResolveDomain = defineTool({
  name: 'accounts_resolve_domain',
  title: 'Resolve a company domain',
  description:
    'Normalizes a website URL, an email address or a host to the company key: the registrable domain (Public Suffix List aware, IDN in ASCII form, lower case, no trailing dot). Free-mail domains (gmail.com, proton.me, ...) are refused: ok is false and refusal is free_mail. Use it instead of normalizing by hand when joining CRM accounts.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ value: z.string().min(1).max(2048).describe('A website URL (https://www.example.co.uk/x), an email address (jane@mail.example.com) or a host (EXAMPLE.com.).') }),
  output: z.object({
    ok: z.boolean().describe('True when `domain` is a usable company key.'),
    domain: z.string().nullable().describe('The registrable domain (also given for a free-mail refusal, so the caller can say which).'),
    input_kind: z.enum(['email', 'url', 'host']),
    refusal: z.enum(['free_mail']).nullable().describe('free_mail: the domain is a free-mail provider and never a company key.'),
    message: z.string(),
  }),
  handler: (_ctx, input) => {
    const r = resolveCompanyDomain(input.value);
    if (r.ok) return { ok: true, domain: r.domain, input_kind: r.kind, refusal: null, message: `company domain ${r.domain}` };
    if (r.reason === 'free_mail') return { ok: false, domain: r.domain, input_kind: r.kind, refusal: 'free_mail' as const, message: r.message };
    throw new AppError('validation_failed', `value: ${r.message}`, { field: 'value' });
  },
});

export const accountsList = defineTool({
  name: 'accounts_list',
  title: 'List company accounts',
  description:
    'Company accounts of the site, by domain: explicit records (accounts_upsert), domains of known contacts\' corporate emails, and domains of loaded IP ranges. Counts only, never a person.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({
    query: z.string().min(1).max(200).optional().describe('Only accounts whose domain or name contains this text (case-insensitive).'),
    source: z.enum(['record', 'contacts', 'ip_ranges']).optional().describe('Only accounts that exist through this source.'),
    after: z.string().min(1).max(300).optional().describe('Paging: the next_after of the previous page.'),
    limit: limitInput(500, 50),
  }),
  output: z.object({ accounts: z.array(accountView), next_after: z.string().nullable().describe('Pass as `after` for the next page; null on the last page.') }),
  handler: async (ctx, input) => {
    const q = input.query?.toLowerCase();
    const all = (await loadAccounts(ctx.store, ctx.grant.siteId)).accounts.filter(
      (a) =>
        (q === undefined || a.domain.includes(q) || (a.name ?? '').toLowerCase().includes(q)) &&
        (input.source === undefined || a.sources.includes(input.source)) &&
        (input.after === undefined || a.domain > input.after),
    );
    const page = all.slice(0, input.limit);
    return { accounts: page, next_after: all.length > input.limit ? page[page.length - 1]!.domain : null };
  },
});

export const accountsGet = defineTool({
  name: 'accounts_get',
  title: 'Read a company account',
  description: 'One company account (by domain, website or a contact\'s corporate email) with its sources, counts and its visit signals over the last N days.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ account: accountRef, days: daysInput(30) }),
  output: accountView.extend({ window: windowView, signals: signalsView }),
  handler: async (ctx, input) => {
    const { account, view } = await requireAccount(ctx, input.account);
    const w = windowOf(input.days, undefined);
    const signals = await accountSignals(ctx.store, ctx.grant.siteId, view, account, w.since, w.until, { threshold: 70, topPages: 10 });
    return { ...account, window: { since: iso(w.since)!, until: iso(w.until)! }, signals };
  },
});

export const accountsSignals = defineTool({
  name: 'accounts_signals',
  title: 'Company visit signals',
  description:
    'Company-level visit signals of one account over a window and the window before it: sessions, known visitors (a count), page views, high-intent page views (sessions whose highest score reached intent_threshold), pages most viewed, conversions, revenue and the score trend. Always aggregated at company level; never lists a person.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({
    account: accountRef,
    days: daysInput(30),
    until: untilInput,
    intent_threshold: thresholdInput,
    top_pages: z.number().int().min(1).max(50).default(10).describe('How many pages to list (default 10).'),
  }),
  output: z.object({
    domain: z.string(),
    window: windowView,
    previous_window: windowView,
    current: signalsView,
    previous: signalsView,
    score_trend: z.object({
      current_avg: z.number().nullable(),
      previous_avg: z.number().nullable(),
      change: z.number().nullable().describe('current_avg - previous_avg; null when either window has no score.'),
      direction: z.enum(['rising', 'falling', 'flat', 'unknown']),
    }),
  }),
  handler: async (ctx, input) => {
    const { account, view } = await requireAccount(ctx, input.account);
    const w = windowOf(input.days, input.until);
    const opts = { threshold: input.intent_threshold, topPages: input.top_pages };
    const cur = await accountSignals(ctx.store, ctx.grant.siteId, view, account, w.since, w.until, opts);
    const prev = await accountSignals(ctx.store, ctx.grant.siteId, view, account, w.prevSince, w.since, opts);
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
        direction: change === null ? ('unknown' as const) : change > 0 ? ('rising' as const) : change < 0 ? ('falling' as const) : ('flat' as const),
      },
    };
  },
});

const riseView = z.object({
  signal: z.enum(Object.keys(HEAT_WEIGHTS) as [keyof typeof HEAT_WEIGHTS, ...(keyof typeof HEAT_WEIGHTS)[]]),
  previous: z.number(),
  current: z.number(),
  change: z.number(),
});

export const accountsHot = defineTool({
  name: 'accounts_hot',
  title: 'Hot accounts',
  description: `Accounts whose company-level signals rose most in a window against the window before it, with why (each signal that rose). Heat is the weighted sum of the rises (falls count zero): ${Object.entries(HEAT_WEIGHTS)
    .map(([k, v]) => `${k} x${v}`)
    .join(', ')}. Never lists a person.`,
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({
    days: daysInput(7),
    until: untilInput,
    intent_threshold: thresholdInput,
    min_sessions: z.number().int().min(1).max(1_000_000).default(1).describe('Leave out accounts with fewer sessions than this in the window (default 1).'),
    limit: limitInput(100, 10),
  }),
  output: z.object({
    window: windowView,
    previous_window: windowView,
    accounts: z.array(
      z.object({
        domain: z.string(),
        name: z.string().nullable(),
        heat: z.number(),
        why: z.array(riseView).describe('The signals that rose, largest contribution first.'),
        current: signalsView,
        previous: signalsView,
      }),
    ),
  }),
  handler: async (ctx, input) => {
    const w = windowOf(input.days, input.until);
    const opts = { threshold: input.intent_threshold, topPages: 5 };
    const view = await loadAccounts(ctx.store, ctx.grant.siteId);
    const cur = await windowSignals(ctx.store, ctx.grant.siteId, view, w.since, w.until, opts);
    const prev = await windowSignals(ctx.store, ctx.grant.siteId, view, w.prevSince, w.since, opts);
    const names = new Map(view.accounts.map((a) => [a.domain, a.name]));
    const ranked = rankHot(cur, prev, emptySignals, { minSessions: input.min_sessions, limit: input.limit });
    return {
      window: { since: iso(w.since)!, until: iso(w.until)! },
      previous_window: { since: iso(w.prevSince)!, until: iso(w.since)! },
      accounts: ranked.map((h) => ({ domain: h.domain, name: names.get(h.domain) ?? null, heat: h.heat, why: h.rises, current: h.current, previous: h.previous })),
    };
  },
});

export const accountsUpsert = defineTool({
  name: 'accounts_upsert',
  title: 'Record a company account',
  description:
    "Creates or updates the explicit record of a company account from its website: the key is the website's registrable domain (free-mail domains are refused). Sets the name shown in lists.",
  area,
  scope: 'write',
  flags: { changesData: true, idempotent: true },
  input: z.object({
    website: z.string().min(1).max(2048).describe('The company website (URL or host), e.g. https://www.example.co.uk.'),
    name: z.string().min(1).max(200).optional().describe('Company name.'),
  }),
  output: accountView.extend({ created_at: z.string(), updated_at: z.string() }),
  handler: async (ctx, input) => {
    const domain = domainOf(input.website, 'website');
    const now = Date.now();
    const row = await ctx.store.write((tx) =>
      tx.companies.upsert({ siteId: ctx.grant.siteId, domain, name: input.name ?? null, website: input.website.trim(), by: `token:${ctx.grant.tokenId}`, now }),
    );
    const account = (await loadAccounts(ctx.store, ctx.grant.siteId)).accounts.find((a) => a.domain === domain)!;
    return { ...account, created_at: iso(row.created_at)!, updated_at: iso(row.updated_at)! };
  },
});

export const accountsIpRangesLoad = defineTool({
  name: 'accounts_ip_ranges_load',
  title: 'Load IP ranges of companies',
  description:
    'Replaces the site\'s IP-range-to-company table with an operator-supplied CSV (cidr,domain[,name] per line; optional header; # comments). Anonymous sessions whose IP falls in a range are attributed to its company in the signals (most specific range wins), and a profile without a corporate email takes the company of its most recent session in a range for the company rule node (segments are re-evaluated). Any bad line refuses the whole file and stores nothing; a file with no ranges clears the table.',
  area,
  scope: 'admin',
  flags: { changesData: true, idempotent: true },
  input: z.object({ csv: z.string().min(1).max(10_000_000).describe('The CSV text, e.g. "cidr,domain,name\\n203.0.113.0/24,example.com,Example Ltd".') }),
  output: z.object({
    loaded: z.number().int().describe('Ranges now loaded.'),
    replaced: z.number().int().describe('Ranges the load replaced.'),
    companies: z.number().int().describe('Distinct company domains of the ranges.'),
  }),
  handler: async (ctx, input) => {
    const parsed = parseRangesCsv(input.csv);
    if (parsed.errors.length > 0) {
      const first = parsed.errors[0]!;
      throw new AppError('validation_failed', `csv line ${first.line}: ${first.message} (${parsed.errors.length} bad line(s); nothing loaded)`, {
        field: 'csv',
        errors: parsed.errors.slice(0, 20),
      });
    }
    const { replaced } = await loadIpRanges(ctx.store, ctx.membership, ctx.grant.siteId, parsed.ranges);
    return { loaded: parsed.ranges.length, replaced, companies: new Set(parsed.ranges.map((r) => r.domain)).size };
  },
});

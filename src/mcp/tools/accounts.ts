import { z } from 'zod';
import { HEAT_WEIGHTS } from '../../domain/accounts/hot.js';
import {
  accountSignalsReport,
  getAccount,
  hotAccounts,
  listAccounts,
  loadIpRangesCsv,
  resolveDomain,
  upsertAccount,
} from '../../domain/accounts/queries.js';
import {
  accountDetailSchema,
  accountListSchema,
  accountRecordSchema,
  accountSignalsReportSchema,
  domainResolutionSchema,
  hotAccountsSchema,
  ipRangesLoadSchema,
} from '../../domain/accounts/views.js';
import { defineTool } from '../tool.js';
import { isoInput, limitInput, ms } from './shared.js';

const area = 'accounts';

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

export const accountsResolveDomain = defineTool({
  name: 'accounts_resolve_domain',
  title: 'Resolve a company domain',
  description:
    'Normalizes a website URL, an email address or a host to the company key: the registrable domain (Public Suffix List aware, IDN in ASCII form, lower case, no trailing dot). Free-mail domains (gmail.com, proton.me, ...) are refused: ok is false and refusal is free_mail. Use it instead of normalizing by hand when joining CRM accounts.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ value: z.string().min(1).max(2048).describe('A website URL (https://www.example.co.uk/x), an email address (jane@mail.example.com) or a host (EXAMPLE.com.).') }),
  output: domainResolutionSchema,
  handler: (_ctx, input) => resolveDomain(input.value),
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
  output: accountListSchema,
  handler: (ctx, input) => listAccounts(ctx.store, ctx.grant.siteId, { query: input.query, source: input.source, after: input.after, limit: input.limit }),
});

export const accountsGet = defineTool({
  name: 'accounts_get',
  title: 'Read a company account',
  description: 'One company account (by domain, website or a contact\'s corporate email) with its sources, counts and its visit signals over the last N days.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ account: accountRef, days: daysInput(30) }),
  output: accountDetailSchema,
  handler: (ctx, input) => getAccount(ctx.store, ctx.grant.siteId, input.account, input.days),
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
  output: accountSignalsReportSchema,
  handler: (ctx, input) =>
    accountSignalsReport(ctx.store, ctx.grant.siteId, { ref: input.account, days: input.days, until: ms(input.until), threshold: input.intent_threshold, topPages: input.top_pages }),
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
  output: hotAccountsSchema,
  handler: (ctx, input) =>
    hotAccounts(ctx.store, ctx.grant.siteId, { days: input.days, until: ms(input.until), threshold: input.intent_threshold, minSessions: input.min_sessions, limit: input.limit }),
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
  output: accountRecordSchema,
  handler: (ctx, input) => upsertAccount(ctx.store, ctx.grant.siteId, `token:${ctx.grant.tokenId}`, input),
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
  output: ipRangesLoadSchema,
  handler: (ctx, input) => loadIpRangesCsv(ctx.store, ctx.membership, ctx.grant.siteId, input.csv),
});

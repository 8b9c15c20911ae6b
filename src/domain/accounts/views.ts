import { z } from 'zod';
import { HEAT_WEIGHTS } from './hot.js';

/** A company account as listed: its key, what makes it exist, and counts (never a person). */
export const accountViewSchema = z.object({
  domain: z.string().describe('The company key: the registrable domain, lower-case ASCII.'),
  name: z.string().nullable().describe('Company name from its record or its IP ranges.'),
  website: z.string().nullable().describe('Website of the explicit record, when there is one.'),
  sources: z.array(z.enum(['record', 'contacts', 'ip_ranges'])).describe('What makes the account exist: an explicit record, known contacts with a corporate email here, loaded IP ranges.'),
  known_contacts: z.number().int().describe('How many known profiles have an email at this domain (a count, never who).'),
  ip_ranges: z.number().int().describe('How many loaded IP ranges belong to it.'),
});
export type AccountSummary = z.infer<typeof accountViewSchema>;

/** Company-level visit signals of one window. Counts only: never a person. */
export const signalsViewSchema = z.object({
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
export type CompanySignals = z.infer<typeof signalsViewSchema>;

export const windowViewSchema = z.object({ since: z.string(), until: z.string() });

/** A signal that rose from the previous window to the current one. */
export const riseViewSchema = z.object({
  signal: z.enum(Object.keys(HEAT_WEIGHTS) as [keyof typeof HEAT_WEIGHTS, ...(keyof typeof HEAT_WEIGHTS)[]]),
  previous: z.number(),
  current: z.number(),
  change: z.number(),
});

/** A value resolved to a company key, or refused as free mail. */
export const domainResolutionSchema = z.object({
  ok: z.boolean().describe('True when `domain` is a usable company key.'),
  domain: z.string().nullable().describe('The registrable domain (also given for a free-mail refusal, so the caller can say which).'),
  input_kind: z.enum(['email', 'url', 'host']),
  refusal: z.enum(['free_mail']).nullable().describe('free_mail: the domain is a free-mail provider and never a company key.'),
  message: z.string(),
});
export type DomainResolution = z.input<typeof domainResolutionSchema>;

/** A page of accounts. */
export const accountListSchema = z.object({ accounts: z.array(accountViewSchema), next_after: z.string().nullable().describe('Pass as `after` for the next page; null on the last page.') });
export type AccountList = z.input<typeof accountListSchema>;

/** One account with its signals over a window. */
export const accountDetailSchema = accountViewSchema.extend({ window: windowViewSchema, signals: signalsViewSchema });
export type AccountDetail = z.input<typeof accountDetailSchema>;

/** The signals of one account over a window and the window before it. */
export const accountSignalsReportSchema = z.object({
  domain: z.string(),
  window: windowViewSchema,
  previous_window: windowViewSchema,
  current: signalsViewSchema,
  previous: signalsViewSchema,
  score_trend: z.object({
    current_avg: z.number().nullable(),
    previous_avg: z.number().nullable(),
    change: z.number().nullable().describe('current_avg - previous_avg; null when either window has no score.'),
    direction: z.enum(['rising', 'falling', 'flat', 'unknown']),
  }),
});
export type AccountSignalsReport = z.input<typeof accountSignalsReportSchema>;

/** Accounts ranked by heat. */
export const hotAccountsSchema = z.object({
  window: windowViewSchema,
  previous_window: windowViewSchema,
  accounts: z.array(
    z.object({
      domain: z.string(),
      name: z.string().nullable(),
      heat: z.number(),
      why: z.array(riseViewSchema).describe('The signals that rose, largest contribution first.'),
      current: signalsViewSchema,
      previous: signalsViewSchema,
    }),
  ),
});
export type HotAccounts = z.input<typeof hotAccountsSchema>;

/** An explicit account record. */
export const accountRecordSchema = accountViewSchema.extend({ created_at: z.string(), updated_at: z.string() });
export type AccountRecord = z.input<typeof accountRecordSchema>;

/** What loading IP ranges did. */
export const ipRangesLoadSchema = z.object({
  loaded: z.number().int().describe('Ranges now loaded.'),
  replaced: z.number().int().describe('Ranges the load replaced.'),
  companies: z.number().int().describe('Distinct company domains of the ranges.'),
});
export type IpRangesLoad = z.input<typeof ipRangesLoadSchema>;

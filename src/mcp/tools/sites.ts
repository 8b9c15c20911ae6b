import { z } from 'zod';
import { AppError } from '../../errors/app-error.js';
import type { SiteRow } from '../../store/sites.js';
import { defineTool } from '../tool.js';
import { iso } from './shared.js';
import { assertCurrency } from '../../domain/currency.js';
import { normalizeOrigins, normalizeUrlParams, TAG_LIST_MAX, tagSettingsView } from '../../domain/sites/tag-settings.js';

const area = 'sites';

/** The largest holdout share: more than half the visitors held out would make personalization the minority. */
export const MAX_HOLDOUT_SHARE = 0.5;

const settingsView = z.object({
  site_id: z.string(),
  name: z.string(),
  domain: z.string().nullable(),
  currency: z.string().describe('ISO 4217 currency of revenue figures.'),
  timezone: z.string().describe('IANA time zone (quiet hours, callback dates, ISO weeks).'),
  holdout_share: z.number().describe('Share of visitors (0 to 0.5) who always see zone defaults, for measuring lift (analytics_lift).'),
  consent_required: z.boolean().describe('The browser tag sets no cookie and sends nothing until the page calls svc.consent(true).'),
  honour_privacy_signals: z.boolean().describe('The browser tag treats Do-Not-Track and Global Privacy Control as consent refused.'),
  allowed_origins: z.array(z.string()).describe("Browser origins allowed besides the domain and its subdomains (CORS of the public paths)."),
  url_params: z.array(z.string()).describe('Query parameters the browser tag keeps in page URLs (* as a suffix is a prefix).'),
  created_at: z.string(),
});

function view(s: SiteRow): z.input<typeof settingsView> {
  return { site_id: s.id, name: s.name, domain: s.domain, currency: s.currency, timezone: s.timezone, holdout_share: s.holdout_share, ...tagSettingsView(s), created_at: iso(s.created_at)! };
}

/** The canonical IANA name of a time zone Intl knows (europe/berlin -> Europe/Berlin), or null. */
export function canonicalTimeZone(tz: string): string | null {
  if (tz === '' || tz.length > 64 || /^[+-]/.test(tz)) return null;
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: tz }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
}

export const sitesSettingsGet = defineTool({
  name: 'sites_settings_get',
  title: 'Read the site settings',
  description: "The site's settings: name, domain, currency, time zone, holdout share and the browser tag's (consent, privacy signals, allowed origins, kept URL parameters).",
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({}),
  output: settingsView,
  handler: async (ctx) => view((await ctx.store.sites.get(ctx.grant.siteId))!),
});

export const sitesSettingsUpdate = defineTool({
  name: 'sites_settings_update',
  title: 'Change the site settings',
  description:
    "Changes the site's time zone (an IANA name such as Europe/Berlin), holdout share (0 to 0.5: the share of visitors who always see defaults, the baseline of analytics_lift), currency (ISO 4217) and the browser tag's settings (consent_required, honour_privacy_signals, allowed_origins, url_params; lists replace the current ones). Omitted fields stay as they are.",
  area,
  scope: 'admin',
  flags: { changesData: true, idempotent: true },
  input: z.object({
    timezone: z.string().min(1).max(64).optional().describe('IANA time zone, e.g. America/New_York.'),
    holdout_share: z.number().min(0).max(MAX_HOLDOUT_SHARE).optional().describe(`Share of visitors held out of personalization, 0 to ${MAX_HOLDOUT_SHARE}.`),
    currency: z
      .string()
      .regex(/^[A-Za-z]{3}$/, 'a three-letter ISO 4217 code')
      .optional()
      .describe('ISO 4217 currency code, e.g. EUR. Revenue already recorded keeps its own currency.'),
    consent_required: z.boolean().optional().describe('Whether the browser tag waits for svc.consent(true) before any cookie or request.'),
    honour_privacy_signals: z.boolean().optional().describe('Whether Do-Not-Track and Global Privacy Control count as consent refused.'),
    allowed_origins: z.array(z.string().max(300)).max(TAG_LIST_MAX).optional().describe('Extra browser origins such as https://app.example.net (replaces the list).'),
    url_params: z.array(z.string().max(65)).max(TAG_LIST_MAX).optional().describe('Query parameters kept in page URLs, e.g. ["utm_*", "ref"] (replaces the list).'),
  }),
  output: settingsView.extend({ changed: z.array(z.string()).describe('The settings that changed.') }),
  handler: async (ctx, input) => {
    const timezone = input.timezone === undefined ? undefined : canonicalTimeZone(input.timezone);
    if (timezone === null) throw new AppError('validation_failed', `timezone: ${input.timezone} is not an IANA time zone`, { field: 'timezone' });
    const before = (await ctx.store.sites.get(ctx.grant.siteId))!;
    const bool = (b: boolean | undefined) => (b === undefined ? undefined : b ? 1 : 0);
    const patch = {
      timezone,
      holdout_share: input.holdout_share,
      currency: input.currency?.toUpperCase(),
      consent_required: bool(input.consent_required),
      honour_privacy_signals: bool(input.honour_privacy_signals),
      allowed_origins: input.allowed_origins && JSON.stringify(normalizeOrigins(input.allowed_origins)),
      url_params: input.url_params && JSON.stringify(normalizeUrlParams(input.url_params)),
    };
    if (patch.currency !== undefined) assertCurrency(patch.currency);
    const after = (await ctx.store.write((tx) => tx.sites.update(ctx.grant.siteId, patch)))!;
    const keys = ['timezone', 'holdout_share', 'currency', 'consent_required', 'honour_privacy_signals', 'allowed_origins', 'url_params'] as const;
    const changed = keys.filter((k) => before[k] !== after[k]);
    return { ...view(after), changed };
  },
});

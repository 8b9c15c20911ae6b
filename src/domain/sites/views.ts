import { z } from 'zod';
import type { SiteRow } from '../../store/sites.js';
import { tagSettingsView } from './tag-settings.js';

/** The view of a site's settings (sites_settings_get, sites_settings_update). */
export const settingsView = z.object({
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

export type SettingsView = z.input<typeof settingsView>;

export function settingsOut(s: SiteRow): SettingsView {
  return { site_id: s.id, name: s.name, domain: s.domain, currency: s.currency, timezone: s.timezone, holdout_share: s.holdout_share, ...tagSettingsView(s), created_at: new Date(s.created_at).toISOString() };
}

/** A site as `svc site list` shows it. */
export const siteListItemView = z.object({
  site_id: z.string(),
  name: z.string(),
  domain: z.string().nullable(),
  currency: z.string(),
  created_at: z.string(),
});
export type SiteListItemView = z.input<typeof siteListItemView>;

export function siteListItemOut(s: SiteRow): SiteListItemView {
  return { site_id: s.id, name: s.name, domain: s.domain, currency: s.currency, created_at: new Date(s.created_at).toISOString() };
}

/** A site's domain, currency and browser-tag settings, as `svc site update` shows them. */
export const siteSetupView = z.object({
  site_id: z.string(),
  name: z.string(),
  domain: z.string().nullable(),
  currency: z.string(),
  consent_required: z.boolean(),
  honour_privacy_signals: z.boolean(),
  allowed_origins: z.array(z.string()),
  url_params: z.array(z.string()),
});
export type SiteSetupView = z.input<typeof siteSetupView>;

export function siteSetupOut(s: SiteRow): SiteSetupView {
  return { site_id: s.id, name: s.name, domain: s.domain, currency: s.currency, ...tagSettingsView(s) };
}

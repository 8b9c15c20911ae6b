import { z } from 'zod';
import { defineTool } from '../tool.js';
import { MAX_HOLDOUT_SHARE, SiteSettingsService } from '../../domain/sites/service.js';
import { TAG_LIST_MAX } from '../../domain/sites/tag-settings.js';
import { settingsView } from '../../domain/sites/views.js';

const area = 'sites';

export const sitesSettingsGet = defineTool({
  name: 'sites_settings_get',
  title: 'Read the site settings',
  description: "The site's settings: name, domain, currency, time zone, holdout share and the browser tag's (consent, privacy signals, allowed origins, kept URL parameters).",
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({}),
  output: settingsView,
  handler: (ctx) => new SiteSettingsService(ctx.store).get(ctx.grant.siteId),
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
  handler: (ctx, input) => new SiteSettingsService(ctx.store).update(ctx.grant.siteId, input),
});

import { AppError } from '../../errors/app-error.js';
import type { SitePatch } from '../../store/sites.js';
import type { SiteStats } from '../../store/stats.js';
import type { Store } from '../../store/store.js';
import { assertCurrency } from '../currency.js';
import { normalizeOrigins, normalizeUrlParams } from './tag-settings.js';
import { settingsOut, siteListItemOut, siteSetupOut, type SettingsView, type SiteListItemView, type SiteSetupView } from './views.js';

/** The largest holdout share: more than half the visitors held out would make personalization the minority. */
export const MAX_HOLDOUT_SHARE = 0.5;

/** The canonical IANA name of a time zone Intl knows (europe/berlin -> Europe/Berlin), or null. */
export function canonicalTimeZone(tz: string): string | null {
  if (tz === '' || tz.length > 64 || /^[+-]/.test(tz)) return null;
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: tz }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
}

/** A change of the site settings; omitted fields stay as they are (lists replace the current ones). */
export interface SettingsPatch {
  timezone?: string | undefined;
  holdout_share?: number | undefined;
  currency?: string | undefined;
  consent_required?: boolean | undefined;
  honour_privacy_signals?: boolean | undefined;
  allowed_origins?: string[] | undefined;
  url_params?: string[] | undefined;
}

/** The site-settings use cases of one store, returning views. */
export class SiteSettingsService {
  constructor(private readonly store: Store) {}

  /** The settings of a site that must exist (not_found otherwise). */
  async require(siteId: string): Promise<SettingsView> {
    const row = await this.store.sites.get(siteId);
    if (!row) throw new AppError('not_found', `no site ${siteId}`);
    return settingsOut(row);
  }

  /** Creates a site in the local owner's account (domain lower-cased). */
  async create(input: { name: string; domain?: string | undefined; currency: string }): Promise<{ site_id: string }> {
    const row = await this.store.write((tx) => tx.sites.create({ name: input.name, domain: input.domain?.toLowerCase(), currency: input.currency }));
    return { site_id: row.id };
  }

  /** Every site, oldest first. */
  async list(): Promise<SiteListItemView[]> {
    return (await this.store.sites.list()).map(siteListItemOut);
  }

  /** Changes the domain, currency or browser-tag settings of a site that must exist (svc site update). */
  async setUp(
    siteId: string,
    patch: Pick<SitePatch, 'currency' | 'allowed_origins' | 'url_params' | 'consent_required' | 'honour_privacy_signals'> & { domain?: string | undefined },
  ): Promise<SiteSetupView> {
    const row = await this.store.write(async (tx) => {
      if (!(await tx.sites.get(siteId))) throw new AppError('not_found', `no site ${siteId}`);
      return (await tx.sites.update(siteId, { ...patch, domain: patch.domain?.toLowerCase() }))!;
    });
    return siteSetupOut(row);
  }

  /** Row counts of every site, or of one site that must exist. */
  async stats(siteId?: string): Promise<SiteStats[]> {
    if (siteId !== undefined) await this.require(siteId);
    return this.store.stats(siteId);
  }

  async get(siteId: string): Promise<SettingsView> {
    return settingsOut((await this.store.sites.get(siteId))!);
  }

  /** Applies a change and names the settings it changed. */
  async update(siteId: string, input: SettingsPatch): Promise<SettingsView & { changed: string[] }> {
    const timezone = input.timezone === undefined ? undefined : canonicalTimeZone(input.timezone);
    if (timezone === null) throw new AppError('validation_failed', `timezone: ${input.timezone} is not an IANA time zone`, { field: 'timezone' });
    const before = (await this.store.sites.get(siteId))!;
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
    const after = (await this.store.write((tx) => tx.sites.update(siteId, patch)))!;
    const keys = ['timezone', 'holdout_share', 'currency', 'consent_required', 'honour_privacy_signals', 'allowed_origins', 'url_params'] as const;
    const changed = keys.filter((k) => before[k] !== after[k]);
    return { ...settingsOut(after), changed };
  }
}

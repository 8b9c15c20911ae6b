import { AppError } from '../../errors/app-error.js';
import { canonicalOrigin, jsonList } from './origins.js';
import type { SitePatch, SiteRow } from '../../store/sites.js';

/** At most this many extra origins and kept URL parameters per site. */
export const TAG_LIST_MAX = 50;

/** The browser-tag settings of a site as the CLI and MCP show them. */
export function tagSettingsView(s: SiteRow) {
  return {
    consent_required: s.consent_required === 1,
    honour_privacy_signals: s.honour_privacy_signals === 1,
    allowed_origins: jsonList(s.allowed_origins),
    url_params: jsonList(s.url_params),
  };
}

const invalid = (field: string, message: string) => new AppError('validation_failed', `${field}: ${message}`, { field });

/** Canonical origins (scheme://host[:port]), deduplicated; validation_failed on anything else. */
export function normalizeOrigins(list: readonly string[], field = 'allowed_origins'): string[] {
  if (list.length > TAG_LIST_MAX) throw invalid(field, `at most ${TAG_LIST_MAX} origins`);
  const out = list.map((o) => {
    const c = canonicalOrigin(o.trim());
    if (c === null) throw invalid(field, `${JSON.stringify(o)} is not an origin such as https://shop.example.com (scheme, host, optional port; no path)`);
    return c;
  });
  return [...new Set(out)];
}

/** Query parameter names, each optionally ending in * (a prefix); validation_failed on anything else. */
export function normalizeUrlParams(list: readonly string[], field = 'url_params'): string[] {
  if (list.length > TAG_LIST_MAX) throw invalid(field, `at most ${TAG_LIST_MAX} parameters`);
  for (const p of list) {
    if (!/^[A-Za-z0-9_.\-[\]]{1,64}\*?$/.test(p)) throw invalid(field, `${JSON.stringify(p)} is not a parameter name (letters, digits, _ . - [ ], optionally ending in *)`);
  }
  return [...new Set(list)];
}

export interface TagSettingsInput {
  allowedOrigins?: string;
  urlParams?: string;
  consentRequired?: string;
  honourPrivacySignals?: string;
}

const yesNo = (flag: string, v: string): number => {
  if (/^(yes|true|on|1)$/i.test(v)) return 1;
  if (/^(no|false|off|0)$/i.test(v)) return 0;
  throw invalid(flag, `yes or no, got ${JSON.stringify(v)}`);
};
const commaList = (v: string) => v.split(',').map((x) => x.trim()).filter((x) => x !== '');

/** The site patch of the CLI's tag options (comma-separated lists, yes/no switches). */
export function parseTagSettings(o: TagSettingsInput): SitePatch {
  const patch: SitePatch = {};
  if (o.allowedOrigins !== undefined) patch.allowed_origins = JSON.stringify(normalizeOrigins(commaList(o.allowedOrigins), '--allowed-origins'));
  if (o.urlParams !== undefined) patch.url_params = JSON.stringify(normalizeUrlParams(commaList(o.urlParams), '--url-params'));
  if (o.consentRequired !== undefined) patch.consent_required = yesNo('--consent-required', o.consentRequired);
  if (o.honourPrivacySignals !== undefined) patch.honour_privacy_signals = yesNo('--honour-privacy-signals', o.honourPrivacySignals);
  return patch;
}

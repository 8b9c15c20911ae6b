import { parsePhoneNumberFromString } from 'libphonenumber-js';
import type { ConversionSignals } from '../../adplatforms/signals.js';
import type { Repos } from '../../store/repos.js';
import { normalizeEmail, sha256Hex } from '../identity/normalize.js';
import type { LineItem } from './payloads.js';

/**
 * E.164 form of a phone number, or undefined. Only numbers written with their
 * country code (a leading + or 00) are accepted: a national number cannot be
 * given a country code without guessing, and a wrong guess hashes to a
 * different person.
 */
export function phoneE164(raw: string): string | undefined {
  const t = raw.trim();
  const intl = t.startsWith('00') ? `+${t.slice(2)}` : t;
  if (!intl.startsWith('+')) return undefined;
  const parsed = parsePhoneNumberFromString(intl);
  return parsed?.isValid() ? parsed.number : undefined;
}

/** Reads the session and profile of a conversion; runs inside its write operation, whose repositories are `tx`. */
export async function captureSignals(
  tx: Repos,
  c: { siteId: string; sessionId: string; profileId: string; conversionId: string; revenue: number | null; currency: string; lineItems: LineItem[]; at: number },
): Promise<ConversionSignals> {
  const out: ConversionSignals = {
    v: 1,
    conversion_id: c.conversionId,
    at: c.at,
    value: c.revenue,
    currency: c.currency,
    items: c.lineItems.map((i) => ({ sku: i.sku, qty: i.qty, price: i.price })),
  };
  const traits = (await tx.profiles.traits(c.profileId)).traits;
  const email = traits.email !== undefined ? normalizeEmail(traits.email) : '';
  if (email) out.em = sha256Hex(email);
  const e164 = traits.phone !== undefined ? phoneE164(traits.phone) : undefined;
  if (e164) {
    out.ph_e164 = sha256Hex(e164);
    out.ph_digits = sha256Hex(e164.slice(1));
  }
  const ext = traits.external_id?.trim();
  if (ext) out.external_id = sha256Hex(ext);
  const s = await tx.adplatforms.sessionSignals(c.siteId, c.sessionId);
  if (s) {
    if (s.ip) out.ip = s.ip.startsWith('::ffff:') && s.ip.includes('.') ? s.ip.slice(7) : s.ip; // IPv4-mapped: the platforms want the IPv4 form
    if (s.user_agent) out.user_agent = s.user_agent;
    if (s.landing_url) out.url = s.landing_url;
    if (s.fbclid) {
      out.fbclid = s.fbclid;
      out.fbclid_at = s.fbclid_at ?? s.first_seen;
    }
    if (s.gclid) out.gclid = s.gclid;
  }
  return out;
}

import { parsePhoneNumberFromString } from 'libphonenumber-js';
import { z } from 'zod';
import { normalizeEmail, sha256Hex } from '../domain/identity/normalize.js';
import type { Repos } from '../store/repos.js';
import type { LineItem } from '../domain/ingestion/payloads.js';

/**
 * What the ad platforms need to know about one conversion, captured in the
 * conversion's own transaction and stored with each of its jobs. Personal
 * identifiers are only ever stored here as SHA-256 hex of their normalized
 * form; the IP address, user agent and click ids are sent as they are (the
 * platforms match on them unhashed).
 */
export const signalsSchema = z.object({
  v: z.literal(1),
  conversion_id: z.string(),
  /** When the conversion was recorded, ms since the epoch. */
  at: z.number(),
  value: z.number().nullable(),
  currency: z.string(),
  items: z.array(z.object({ sku: z.string(), qty: z.number(), price: z.number() })),
  /** sha256(trimmed, lower-cased email) — Meta `em` and Google `hashedEmail` alike. */
  em: z.string().optional(),
  /** sha256(E.164 digits without +) — Meta `ph`. */
  ph_digits: z.string().optional(),
  /** sha256(E.164 with +) — Google `hashedPhoneNumber`. */
  ph_e164: z.string().optional(),
  /** sha256(trimmed external_id) — Meta `external_id`. */
  external_id: z.string().optional(),
  ip: z.string().optional(),
  user_agent: z.string().optional(),
  url: z.string().optional(),
  fbclid: z.string().optional(),
  fbclid_at: z.number().optional(),
  gclid: z.string().optional(),
});
export type ConversionSignals = z.infer<typeof signalsSchema>;

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

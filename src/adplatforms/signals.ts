import { z } from 'zod';

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

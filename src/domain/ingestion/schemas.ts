import { z } from 'zod';
import { contactProblem } from '../contact.js';
import { PII_TRAITS } from '../profiles/snapshot.js';

/**
 * Request schemas of the ingestion surface. They are the single truth for
 * validation, TypeScript types and the documentation of the endpoints.
 */
const id = (what: string) => z.string().min(1).max(128).describe(what);
const siteId = z.string().min(1).max(64).describe('Public site identifier.');

/** A client-made key of one request: a retry with the same key for the same site within 24 hours stores nothing new. */
export const idempotencyKeySchema = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces')
  .describe('Client-made id of this request (or the Idempotency-Key header, which wins): a retry with the same key for the same site within 24 hours stores nothing new and gets the first answer.');

export const TRAIT_LIMITS = { keys: 100, keyLength: 128, valueLength: 2048, email: 320 } as const;

export const identifySchema = z
  .strictObject({
    session_id: id('The visitor session to attach the identity to.'),
    visitor_id: id('Persistent visitor ID (the persistent visitor cookie).').optional(),
    site_id: siteId,
    idempotency_key: idempotencyKeySchema.optional(),
    traits: z
      .record(
        z.string().min(1).max(TRAIT_LIMITS.keyLength),
        z.string().max(TRAIT_LIMITS.valueLength, `trait values are at most ${TRAIT_LIMITS.valueLength} characters`),
      )
      .refine((t) => Object.keys(t).length >= 1, 'at least one trait is required')
      .refine((t) => Object.keys(t).length <= TRAIT_LIMITS.keys, `at most ${TRAIT_LIMITS.keys} traits`)
      .refine((t) => (t.email ?? '').length <= TRAIT_LIMITS.email, `email is at most ${TRAIT_LIMITS.email} characters`)
      .superRefine((t, ctx) => {
        for (const key of PII_TRAITS) {
          const problem = t[key] === undefined ? null : contactProblem(t[key]);
          if (problem) ctx.addIssue({ code: 'custom', path: [key], message: problem });
        }
      })
      .describe('At least one trait (email, external_id or any custom attribute); all values are strings.'),
  })
  .meta({ id: 'IdentifyRequest' });
export type IdentifyRequest = z.infer<typeof identifySchema>;

/** Upper bounds of a line item: a unit price no larger than the largest revenue, a quantity of at most a million. */
export const LINE_ITEM_LIMITS = { qty: 1_000_000, price: 10_000_000 } as const;

const bounded = (max: number, what: string) =>
  z
    .number()
    .refine(Number.isFinite, 'must be a finite number')
    .min(0, `must be between 0 and ${max.toLocaleString('en-US')}`)
    .max(max, `must be between 0 and ${max.toLocaleString('en-US')}`)
    .describe(what);

export const lineItemSchema = z
  .strictObject({
    sku: z.string().min(1).max(256).describe('Stock-keeping unit (the content id sent to ad platforms).'),
    qty: bounded(LINE_ITEM_LIMITS.qty, 'Quantity, 0 to 1,000,000.'),
    price: bounded(LINE_ITEM_LIMITS.price, 'Unit price, 0 to 10,000,000 (the largest revenue).'),
  })
  .meta({ id: 'LineItem' });

export const convertSchema = z
  .strictObject({
    session_id: id('The converting session.'),
    site_id: siteId,
    idempotency_key: idempotencyKeySchema.optional(),
    revenue: z
      .number()
      .refine(Number.isFinite, 'must be a finite number')
      .min(0, 'revenue must be between 0 and 10,000,000')
      .max(10_000_000, 'revenue must be between 0 and 10,000,000')
      .nullable()
      .describe('0 to 10,000,000; null records a non-revenue conversion.'),
    line_items: z.array(lineItemSchema).max(100, 'at most 100 line items').optional(),
  })
  .meta({ id: 'ConvertRequest' });
export type ConvertRequest = z.infer<typeof convertSchema>;

/** A contact value (email, name, phone): bounded, and free of the characters contactProblem refuses. */
const contactText = (max: number, what: string) =>
  z
    .string()
    .max(max, `at most ${max} characters`)
    .superRefine((v, ctx) => {
      const problem = contactProblem(v);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    })
    .nullish()
    .describe(what);

export const leadSchema = z
  .strictObject({
    site_id: siteId,
    idempotency_key: idempotencyKeySchema.optional(),
    visitor_id: id('Persistent visitor ID to attach the lead to (preferred).').nullish(),
    session_id: id('Alternative to visitor_id when only the session is known.').nullish(),
    email: contactText(320, 'Email address (at most 320 characters).'),
    name: contactText(200, 'Name (at most 200 characters).'),
    phone: contactText(40, 'Phone number (at most 40 characters).'),
    appointment_slot: z.iso
      .datetime({ offset: true, message: 'must be an ISO 8601 date-time with a time zone (Z or ±hh:mm)' })
      .nullish()
      .describe('Booked appointment time, ISO 8601 with a time zone.'),
    source: z.string().max(100).nullish().describe('optin_form files a newsletter/opt-in; anything else a lead form.'),
    form_id: z.string().min(1).max(128).nullish().describe('The form the lead came from (defaults to the filing kind).'),
  })
  .meta({ id: 'LeadCaptureRequest' });
export type LeadRequest = z.infer<typeof leadSchema>;

/** Event times accepted: from 2000-01-01T00:00:00Z to this far past the server's clock. */
export const EVENT_TIME_BOUNDS = { earliest: Date.UTC(2000, 0, 1), futureSlackMs: 24 * 60 * 60 * 1000 } as const;

const timestamp = z.iso
  .datetime({ offset: true, message: 'must be an ISO 8601 date-time with a time zone (Z or ±hh:mm)' })
  .refine((t) => {
    const ms = Date.parse(t);
    return ms >= EVENT_TIME_BOUNDS.earliest && ms <= Date.now() + EVENT_TIME_BOUNDS.futureSlackMs;
  }, 'must lie between 2000-01-01T00:00:00Z and 24 hours after the server time')
  .describe('When it happened, ISO 8601, from 2000-01-01T00:00:00Z to 24 hours after server time; server time when absent.');

/** Known keys of an event; every other top-level key is a custom property kept verbatim. */
export const eventSchema = z
  .looseObject({
    site_id: siteId,
    session_id: id('The session the event belongs to.'),
    visitor_id: id('Persistent visitor ID.').optional(),
    type: z
      .string()
      .min(1)
      .max(100)
      .regex(/^[\x21-\x7e]+$/, 'type is printable ASCII without spaces')
      .describe('pageview, click, add_to_cart, abandon_cart or any custom name.'),
    timestamp: timestamp.optional(),
    idempotency_key: idempotencyKeySchema.optional(),
  })
  .meta({ id: 'Event' });
export type EventRequest = z.infer<typeof eventSchema>;

const PRINTABLE_ASCII = /^[\x21-\x7e]+$/;
const isId = (v: unknown, max: number): v is string => typeof v === 'string' && v.length >= 1 && v.length <= max;

/**
 * The common event, checked without zod: the body object itself when its known keys are exactly
 * what eventSchema accepts without a word (site_id, session_id, type, and visitor_id when present,
 * within their bounds) and it has no timestamp or idempotency_key; else null, and eventSchema
 * decides (and words the refusal). What it accepts, eventSchema accepts with the same keys and
 * values (test/unit/event-fast-path.test.ts): a looseObject passes every other key through as is.
 */
export function commonEvent(body: Record<string, unknown>): EventRequest | null {
  if (body.timestamp !== undefined || body.idempotency_key !== undefined) return null;
  if (!isId(body.site_id, 64) || !isId(body.session_id, 128) || !isId(body.type, 100) || !PRINTABLE_ASCII.test(body.type)) return null;
  const visitor = body.visitor_id;
  if (visitor !== undefined && !isId(visitor, 128)) return null;
  return body as EventRequest;
}

/** Known keys of a score; every other top-level key is a custom signal field kept verbatim. */
export const scoreSchema = z
  .looseObject({
    site_id: siteId,
    session_id: id('The session the score belongs to.'),
    visitor_id: id('Persistent visitor ID.').optional(),
    score: z.number().refine(Number.isFinite, 'must be a finite number').optional().describe('Numeric score.'),
    idempotency_key: idempotencyKeySchema.optional(),
  })
  .meta({ id: 'Score' });
export type ScoreRequest = z.infer<typeof scoreSchema>;

import { z } from 'zod';
import { profileSnapshotSchema } from '../domain/profiles/schema.js';
import { EVENT_TYPES } from '../webhooks/catalogue.js';
import { destinationDescriptionSchema, destinationSecretSchema, destinationUrlSchema } from '../webhooks/destinations.js';
import { publicDestinationSchema } from '../domain/webhooks/views.js';
import { signingModeSchema } from '../outbound/signer.js';
import { gracePeriodSecondsSchema, secretRotationSchema } from '../domain/webhooks/destinations.js';
import { attemptViewSchema } from '../domain/webhooks/attempts.js';

export { secretRotationSchema };

export { profileSnapshotSchema };

/** Schemas of the profile REST API: they validate requests and generate openapi.json. */

export const errorSchema = z
  .object({
    error: z.object({
      code: z.string().describe('snake_case error code: bad_request, unauthorized, insufficient_scope, not_found, rate_limited, ...'),
      message: z.string(),
      details: z.record(z.string(), z.unknown()),
    }),
  })
  .meta({ id: 'Error', description: 'Every error response has this body.' });

/** 64 lowercase hex digits: a SHA-256 identifier. */
export const SHA256_HEX = /^[0-9a-f]{64}$/;
const sha256 = z.string().regex(SHA256_HEX, 'must be 64 lowercase hex characters (SHA-256)');

export const profileQuerySchema = z
  .strictObject({
    profile_id: z.string().min(1).max(128).optional().describe('Profile id (prf_...). A merged profile id resolves to the surviving profile.'),
    visitor_id: z.string().min(1).max(128).optional().describe('Persistent visitor id.'),
    email: z.string().min(1).max(320).optional().describe('Email; trimmed and lower-cased before the look-up.'),
    external_id: z.string().min(1).max(256).optional().describe('Your own id for the person.'),
    email_sha256: sha256.optional().describe('SHA-256 hex of the normalized email (trimmed, lower-cased).'),
    phone_sha256: sha256.optional().describe('SHA-256 hex of the phone in E.164 digits without "+" (e.g. 442079460000).'),
    include_pii: z
      .enum(['true', 'false'])
      .optional()
      .describe('true demands plaintext email, phone and name (403 without profile:read:pii). Default: included exactly when the key has profile:read:pii.'),
  })
  .meta({ id: 'ProfileQuery' });

export const LOOKUP_KEYS = ['profile_id', 'visitor_id', 'email', 'external_id', 'email_sha256', 'phone_sha256'] as const;

export const PAGE_LIMIT = { default: 100, max: 1000 } as const;

const limit = z.coerce
  .number()
  .int('limit must be a whole number')
  .min(1, `limit must be between 1 and ${PAGE_LIMIT.max}`)
  .max(PAGE_LIMIT.max, `limit must be between 1 and ${PAGE_LIMIT.max}`)
  .optional()
  .describe(`Page size, 1 to ${PAGE_LIMIT.max} (default ${PAGE_LIMIT.default}).`);
const cursor = z.string().min(1).max(512).optional().describe('next_cursor of the previous page.');

export const membersQuerySchema = z.strictObject({ limit, cursor }).meta({ id: 'MembersQuery' });

export const memberPageSchema = z
  .object({
    segment_id: z.string(),
    profile_ids: z.array(z.string()),
    next_cursor: z.string().nullable().describe('Pass back as cursor for the next page; null on the last page.'),
  })
  .meta({ id: 'SegmentMemberPage', description: 'Profile ids of a segment in ascending id order (keyset-paginated).' });

/** An event type a subscription names, or `all`: generated clients get the list as an enum. */
const subscribedEvent = z.enum(['all', ...EVENT_TYPES], {
  error: (issue) => `unknown event type ${JSON.stringify(issue.input)}; known: ${EVENT_TYPES.join(', ')}, or all`,
});
const subscribedEvents = z.array(subscribedEvent).min(1).max(50);

export const webhookCreateSchema = z
  .strictObject({
    url: destinationUrlSchema,
    events: subscribedEvents.describe('Event types, or ["all"].'),
    secret: destinationSecretSchema.optional(),
    signing_mode: signingModeSchema.optional(),
    description: destinationDescriptionSchema.optional(),
  })
  .meta({ id: 'WebhookCreate' });

export const webhookUpdateSchema = z
  .strictObject({
    url: destinationUrlSchema.optional(),
    events: subscribedEvents.optional().describe('Event types, or ["all"].'),
    secret: destinationSecretSchema
      .nullable()
      .optional()
      .describe('A new secret, in effect at once (rotate-secret keeps the old one valid for a grace period), or null to remove it (not in standard mode).'),
    signing_mode: signingModeSchema.optional(),
    enabled: z.boolean().optional(),
    description: destinationDescriptionSchema.nullable().optional(),
  })
  .meta({ id: 'WebhookUpdate' });

export const webhookRotateSchema = z
  .strictObject({
    secret: destinationSecretSchema
      .optional()
      .describe('The new secret (default: whsec_ and 32 random bytes in base64); whsec_<base64> in standard mode.'),
    grace_period_seconds: gracePeriodSecondsSchema.optional(),
  })
  .meta({ id: 'WebhookSecretRotate' });

export const webhookSchema = publicDestinationSchema
  .meta({ id: 'Webhook', description: 'A webhook subscription owned by the calling key. The secret is never returned.' });

export const webhookListSchema = z.object({ webhooks: z.array(webhookSchema) }).meta({ id: 'WebhookList', description: 'The webhook subscriptions of the calling key.' });

export const deliveriesQuerySchema = z
  .strictObject({ limit, failed: z.enum(['true', 'false']).optional().describe('true: failed attempts only.') })
  .meta({ id: 'DeliveriesQuery' });

/** One attempt as the REST API shows it: the domain's attempt view without ids of the log, the site or the destination. */
export const deliveryLogEntrySchema = attemptViewSchema.pick({
  at: true,
  delivery_id: true,
  event: true,
  kind: true,
  attempt: true,
  ok: true,
  status: true,
  latency_ms: true,
  error_class: true,
  message: true,
});

export const deliveryLogSchema = z
  .object({ deliveries: z.array(deliveryLogEntrySchema) })
  .meta({ id: 'WebhookDeliveryLog', description: 'The newest `limit` attempts of the subscription, oldest first.' });

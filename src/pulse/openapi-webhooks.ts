import type { z } from 'zod';
import { CATALOGUE, EVENT_TYPES, type EventType } from '../webhooks/catalogue.js';
import { ATTEMPT_TIMEOUT_MS } from '../outbound/sender.js';
import { configSchema } from '../config.js';
import { idOf, ref, type JsonSchema } from './openapi-schemas.js';

/** The payload schemas of every event type: components of openapi.json. */
export const WEBHOOK_PAYLOAD_SCHEMAS: readonly z.ZodType[] = EVENT_TYPES.map((t) => CATALOGUE[t].schema);

const parameterRef = (name: string) => ({ $ref: `#/components/parameters/${name}` });

/** Headers every delivery carries, as reusable header parameters. */
export const WEBHOOK_HEADER_PARAMETERS: Record<string, JsonSchema> = {
  SignatureHeader: {
    name: 'X-SVC-Signature',
    in: 'header',
    required: true,
    description:
      "Lowercase hex HMAC-SHA256 of the exact raw body bytes, keyed by the destination's secret (by the site_id when it has none). Verify it, in constant time, before trusting the body.",
    schema: { type: 'string', pattern: '^[0-9a-f]{64}$' },
  },
  DeliveryHeader: {
    name: 'X-SVC-Delivery',
    in: 'header',
    required: true,
    description: 'The delivery id: the same on every retry and replay of one delivery, so de-duplicate on it (a test send from `svc webhooks test` has a test_ id).',
    schema: { type: 'string', minLength: 1, maxLength: 128 },
  },
  UserAgentHeader: {
    name: 'User-Agent',
    in: 'header',
    required: true,
    description: 'svc-webhooks/<version> followed by a comment.',
    schema: { type: 'string', pattern: '^svc-webhooks/' },
  },
};

/** An operationId-safe name of an event type: `profile.identified` → `profileIdentified`. */
function camel(type: string): string {
  return type.replace(/[._]([a-z])/g, (_m, c: string) => c.toUpperCase());
}

/** The default retry delays, as configured (`5s,5m,...` → `5s, 5m, ... and 10h`). */
const retryDelays = configSchema.shape.webhookRetrySchedule.parse(undefined).split(',').join(', ').replace(/, ([^,]+)$/, ' and $1');

const DELIVERY_RULES = [
  `svc POSTs the JSON payload with Content-Type: application/json and waits ${ATTEMPT_TIMEOUT_MS / 1000} s in all for the answer (connect, headers and body).`,
  `Only a 2xx acknowledges the delivery; any other status, a redirect (never followed) or no complete answer in time is a failed attempt, logged in the integration health log and retried (by default after ${retryDelays}, each with ±20 % jitter; SVC_WEBHOOK_RETRY_SCHEDULE), then failed for good and replayable.`,
  'Delivery is at least once: a retry or replay carries the same X-SVC-Delivery. Deliveries of one destination may arrive out of order.',
].join(' ');

/**
 * OpenAPI 3.1's top-level `webhooks`: what svc sends, one entry per event type
 * of the catalogue (the same zod schemas validate every payload before it is
 * queued), with the headers of a delivery and the catalogue's example.
 */
export function webhookOperations(): Record<string, JsonSchema> {
  const out: Record<string, JsonSchema> = {};
  for (const type of EVENT_TYPES) out[type] = { post: operation(type) };
  return out;
}

function operation(type: EventType): JsonSchema {
  const def = CATALOGUE[type];
  return {
    operationId: `${camel(type)}Event`,
    summary: `${type}: ${def.description}`,
    description: `${def.description} ${def.personalData ? 'The payload carries personal data (profile.email).' : 'The payload carries no personal data.'}\n\n${DELIVERY_RULES}`,
    tags: ['events'],
    security: [],
    parameters: [
      parameterRef('SignatureHeader'),
      {
        name: 'X-SVC-Event',
        in: 'header',
        required: true,
        description: 'The event type; equal to the payload\'s `event` field.',
        schema: { type: 'string', const: type },
      },
      parameterRef('DeliveryHeader'),
      parameterRef('UserAgentHeader'),
    ],
    requestBody: {
      required: true,
      description: `The ${type} payload.`,
      content: { 'application/json': { schema: ref(idOf(def.schema)), example: def.example } },
    },
    responses: {
      '2XX': { description: 'Acknowledged: the delivery is done. The body is ignored (its first 1 KiB is logged).' },
      '4XX': { description: 'Refused (for example 401 for a signature that does not verify): a failed attempt, retried.' },
      '5XX': { description: 'The receiver failed: a failed attempt, retried.' },
    },
  };
}

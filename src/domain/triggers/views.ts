import { z } from 'zod';
import type { FireRow, TriggerEndpointRow, TriggerRow } from '../../store/triggers.js';
import { iso } from '../time.js';
import { TRIGGER_KINDS } from './rules.js';
import { quietHoursOf } from './service.js';
import { isoInZone } from './zoned.js';

export const HOUR = 3_600_000;

/** A trigger as tools show it. */
export const triggerViewSchema = z.object({
  id: z.string().describe('Trigger id (trg_...).'),
  name: z.string().describe('Name.'),
  on: z
    .object({
      kind: z.enum(TRIGGER_KINDS).describe('segment_entered, event or score.'),
      segment_id: z.string().nullable().describe('segment_entered: the segment.'),
      event_type: z.string().nullable().describe('event: the event type.'),
      min_score: z.number().nullable().describe('score: the threshold a score reaches.'),
    })
    .describe('What fires it.'),
  message_id: z.string().describe("The message template id the customer's mailer sends."),
  message_values: z.record(z.string(), z.unknown()).meta({ additionalProperties: true }).describe('Fixed template values sent with every fire.'),
  include_email: z.boolean().describe("Whether the message POST carries the profile's email."),
  cap: z.object({ count: z.number().int(), window_hours: z.number() }).describe('At most count fires per profile within window_hours.'),
  quiet_hours: z.object({ start: z.string(), end: z.string() }).nullable().describe("Local quiet hours in the site's time zone; fires due in them are deferred to their end."),
  enabled: z.boolean().describe('Whether it fires.'),
  capped_count: z.number().int().describe('Fires the frequency cap has suppressed.'),
  created_by: z.string().describe('Who created it.'),
  created_at: z.string().describe('When.'),
  updated_at: z.string().describe('Last change.'),
});
export type TriggerView = z.input<typeof triggerViewSchema>;

export function triggerView(t: TriggerRow): TriggerView {
  return {
    id: t.id,
    name: t.name,
    on: {
      kind: t.on_kind,
      segment_id: t.on_kind === 'segment_entered' ? t.on_value : null,
      event_type: t.on_kind === 'event' ? t.on_value : null,
      min_score: t.on_kind === 'score' ? t.score_min : null,
    },
    message_id: t.message_id,
    message_values: JSON.parse(t.message_values) as Record<string, unknown>,
    include_email: t.include_email === 1,
    cap: { count: t.cap_count, window_hours: t.cap_window_ms / HOUR },
    quiet_hours: quietHoursOf(t),
    enabled: t.enabled === 1,
    capped_count: Number(t.capped_count),
    created_by: t.created_by,
    created_at: iso(t.created_at)!,
    updated_at: iso(t.updated_at)!,
  };
}

export const FIRE_STATES = ['pending', 'delivered', 'failed', 'cancelled'] as const;

/** A fire (one message of a trigger to one profile) as tools show it. */
export const fireViewSchema = z.object({
  id: z.string().describe('Fire id (stable across delivery attempts; the X-SVC-Delivery header).'),
  trigger_id: z.string().describe('The trigger.'),
  profile_id: z.string().describe('The profile messaged.'),
  mode: z.enum(['live', 'test']).describe('live (the live endpoint) or test (the test endpoint).'),
  reason: z.string().describe('segment_entered, event, score, manual or test.'),
  state: z.enum(FIRE_STATES).describe('pending (due, deferred or retrying), delivered, failed (gave up), cancelled (trigger disabled).'),
  deferred: z.boolean().describe('Whether quiet hours deferred it.'),
  due_at: z.string().describe('When it is (was) due, ISO 8601 UTC.'),
  due_local: z.string().describe("Due time in the site's time zone."),
  attempts: z.number().int().describe('Delivery attempts made.'),
  next_attempt_at: z.string().nullable().describe('Next attempt (pending only).'),
  last_status: z.number().int().nullable().describe('HTTP status of the last attempt.'),
  last_error: z.string().nullable().describe('Error of the last failed attempt.'),
  created_by: z.string().describe('Who or what created it.'),
  created_at: z.string().describe('When it was created.'),
  delivered_at: z.string().nullable().describe('When the endpoint answered 2xx.'),
});
export type FireView = z.input<typeof fireViewSchema>;

/** A fire with its due time also shown in `tz`, the site's time zone. */
export function fireView(f: FireRow, tz: string): FireView {
  return {
    id: f.id,
    trigger_id: f.trigger_id,
    profile_id: f.profile_id,
    mode: f.mode,
    reason: f.reason,
    state: f.state,
    deferred: f.deferred === 1,
    due_at: iso(f.due_at)!,
    due_local: isoInZone(f.due_at, tz),
    attempts: f.attempts,
    next_attempt_at: f.state === 'pending' ? iso(f.next_attempt_at) : null,
    last_status: f.last_status,
    last_error: f.last_error,
    created_by: f.created_by,
    created_at: iso(f.created_at)!,
    delivered_at: iso(f.delivered_at),
  };
}

/** The site's trigger endpoints; the secret is never shown. */
export const endpointViewSchema = z.object({
  url: z.string().nullable().describe('The live endpoint messages are POSTed to.'),
  has_secret: z.boolean().describe('Whether a signing secret is set (never shown).'),
  test_url: z.string().nullable().describe('The test endpoint of triggers_test_fire.'),
  updated_by: z.string().describe('Who set it.'),
  updated_at: z.string().describe('When.'),
});
export type EndpointView = z.input<typeof endpointViewSchema>;

export function endpointView(e: TriggerEndpointRow): EndpointView {
  return { url: e.url, has_secret: e.secret_enc !== null, test_url: e.test_url, updated_by: e.updated_by, updated_at: iso(e.updated_at)! };
}

/** What disabling a trigger did. */
export const disabledTriggerSchema = z.object({ trigger: triggerViewSchema.describe('The trigger.'), cancelled_fires: z.number().int().describe('Pending fires cancelled.') });
export type DisabledTrigger = z.input<typeof disabledTriggerSchema>;

/** What deleting a trigger did. */
export const deletedTriggerSchema = z.object({ deleted: z.boolean().describe('Whether the trigger existed.'), fires_deleted: z.number().int().describe('Fires deleted with it.') });
export type DeletedTrigger = z.input<typeof deletedTriggerSchema>;

/** A test fire and how the test endpoint answered. */
export const testFireResultSchema = z.object({
  fire: fireViewSchema.describe('The test fire.'),
  ok: z.boolean().describe('Whether the test endpoint answered 2xx.'),
  status: z.number().int().nullable().describe('Its HTTP status.'),
  error: z.string().nullable().describe('What went wrong.'),
  latency_ms: z.number().int().describe('Round trip in ms.'),
});
export type TestFireResult = z.input<typeof testFireResultSchema>;

/** Fires of the site and its time zone. */
export const fireListSchema = z.object({ fires: z.array(fireViewSchema).describe('The fires.'), timezone: z.string().describe("The site's time zone.") });
export type FireList = z.input<typeof fireListSchema>;

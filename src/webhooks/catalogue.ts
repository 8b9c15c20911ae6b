import { z } from 'zod';
import { type EventDefinition } from './events/define.js';
import { abandonCart, addToCart, click, conversion, pageview, profileIdentified, segmentChanged } from './events/visitors.js';
import { callCompleted, leadCaptured, triggerFired } from './events/pipeline.js';
import {
  experimentEnded,
  experimentGuardrailPaused,
  experimentShipped,
  variantWatchdogDisabled,
} from './events/experiments.js';
import { crawlCompleted, generationFinished } from './events/content.js';
import { campaignClosed, campaignLaunched, campaignPaused, stallFound } from './events/campaigns.js';

/** Every webhook event type, in the order of SPEC.md. Each is individually subscribable. */
export const EVENT_TYPES = [
  'profile.identified',
  'segment.changed',
  'conversion',
  'add_to_cart',
  'abandon_cart',
  'pageview',
  'click',
  'experiment.ended',
  'experiment.shipped',
  'experiment.guardrail_paused',
  'variant.watchdog_disabled',
  'trigger.fired',
  'lead.captured',
  'call.completed',
  'generation.finished',
  'crawl.completed',
  'campaign.launched',
  'campaign.paused',
  'campaign.closed',
  'stall.found',
] as const;

/** A webhook event type. */
export type EventType = (typeof EVENT_TYPES)[number];

/**
 * The event catalogue: per event type its payload schema (a strict zod object
 * whose `event` field is the type literal), a one-line description, whether
 * the payload carries personal data (only profile.identified does: its
 * `profile.email`) and an example payload that validates.
 */
export const CATALOGUE = {
  'profile.identified': profileIdentified,
  'segment.changed': segmentChanged,
  conversion,
  add_to_cart: addToCart,
  abandon_cart: abandonCart,
  pageview,
  click,
  'experiment.ended': experimentEnded,
  'experiment.shipped': experimentShipped,
  'experiment.guardrail_paused': experimentGuardrailPaused,
  'variant.watchdog_disabled': variantWatchdogDisabled,
  'trigger.fired': triggerFired,
  'lead.captured': leadCaptured,
  'call.completed': callCompleted,
  'generation.finished': generationFinished,
  'crawl.completed': crawlCompleted,
  'campaign.launched': campaignLaunched,
  'campaign.paused': campaignPaused,
  'campaign.closed': campaignClosed,
  'stall.found': stallFound,
} as const satisfies { readonly [T in EventType]: EventDefinition<z.ZodType<{ event: T }>> };

/** The payload type of an event type. */
export type EventPayload<T extends EventType> = z.output<(typeof CATALOGUE)[T]['schema']>;

const eventTypeSet: ReadonlySet<string> = new Set(EVENT_TYPES);

/** Whether `s` names an event type of the catalogue. */
export function isEventType(s: unknown): s is EventType {
  return typeof s === 'string' && eventTypeSet.has(s);
}

/**
 * Validates a payload against the schema of its event type (zod `safeParse`).
 * An unknown event type yields a failed result, never an exception.
 *
 * @example
 * const r = validatePayload('lead.captured', JSON.parse(body));
 * if (!r.success) console.error(z.prettifyError(r.error));
 */
export function validatePayload<T extends EventType>(type: T, payload: unknown): z.ZodSafeParseResult<EventPayload<T>> {
  if (!isEventType(type)) {
    const error = new z.ZodError([
      { code: 'custom', path: ['event'], message: `unknown event type ${JSON.stringify(type)}`, input: type },
    ]);
    return { success: false, error } as z.ZodSafeParseResult<EventPayload<T>>;
  }
  const schema: z.ZodType = CATALOGUE[type].schema;
  return schema.safeParse(payload) as z.ZodSafeParseResult<EventPayload<T>>;
}

/** The example payload of `type` for site `siteId`, stamped now (what `svc webhooks test` sends). */
export function samplePayload<T extends EventType>(type: T, siteId: string): EventPayload<T> {
  const example = structuredClone(CATALOGUE[type].example) as EventPayload<T>;
  return { ...example, site_id: siteId, timestamp: new Date().toISOString() };
}

import type { z } from 'zod';
import type { lineItemSchema } from './schemas.js';
import { isoTime } from '../iso-time.js';

/**
 * Webhook payloads written to the outbox by the ingestion operations. Their
 * shapes are validated by the event catalogue in src/webhooks/.
 */
/** A line item of a conversion, as its request schema validated it. */
export type LineItem = z.infer<typeof lineItemSchema>;

export function profileIdentifiedPayload(p: {
  siteId: string;
  visitorId: string | null;
  sessionId: string | null;
  email: string | null;
  externalId: string | null;
  segment: string | null;
  at: number;
}) {
  return {
    event: 'profile.identified' as const,
    site_id: p.siteId,
    visitor_id: p.visitorId ?? '',
    session_id: p.sessionId ?? '',
    profile: { email: p.email ?? '', external_id: p.externalId ?? '' },
    segment: p.segment ?? '',
    timestamp: new Date(p.at).toISOString(),
  };
}

export function conversionPayload(p: {
  siteId: string;
  conversionId: string;
  profileId: string;
  sessionId: string;
  visitorId: string | null;
  revenue: number | null;
  currency: string;
  lineItems: LineItem[];
  at: number;
}) {
  return {
    event: 'conversion' as const,
    site_id: p.siteId,
    conversion_id: p.conversionId,
    profile_id: p.profileId,
    session_id: p.sessionId,
    visitor_id: p.visitorId ?? '',
    revenue: p.revenue,
    currency: p.currency,
    line_items: p.lineItems,
    timestamp: new Date(p.at).toISOString(),
  };
}

export function leadCapturedPayload(p: {
  siteId: string;
  leadId: string;
  formId: string;
  kind: 'lead_form' | 'optin';
  profileId: string;
  workable: boolean;
  at: number;
}) {
  return {
    event: 'lead.captured' as const,
    site_id: p.siteId,
    lead_id: p.leadId,
    form_id: p.formId,
    kind: p.kind,
    profile_id: p.profileId,
    workable: p.workable,
    timestamp: new Date(p.at).toISOString(),
  };
}

/** Event types that /api/events forwards to the outbox as webhook events of the same name, while an enabled destination of the site subscribes (WebhooksRepo.receives). */
export const BEHAVIOURAL_WEBHOOK_TYPES: ReadonlySet<string> = new Set([
  'pageview',
  'click',
  'add_to_cart',
  'abandon_cart',
]);

/**
 * The ISO 8601 form of a time in ms, remembering the last one: the events of one group commit mostly
 * share their millisecond (received together), so one is formatted per millisecond, not per event.
 */
let lastAt = Number.NaN;
let lastIso = '';
function payloadTime(at: number): string {
  if (at !== lastAt) {
    lastIso = isoTime(at);
    lastAt = at;
  }
  return lastIso;
}

export function behaviouralPayload(p: {
  type: string;
  siteId: string;
  eventId: string;
  profileId: string;
  sessionId: string;
  visitorId: string | null;
  at: number;
  properties: Record<string, unknown>;
}) {
  return {
    event: p.type,
    site_id: p.siteId,
    event_id: p.eventId,
    profile_id: p.profileId,
    session_id: p.sessionId,
    visitor_id: p.visitorId ?? '',
    timestamp: payloadTime(p.at),
    properties: p.properties,
  };
}

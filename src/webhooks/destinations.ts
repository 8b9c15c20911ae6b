import { z } from 'zod';
import { AppError } from '../http/errors.js';
import type { Store } from '../store/store.js';
import type { DestinationRow } from '../store/webhooks.js';
import { EVENT_TYPES, isEventType } from './catalogue.js';

/** Field rules of a destination, shared by the CLI and the profile REST API. */
export const destinationUrlSchema = z.string().min(1).max(2048).describe('Publicly routable http(s) URL.');
export const destinationSecretSchema = z.string().min(8).max(256).describe('Signing secret; without one deliveries are signed with the public site_id.');
export const destinationDescriptionSchema = z.string().max(500);

/** Parses an event subscription list: `all` or a comma-separated list of catalogue event types. */
export function parseEventList(input: string | readonly string[]): string[] {
  const items = (typeof input === 'string' ? input.split(',') : [...input]).map((s) => s.trim()).filter(Boolean);
  if (items.length === 0) throw new AppError('validation_failed', 'events: name at least one event type, or all', { field: 'events' });
  if (items.includes('all')) return ['all'];
  const unknown = items.filter((e) => !isEventType(e));
  if (unknown.length > 0) {
    throw new AppError('validation_failed', `events: unknown event type ${unknown.map((u) => JSON.stringify(u)).join(', ')}; known: ${EVENT_TYPES.join(', ')}, or all`, {
      field: 'events',
      unknown,
    });
  }
  return [...new Set(items)];
}

/** Whether a destination receives events of this type. */
export function subscribes(d: DestinationRow, eventType: string): boolean {
  const events = JSON.parse(d.events) as string[];
  return events.includes('all') || events.includes(eventType);
}

/** The HMAC key of a destination: its secret, or the public site_id when it has none. */
export function signingKey(store: Store, d: DestinationRow): string {
  return d.secret_enc ? store.secrets.open(d.secret_enc) : d.site_id;
}

/** Refuses a destination URL that is not http(s) or not publicly routable (unless private ones are allowed). */
export async function validateDestinationUrl(url: string, allowPrivate: boolean): Promise<string> {
  const { checkDestinationUrl } = await import('./guard.js'); // undici loads only when needed
  const check = await checkDestinationUrl(url, { allowPrivate });
  if (!check.ok) throw new AppError('destination_refused', `url: ${check.reason}`, { field: 'url' });
  return check.url.toString();
}

export interface DestinationView {
  id: string;
  site_id: string;
  url: string;
  events: string[];
  has_secret: boolean;
  enabled: boolean;
  disabled_reason: string | null;
  description: string | null;
  created_at: string;
  updated_at: string;
}

/** A destination as API clients (REST and MCP) see it: no site_id, never the secret. */
export const publicDestinationSchema = z.object({
  id: z.string(),
  url: z.string(),
  events: z.array(z.string()),
  has_secret: z.boolean(),
  enabled: z.boolean(),
  disabled_reason: z.string().nullable(),
  description: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

export function publicDestinationView(d: DestinationRow): z.infer<typeof publicDestinationSchema> {
  const { site_id: _site, ...rest } = destinationView(d);
  return rest;
}

/** A destination as shown to operators and API clients: the secret is never shown back. */
export function destinationView(d: DestinationRow): DestinationView {
  return {
    id: d.id,
    site_id: d.site_id,
    url: d.url,
    events: JSON.parse(d.events) as string[],
    has_secret: d.secret_enc !== null,
    enabled: d.enabled === 1,
    disabled_reason: d.disabled_reason,
    description: d.description,
    created_at: new Date(d.created_at).toISOString(),
    updated_at: new Date(d.updated_at).toISOString(),
  };
}

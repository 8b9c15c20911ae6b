import type { z } from 'zod';
import { AppError } from '../errors/app-error.js';
import type { Store } from '../store/store.js';
import { findProfile, profileSnapshot, type FoundProfile, type LookupKind } from '../domain/profiles/service.js';
import { liveSegment, segmentMembers } from '../domain/profiles/query.js';
import { createDestination, findDestination, listDestinations, removeDestination, rotateSecret, updateDestination, type DestinationOwner } from '../domain/webhooks/destinations.js';
import { publicDestination, type DestinationView } from '../domain/webhooks/views.js';
import { attemptLog, pickView } from '../domain/webhooks/attempts.js';
import type { CallerKey } from './auth.js';
import { requireScope } from './auth.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { deliveryLogEntrySchema, LOOKUP_KEYS, PAGE_LIMIT, type webhookCreateSchema, type webhookRotateSchema, type webhookUpdateSchema } from './schemas.js';
import { queryProfiles } from './query.js';

export interface PulseDeps {
  store: Store;
  allowPrivateDestinations: boolean;
  rateLimit: boolean;
}

export interface HandlerInput {
  key: CallerKey;
  query: Record<string, unknown>;
  body: unknown;
  params: Record<string, string>;
}

type Handler = (deps: PulseDeps, input: HandlerInput) => unknown;

/** A key reaches the subscriptions it made, in its site. */
const keyOwner = (key: CallerKey): DestinationOwner => ({ siteId: key.siteId, apiKeyId: key.id });

const noWebhook = (id: string | undefined) => new AppError('not_found', `no webhook subscription ${id ?? ''} for this key`);

async function ownWebhook(deps: PulseDeps, key: CallerKey, id: string | undefined): Promise<DestinationView> {
  const d = id ? await findDestination(deps.store, id, keyOwner(key)) : undefined;
  if (!d) throw noWebhook(id);
  return d;
}

/**
 * What GET /profile asks for: exactly one identifier (400), include_pii=true only with the pii scope (403), and
 * whether its snapshot holds plaintext personal data.
 */
export function profileLookup(key: CallerKey, query: Record<string, unknown>): { kind: LookupKind; value: string; pii: boolean } {
  const given: (typeof LOOKUP_KEYS)[number][] = [];
  for (const k of LOOKUP_KEYS) if (query[k] !== undefined) given.push(k);
  if (given.length !== 1) {
    throw new AppError(
      'bad_request',
      given.length === 0 ? `give exactly one of ${LOOKUP_KEYS.join(', ')}` : `give exactly one identifier, not ${given.join(' and ')}`,
      { field: given.length === 0 ? LOOKUP_KEYS.join('|') : given.join('|') },
    );
  }
  const wantsPii = query.include_pii === 'true';
  if (wantsPii) requireScope(key, 'profile:read:pii', 'include_pii=true');
  const pii = query.include_pii === 'false' ? false : key.scopes.has('profile:read:pii');
  const kind = given[0]! as LookupKind;
  return { kind, value: String(query[kind]), pii };
}

/** GET /profile's 404: no profile of the key's site matches the identifier. */
export const noProfile = (kind: LookupKind): AppError => new AppError('not_found', `no profile matches ${kind}`, { field: kind });

/**
 * The profile GET /profile names, and whether its snapshot holds plaintext
 * personal data (profileLookup's checks, then a profile of the key's site: 404).
 */
export async function lookUpProfile(store: Store, key: CallerKey, query: Record<string, unknown>): Promise<{ profile: FoundProfile; pii: boolean }> {
  const { kind, value, pii } = profileLookup(key, query);
  const profile = await findProfile(store, key.siteId, kind, value);
  if (!profile) throw noProfile(kind);
  return { profile, pii };
}

/** Handlers of ROUTES, by operationId. */
export const HANDLERS: Record<string, Handler> = {
  getProfile: async ({ store }, { key, query }) => {
    const { profile, pii } = await lookUpProfile(store, key, query);
    return profileSnapshot(store, profile, pii);
  },

  listSegmentMembers: async ({ store }, { key, query, params }) => {
    // A draft segment (awaiting approval under propose-only) does not exist for the profile REST API.
    const segment = await liveSegment(store, key.siteId, params.segmentId ?? '');
    if (!segment) throw new AppError('not_found', `no segment ${params.segmentId ?? ''}`, { field: 'segmentId' });
    const limit = (query.limit as number | undefined) ?? PAGE_LIMIT.default;
    const cursor = decodeCursor(query.cursor as string | undefined);
    if (cursor && cursor.segment !== segment.id) throw new AppError('bad_request', 'cursor belongs to another segment', { field: 'cursor' });
    const page = await segmentMembers(store, segment.id, { afterId: (cursor?.after as string | undefined) ?? '', limit });
    return {
      segment_id: segment.id,
      profile_ids: page.ids,
      next_cursor: page.more ? encodeCursor({ segment: segment.id, after: page.ids[page.ids.length - 1]! }) : null,
    };
  },

  queryProfiles: (deps, { key, body }) => queryProfiles(deps.store, key, body as { rule: unknown; limit?: number; cursor?: string }),

  listWebhooks: async ({ store }, { key }) => ({
    webhooks: (await listDestinations(store, keyOwner(key))).map(publicDestination),
  }),

  createWebhook: async (deps, { key, body }) => {
    const b = body as z.infer<typeof webhookCreateSchema>;
    const created = await createDestination(
      deps.store,
      { siteId: key.siteId, url: b.url, events: b.events, secret: b.secret, signingMode: b.signing_mode, description: b.description, apiKeyId: key.id },
      { allowPrivate: deps.allowPrivateDestinations },
    );
    return publicDestination(created);
  },

  getWebhook: async (deps, { key, params }) => publicDestination(await ownWebhook(deps, key, params.webhookId)),

  updateWebhook: async (deps, { key, params, body }) => {
    const b = body as z.infer<typeof webhookUpdateSchema>;
    const updated = await updateDestination(
      deps.store,
      { id: params.webhookId ?? '', owner: keyOwner(key) },
      { url: b.url, events: b.events, secret: b.secret, signingMode: b.signing_mode, enabled: b.enabled, description: b.description },
      { allowPrivate: deps.allowPrivateDestinations },
    );
    return publicDestination(updated);
  },

  rotateWebhookSecret: async (deps, { key, params, body }) => {
    const b = body as z.infer<typeof webhookRotateSchema>;
    return rotateSecret(deps.store, { id: params.webhookId ?? '', owner: keyOwner(key) }, { secret: b.secret, gracePeriodSeconds: b.grace_period_seconds });
  },

  deleteWebhook: async (deps, { key, params }) => {
    const id = params.webhookId;
    if (!id || !(await removeDestination(deps.store, id, keyOwner(key)))) throw noWebhook(id);
    return null;
  },

  listWebhookDeliveries: async (deps, { key, params, query }) => {
    const d = await ownWebhook(deps, key, params.webhookId);
    const views = await attemptLog(deps.store, {
      destinationId: d.id,
      failedOnly: query.failed === 'true',
      limit: (query.limit as number | undefined) ?? PAGE_LIMIT.default,
    });
    return { deliveries: views.map((v) => pickView(v, deliveryLogEntrySchema)) };
  },
};


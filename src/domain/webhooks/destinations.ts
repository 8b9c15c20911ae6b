import { z } from 'zod';
import { AppError } from '../../errors/app-error.js';
import type { Repos } from '../../store/repos.js';
import type { Store } from '../../store/store.js';
import type { DestinationRow } from '../../store/webhooks.js';
import { destinationSecretSchema, parseEventList, validateDestinationUrl } from '../../webhooks/destinations.js';
import { destinationView, publicDestinationSchema, publicDestinationView, type DestinationView } from './views.js';
import { sealedEndpointKey, type SigningMode } from '../../outbound/signer.js';
import { generateSecret, isNewStandardSecret, STANDARD_KEY_BYTES } from '../../outbound/standard.js';

/** How long the old secret keeps signing after a rotation, unless the caller says otherwise. */
export const DEFAULT_GRACE_SECONDS = 86_400;
export const MAX_GRACE_SECONDS = 7 * 86_400;

export const gracePeriodSecondsSchema = z
  .number()
  .int()
  .min(0)
  .max(MAX_GRACE_SECONDS)
  .describe(
    `Seconds the old secret keeps signing deliveries beside the new one (X-SVC-Signature stays keyed by it, X-SVC-Signature-Next and a second webhook-signature value carry the new one); 0 drops it at once. Default ${DEFAULT_GRACE_SECONDS} (24 h), at most ${MAX_GRACE_SECONDS} (7 days).`,
  );

/** What a rotation answers: the new secret, shown this once, and when the old one stops signing. */
export const secretRotationSchema = z
  .object({
    destination: publicDestinationSchema,
    secret: z.string().describe('The new signing secret. Shown this once; it is never returned again.'),
    previous_secret_expires_at: z
      .string()
      .nullable()
      .describe('Until then deliveries carry a signature by the old secret beside one by the new; null when the old secret was dropped at once.'),
  })
  .meta({ id: 'WebhookSecretRotation', description: 'A rotated webhook secret.' });

export type SecretRotation = z.infer<typeof secretRotationSchema>;

/** Which destinations a caller may reach: every one (CLI), a site's (MCP), or a key's own (REST). */
export interface DestinationOwner {
  siteId?: string | undefined;
  apiKeyId?: string | undefined;
}

const STANDARD_SECRET_RULE = `a standard-mode secret is whsec_ followed by the base64 of ${STANDARD_KEY_BYTES.min} to ${STANDARD_KEY_BYTES.max} random bytes`;

function refuse(field: string, message: string): AppError {
  return new AppError('validation_failed', `${field}: ${message}`, { field });
}

/** The checks a secret given for a destination of `mode` must pass. */
function checkNewSecret(mode: SigningMode, secret: string): void {
  if (!destinationSecretSchema.safeParse(secret).success) throw refuse('secret', 'must be 8 to 256 characters');
  if (mode === 'standard' && !isNewStandardSecret(secret)) throw refuse('secret', STANDARD_SECRET_RULE);
}

function owns(owner: DestinationOwner, d: DestinationRow): boolean {
  return (owner.siteId === undefined || d.site_id === owner.siteId) && (owner.apiKeyId === undefined || d.api_key_id === owner.apiKeyId);
}

/** The destination `id` if `owner` may reach it. */
async function reachable(r: Repos, id: string, owner: DestinationOwner): Promise<DestinationRow | undefined> {
  const d = await r.webhooks.destination(id);
  return d && owns(owner, d) ? d : undefined;
}

async function owned(tx: Repos, id: string, owner: DestinationOwner): Promise<DestinationRow> {
  const d = await reachable(tx, id, owner);
  if (!d) throw new AppError('not_found', `no destination ${id}`, { field: 'id' });
  return d;
}

/** The destinations `owner` may reach, as operator views (API clients present them with publicDestination). */
export async function listDestinations(store: Store, owner: DestinationOwner): Promise<DestinationView[]> {
  return (await store.webhooks.listDestinations({ siteId: owner.siteId, apiKeyId: owner.apiKeyId })).map((d) => destinationView(d));
}

/**
 * One destination `owner` may reach, or undefined: each surface answers a
 * miss with its own not-found (a key's subscription, a site's destination).
 */
export async function findDestination(store: Store, id: string, owner: DestinationOwner): Promise<DestinationView | undefined> {
  const d = await reachable(store, id, owner);
  return d ? destinationView(d) : undefined;
}

/**
 * Removes a destination `owner` may reach: its pending deliveries fail for
 * good, its log stays. False when there is none to remove.
 */
export async function removeDestination(store: Store, id: string, owner: DestinationOwner): Promise<boolean> {
  return store.write(async (tx) => {
    const d = await reachable(tx, id, owner);
    if (!d) return false;
    await tx.webhooks.removeDestination(d.id);
    return true;
  });
}

export interface NewDestination {
  siteId: string;
  url: string;
  events: string | readonly string[];
  secret?: string | undefined;
  description?: string | null | undefined;
  signingMode?: SigningMode | undefined;
  /** The REST key that owns it (key-scoped subscriptions). */
  apiKeyId?: string | undefined;
}

/**
 * Adds a destination. The URL must be publicly routable (unless private ones
 * are allowed); a standard-mode destination needs a `whsec_` secret.
 */
export async function createDestination(store: Store, input: NewDestination, opts: { allowPrivate: boolean }): Promise<DestinationView> {
  const events = parseEventList(input.events);
  const mode = input.signingMode ?? 'svc';
  if (mode === 'standard' && input.secret === undefined) {
    throw refuse('secret', `a destination without a secret cannot use signing_mode standard (${STANDARD_SECRET_RULE})`);
  }
  if (input.secret !== undefined) checkNewSecret(mode, input.secret);
  const url = await validateDestinationUrl(input.url, opts.allowPrivate);
  const secretEnc = input.secret !== undefined ? store.secrets.seal(input.secret) : null;
  const row = await store.write(async (tx) => {
    if (!(await tx.sites.get(input.siteId))) throw new AppError('not_found', `no site ${input.siteId}`, { field: 'site' });
    return tx.webhooks.createDestination({
      siteId: input.siteId,
      url,
      secretEnc,
      events,
      description: input.description ?? null,
      apiKeyId: input.apiKeyId ?? null,
      signingMode: mode,
    });
  });
  return destinationView(row);
}

export interface DestinationChange {
  url?: string | undefined;
  events?: string | readonly string[] | undefined;
  /** A new secret (replaces the current one at once, ending any rotation's grace period), or null to remove it. */
  secret?: string | null | undefined;
  enabled?: boolean | undefined;
  description?: string | null | undefined;
  signingMode?: SigningMode | undefined;
}

/**
 * Changes a destination. Enabling clears its failure streak and logs who did
 * it; a secret set or removed here takes effect at once (rotateSecret keeps the
 * old one valid for a while instead). A standard-mode destination keeps a secret.
 */
export async function updateDestination(
  store: Store,
  ref: { id: string; owner: DestinationOwner },
  change: DestinationChange,
  opts: { allowPrivate: boolean },
): Promise<DestinationView> {
  const events = change.events !== undefined ? parseEventList(change.events) : undefined;
  const url = change.url !== undefined ? await validateDestinationUrl(change.url, opts.allowPrivate) : undefined;
  const secretEnc = typeof change.secret === 'string' ? store.secrets.seal(change.secret) : change.secret;
  const row = await store.write(async (tx) => {
    const d = await owned(tx, ref.id, ref.owner);
    const mode = change.signingMode ?? d.signing_mode;
    const hasSecret = change.secret !== undefined ? change.secret !== null : d.secret_enc !== null;
    if (mode === 'standard' && !hasSecret) {
      throw refuse('secret', `a destination without a secret cannot use signing_mode standard (${STANDARD_SECRET_RULE})`);
    }
    if (typeof change.secret === 'string') checkNewSecret(mode, change.secret);
    const updated = (await tx.webhooks.updateDestination(d.id, {
      ...(url !== undefined ? { url } : {}),
      ...(events !== undefined ? { events } : {}),
      ...(secretEnc !== undefined ? { secretEnc, previous: null } : {}),
      ...(change.signingMode !== undefined ? { signingMode: change.signingMode } : {}),
      ...(change.enabled !== undefined ? { enabled: change.enabled } : {}),
      ...(change.description !== undefined ? { description: change.description } : {}),
    }))!;
    if (change.enabled === true) {
      await tx.webhooks.log({
        site_id: updated.site_id,
        integration: 'webhook',
        destination_id: d.id,
        delivery_id: null,
        event_type: null,
        kind: 'enabled',
        attempt: null,
        ok: true,
        status: null,
        latency_ms: null,
        error_class: null,
        message: 'enabled by an operator',
        response_excerpt: null,
        created_at: Date.now(),
      });
    }
    return updated;
  });
  return destinationView(row);
}

/**
 * Rotates a destination's secret with no lost deliveries: the new secret
 * (given, or `whsec_` + 32 random bytes) signs every delivery from now on, and
 * for `gracePeriodSeconds` the old one signs beside it (X-SVC-Signature stays
 * keyed by the old secret, X-SVC-Signature-Next carries the new; in standard
 * mode webhook-signature holds both values), so receivers that know either
 * secret accept every delivery. A destination without a secret was signed with
 * its site_id, which plays the old secret. The old secret is never shown; the
 * new one is shown in the answer only. A second rotation while one is in its
 * grace period is refused unless it drops the old secret at once (grace 0).
 */
export async function rotateSecret(
  store: Store,
  ref: { id: string; owner: DestinationOwner },
  input: { secret?: string | undefined; gracePeriodSeconds?: number | undefined },
  now = Date.now(),
): Promise<SecretRotation> {
  const grace = input.gracePeriodSeconds ?? DEFAULT_GRACE_SECONDS;
  const checked = gracePeriodSecondsSchema.safeParse(grace);
  if (!checked.success) throw refuse('grace_period_seconds', `a whole number of seconds from 0 to ${MAX_GRACE_SECONDS} (7 days)`);
  const secret = input.secret ?? generateSecret();
  const row = await store.write(async (tx) => {
    const d = await owned(tx, ref.id, ref.owner);
    if (input.secret !== undefined) checkNewSecret(d.signing_mode, input.secret);
    const current = d.secret_enc !== null ? store.secrets.open(d.secret_enc) : d.site_id;
    if (secret === current) throw refuse('secret', 'the new secret is the current one');
    const running = d.previous_secret_enc !== null && d.previous_secret_expires_at !== null && d.previous_secret_expires_at > now;
    if (running && grace > 0) {
      throw new AppError(
        'conflict',
        `destination ${d.id} is still in the grace period of its last rotation until ${new Date(d.previous_secret_expires_at!).toISOString()}; rotate again after that, or with a grace period of 0 to drop every old secret at once`,
        { field: 'id', previous_secret_expires_at: new Date(d.previous_secret_expires_at!).toISOString() },
      );
    }
    const previous = grace > 0 ? { secretEnc: sealedEndpointKey(store.secrets, d.secret_enc, d.site_id), expiresAt: now + grace * 1000 } : null;
    return (await tx.webhooks.updateDestination(d.id, { secretEnc: store.secrets.seal(secret), previous, secretRotatedAt: now }))!;
  });
  const until = grace > 0 ? now + grace * 1000 : null;
  return {
    destination: publicDestinationView(row, now),
    secret,
    previous_secret_expires_at: until === null ? null : new Date(until).toISOString(),
  };
}

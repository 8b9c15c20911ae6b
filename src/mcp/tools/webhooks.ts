import { z } from 'zod';
import { AppError } from '../../errors/app-error.js';
import { destinationDescriptionSchema, destinationSecretSchema, destinationUrlSchema } from '../../webhooks/destinations.js';
import { signingModeSchema } from '../../outbound/signer.js';
import {
  createDestination,
  findDestination,
  gracePeriodSecondsSchema,
  listDestinations,
  removeDestination,
  rotateSecret,
  secretRotationSchema,
  updateDestination,
} from '../../domain/webhooks/destinations.js';
import { requeueFailedDelivery } from '../../domain/webhooks/deliveries.js';
import { publicDestination, publicDestinationSchema, type DestinationView } from '../../domain/webhooks/views.js';
import { attemptLog, attemptViewSchema, pickView } from '../../domain/webhooks/attempts.js';
import { defineTool, type ToolContext } from '../tool.js';
import { limitInput } from './shared.js';

const area = 'webhooks';

const destinationSchema = publicDestinationSchema;
const view = publicDestination;

const notFound = (id: string) => new AppError('not_found', `no webhook destination ${id}`, { field: 'id' });

async function own(ctx: ToolContext, id: string): Promise<DestinationView> {
  const d = await findDestination(ctx.store, id, { siteId: ctx.grant.siteId });
  if (!d) throw notFound(id);
  return d;
}

const destinationId = z.string().min(1).max(128).describe('Destination id (dst_...).');
const events = z.array(z.string().min(1).max(64)).min(1).max(50).describe('Event types to deliver, or ["all"].');
const secret = destinationSecretSchema.describe('Signing secret (at least 8 characters); never shown back.');

export const webhooksList = defineTool({
  name: 'webhooks_list',
  title: 'List webhook destinations',
  description: 'Every webhook destination of the site; secrets are never shown.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({}),
  output: z.object({ destinations: z.array(destinationSchema) }),
  handler: async (ctx) => ({ destinations: (await listDestinations(ctx.store, { siteId: ctx.grant.siteId })).map(view) }),
});

export const webhooksCreate = defineTool({
  name: 'webhooks_create',
  title: 'Add a webhook destination',
  description:
    'Adds a destination for signed webhook deliveries. The URL must be publicly routable; set a secret, or deliveries are signed with the public site_id. signing_mode standard adds the Standard Webhooks headers and needs a whsec_ secret.',
  area,
  scope: 'write',
  flags: { changesData: true, openWorld: true },
  input: z.object({
    url: destinationUrlSchema,
    events,
    secret: secret.optional(),
    signing_mode: signingModeSchema.optional(),
    description: destinationDescriptionSchema.optional(),
  }),
  output: destinationSchema,
  handler: async (ctx, input) =>
    view(
      await createDestination(
        ctx.store,
        { siteId: ctx.grant.siteId, url: input.url, events: input.events, secret: input.secret, signingMode: input.signing_mode, description: input.description },
        { allowPrivate: ctx.allowPrivateDestinations },
      ),
    ),
});

export const webhooksUpdate = defineTool({
  name: 'webhooks_update',
  title: 'Change a webhook destination',
  description:
    'Changes URL, events, secret, signing mode, description or enabled; enabling also clears the failure streak. A secret set here replaces the old one at once; webhooks_rotate_secret keeps the old one valid for a grace period.',
  area,
  scope: 'write',
  flags: { changesData: true, idempotent: true, openWorld: true },
  input: z.object({
    id: destinationId,
    url: destinationUrlSchema.optional(),
    events: events.optional(),
    secret: secret.nullable().optional().describe('New signing secret; null signs with the site_id again (not recommended; refused in standard mode).'),
    signing_mode: signingModeSchema.optional(),
    enabled: z.boolean().optional(),
    description: destinationDescriptionSchema.nullable().optional(),
  }),
  output: destinationSchema,
  handler: async (ctx, input) =>
    view(
      await updateDestination(
        ctx.store,
        { id: input.id, owner: { siteId: ctx.grant.siteId } },
        {
          url: input.url,
          events: input.events,
          secret: input.secret,
          signingMode: input.signing_mode,
          enabled: input.enabled,
          description: input.description,
        },
        { allowPrivate: ctx.allowPrivateDestinations },
      ),
    ),
});

export const webhooksRotateSecret = defineTool({
  name: 'webhooks_rotate_secret',
  title: 'Rotate a webhook secret',
  description:
    'Gives a destination a new signing secret (generated unless given) and returns it this once. The old secret keeps signing every delivery beside the new one for the grace period (default 24 h), so receivers that know either accept them; it is never shown again.',
  area,
  scope: 'admin',
  flags: { changesData: true, issuesCredentials: true },
  input: z.object({
    id: destinationId,
    secret: secret.optional().describe('The new secret (default: whsec_ and 32 random bytes in base64); whsec_<base64> in standard mode.'),
    grace_period_seconds: gracePeriodSecondsSchema.optional(),
  }),
  output: secretRotationSchema,
  handler: (ctx, input) =>
    rotateSecret(ctx.store, { id: input.id, owner: { siteId: ctx.grant.siteId } }, { secret: input.secret, gracePeriodSeconds: input.grace_period_seconds }),
});

export const webhooksDelete = defineTool({
  name: 'webhooks_delete',
  title: 'Remove a webhook destination',
  description: 'Removes a destination; its pending deliveries fail for good, its deliveries log stays.',
  area,
  scope: 'admin',
  flags: { changesData: true, destructive: true, idempotent: true },
  input: z.object({ id: destinationId }),
  output: z.object({ removed: z.string() }),
  handler: async (ctx, input) => {
    if (!(await removeDestination(ctx.store, input.id, { siteId: ctx.grant.siteId }))) throw notFound(input.id);
    return { removed: input.id };
  },
});

/** One attempt as webhooks_deliveries shows it: the domain's attempt view without the log id, site, message and excerpt. */
const deliveryEntrySchema = attemptViewSchema.pick({
  at: true,
  destination_id: true,
  delivery_id: true,
  event: true,
  kind: true,
  attempt: true,
  ok: true,
  status: true,
  latency_ms: true,
  error_class: true,
});

export const webhooksDeliveries = defineTool({
  name: 'webhooks_deliveries',
  title: 'Webhook deliveries log',
  description: 'Delivery attempts of the site (or one destination), newest last: status, latency and error class.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({
    destination_id: destinationId.optional(),
    failed_only: z.boolean().default(false),
    limit: limitInput(1000, 100),
  }),
  output: z.object({ deliveries: z.array(deliveryEntrySchema) }),
  handler: async (ctx, input) => {
    if (input.destination_id !== undefined) await own(ctx, input.destination_id);
    const views = await attemptLog(ctx.store, {
      siteId: ctx.grant.siteId,
      destinationId: input.destination_id,
      failedOnly: input.failed_only,
      limit: input.limit,
      integration: 'webhook',
    });
    return { deliveries: views.map((v) => pickView(v, deliveryEntrySchema)) };
  },
});

export const webhooksReplay = defineTool({
  name: 'webhooks_replay',
  title: 'Replay a failed delivery',
  description: 'Puts a delivery that failed for good back in the queue; the running dispatcher sends it again with a fresh signature and the same delivery id.',
  area,
  scope: 'write',
  flags: { changesData: true, openWorld: true },
  input: z.object({ delivery_id: z.string().min(1).max(128).describe('Delivery id (dlv_...).') }),
  output: z.object({ delivery_id: z.string(), requeued: z.boolean() }),
  handler: (ctx, input) => requeueFailedDelivery(ctx.store, ctx.grant.siteId, input.delivery_id),
});

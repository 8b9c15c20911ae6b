import { z } from 'zod';
import { AppError } from '../../http/errors.js';
import {
  destinationDescriptionSchema,
  destinationSecretSchema,
  destinationUrlSchema,
  parseEventList,
  publicDestinationSchema,
  publicDestinationView,
  validateDestinationUrl,
} from '../../webhooks/destinations.js';
import type { DestinationRow } from '../../store/webhooks.js';
import { defineTool, type ToolContext } from '../tool.js';
import { iso, limitInput } from './shared.js';

const area = 'webhooks';

const destinationSchema = publicDestinationSchema;
const view = publicDestinationView;

async function own(ctx: ToolContext, id: string): Promise<DestinationRow> {
  const d = await ctx.store.webhooks.destination(id);
  if (!d || d.site_id !== ctx.grant.siteId) throw new AppError('not_found', `no webhook destination ${id}`, { field: 'id' });
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
  handler: async (ctx) => ({ destinations: (await ctx.store.webhooks.listDestinations({ siteId: ctx.grant.siteId })).map(view) }),
});

export const webhooksCreate = defineTool({
  name: 'webhooks_create',
  title: 'Add a webhook destination',
  description: 'Adds a destination for signed webhook deliveries. The URL must be publicly routable; set a secret, or deliveries are signed with the public site_id.',
  area,
  scope: 'write',
  flags: { changesData: true, openWorld: true },
  input: z.object({
    url: destinationUrlSchema,
    events,
    secret: secret.optional(),
    description: destinationDescriptionSchema.optional(),
  }),
  output: destinationSchema,
  handler: async (ctx, input) => {
    const list = parseEventList(input.events);
    const url = await validateDestinationUrl(input.url, ctx.allowPrivateDestinations);
    const secretEnc = input.secret ? ctx.store.secrets.seal(input.secret) : null;
    const row = await ctx.store.write((tx) =>
      tx.webhooks.createDestination({
        siteId: ctx.grant.siteId,
        url,
        secretEnc,
        events: list,
        description: input.description ?? null,
      }),
    );
    return view(row);
  },
});

export const webhooksUpdate = defineTool({
  name: 'webhooks_update',
  title: 'Change a webhook destination',
  description: 'Changes URL, events, secret, description or enabled; enabling also clears the failure streak.',
  area,
  scope: 'write',
  flags: { changesData: true, idempotent: true, openWorld: true },
  input: z.object({
    id: destinationId,
    url: destinationUrlSchema.optional(),
    events: events.optional(),
    secret: secret.nullable().optional().describe('New signing secret; null signs with the site_id again (not recommended).'),
    enabled: z.boolean().optional(),
    description: destinationDescriptionSchema.nullable().optional(),
  }),
  output: destinationSchema,
  handler: async (ctx, input) => {
    const d = await own(ctx, input.id);
    const patch: Parameters<typeof ctx.store.webhooks.updateDestination>[1] = {};
    if (input.url !== undefined) patch.url = await validateDestinationUrl(input.url, ctx.allowPrivateDestinations);
    if (input.events !== undefined) patch.events = parseEventList(input.events);
    if (input.secret !== undefined) patch.secretEnc = input.secret === null ? null : ctx.store.secrets.seal(input.secret);
    if (input.enabled !== undefined) patch.enabled = input.enabled;
    if (input.description !== undefined) patch.description = input.description;
    return view((await ctx.store.write((tx) => tx.webhooks.updateDestination(d.id, patch)))!);
  },
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
    const d = await own(ctx, input.id);
    await ctx.store.write((tx) => tx.webhooks.removeDestination(d.id));
    return { removed: d.id };
  },
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
  output: z.object({
    deliveries: z.array(
      z.object({
        at: z.string(),
        destination_id: z.string(),
        delivery_id: z.string().nullable(),
        event: z.string().nullable(),
        kind: z.string(),
        attempt: z.number().int().nullable(),
        ok: z.boolean(),
        status: z.number().int().nullable(),
        latency_ms: z.number().int().nullable(),
        error_class: z.string().nullable(),
      }),
    ),
  }),
  handler: async (ctx, input) => {
    if (input.destination_id !== undefined) await own(ctx, input.destination_id);
    const rows = await ctx.store.webhooks.healthLog({
      siteId: ctx.grant.siteId,
      destinationId: input.destination_id,
      failedOnly: input.failed_only,
      limit: input.limit,
      integration: 'webhook',
    });
    return {
      deliveries: rows.map((r) => ({
        at: iso(r.created_at)!,
        destination_id: r.destination_id,
        delivery_id: r.delivery_id,
        event: r.event_type,
        kind: r.kind,
        attempt: r.attempt,
        ok: r.ok === 1,
        status: r.status,
        latency_ms: r.latency_ms,
        error_class: r.error_class,
      })),
    };
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
  handler: async (ctx, input) => {
    const d = await ctx.store.webhooks.delivery(input.delivery_id);
    if (!d || d.site_id !== ctx.grant.siteId) throw new AppError('not_found', `no delivery ${input.delivery_id}`, { field: 'delivery_id' });
    if (d.state !== 'failed') throw new AppError('conflict', `delivery ${d.id} is ${d.state}; only failed deliveries are replayed`, { field: 'delivery_id', state: d.state });
    const requeued = await ctx.store.write((tx) => tx.webhooks.requeue(d.id, Date.now()));
    return { delivery_id: d.id, requeued };
  },
});

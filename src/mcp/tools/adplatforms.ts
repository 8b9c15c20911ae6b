import { z } from 'zod';
import { AppError } from '../../errors/app-error.js';
import { addConnection, connectionLog, findConnection, listConnections, removeConnection } from '../../domain/adplatforms/service.js';
import { publicConnection, publicConnectionSchema } from '../../domain/adplatforms/views.js';
import { adAttemptViewSchema, pickView } from '../../domain/webhooks/attempts.js';
import { defineTool, type ToolContext } from '../tool.js';
import { limitInput } from './shared.js';

const area = 'adplatforms';

const notFound = (id: string) => new AppError('not_found', `no ad-platform connection ${id}`, { field: 'id' });

async function own(ctx: ToolContext, id: string): Promise<void> {
  if (!(await findConnection(ctx.store, id, { siteId: ctx.grant.siteId }))) throw notFound(id);
}

const publicSchema = publicConnectionSchema;

export const adplatformsList = defineTool({
  name: 'adplatforms_list',
  title: 'List ad-platform connections',
  description: 'The Meta Conversions API and Google Ads connections every conversion of the site is sent to: settings, and only the names of their credentials.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({}),
  output: z.object({ connections: z.array(publicSchema) }),
  handler: async (ctx) => ({ connections: (await listConnections(ctx.store, ctx.grant.siteId)).map(publicConnection) }),
});

export const adplatformsAdd = defineTool({
  name: 'adplatforms_add',
  title: 'Connect an ad platform',
  description:
    'Connects the site to Meta (settings: pixel_id, optional test_event_code, event_source_url; secrets: access_token) or Google Ads (settings: customer_id, conversion_action_id, optional login_customer_id, merchant_id, feed_country_code, feed_language_code; secrets: developer_token, client_id, client_secret, refresh_token). Credentials are stored encrypted and never shown back.',
  area,
  scope: 'admin',
  flags: { changesData: true, openWorld: true },
  input: z.object({
    platform: z.enum(['meta', 'google_ads']),
    name: z.string().max(200).optional(),
    settings: z.record(z.string(), z.string().max(2048)).describe('Non-secret settings of the platform.'),
    secrets: z.record(z.string(), z.string().max(4096)).describe('Credentials of the platform; never shown back.'),
  }),
  output: publicSchema,
  handler: async (ctx, input) =>
    publicConnection(await addConnection(ctx.store, { siteId: ctx.grant.siteId, platform: input.platform, name: input.name, config: input.settings, secrets: input.secrets })),
});

export const adplatformsRemove = defineTool({
  name: 'adplatforms_remove',
  title: 'Remove an ad-platform connection',
  description: 'Removes a connection; its jobs still pending fail for good, its delivery history stays.',
  area,
  scope: 'admin',
  flags: { changesData: true, destructive: true, idempotent: true },
  input: z.object({ id: z.string().min(1).max(128).describe('Connection id (adm_... or adg_...).') }),
  output: z.object({ id: z.string(), removed: z.boolean() }),
  handler: async (ctx, input) => {
    if (!(await removeConnection(ctx.store, input.id, { siteId: ctx.grant.siteId }))) throw notFound(input.id);
    return { id: input.id, removed: true };
  },
});

/** One attempt as adplatforms_deliveries shows it: the domain's view without the log id, site and excerpt. */
const adAttemptEntrySchema = adAttemptViewSchema.pick({
  at: true,
  platform: true,
  connection_id: true,
  job_id: true,
  attempt: true,
  ok: true,
  status: true,
  latency_ms: true,
  error_class: true,
  message: true,
});

export const adplatformsDeliveries = defineTool({
  name: 'adplatforms_deliveries',
  title: 'Ad-platform delivery log',
  description: 'Every attempt to send a conversion to an ad platform, newest last: status, latency, error class and message.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({
    connection_id: z.string().min(1).max(128).optional(),
    failed_only: z.boolean().default(false),
    limit: limitInput(1000, 100),
  }),
  output: z.object({ attempts: z.array(adAttemptEntrySchema) }),
  handler: async (ctx, input) => {
    if (input.connection_id !== undefined) await own(ctx, input.connection_id);
    const views = await connectionLog(ctx.store, { siteId: ctx.grant.siteId, destinationId: input.connection_id, failedOnly: input.failed_only, limit: input.limit });
    return { attempts: views.map((v) => pickView(v, adAttemptEntrySchema)) };
  },
});

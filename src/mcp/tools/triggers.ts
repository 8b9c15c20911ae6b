import { z } from 'zod';
import {
  createTrigger,
  deleteTrigger,
  disableTrigger,
  enableTrigger,
  getTrigger,
  listTriggers,
  triggerDefinitionSchema,
  updateTrigger,
} from '../../domain/triggers/definitions.js';
import { fireTrigger, listFires, setTriggerEndpoint, testFire } from '../../domain/triggers/fires.js';
import {
  deletedTriggerSchema,
  disabledTriggerSchema,
  endpointViewSchema,
  FIRE_STATES,
  fireListSchema,
  fireViewSchema,
  testFireResultSchema,
  triggerViewSchema,
} from '../../domain/triggers/views.js';
import { defineTool, type ToolContext } from '../tool.js';
import { limitInput, profileRef, resolveProfile } from './shared.js';

const area = 'triggers';

const actor = (ctx: ToolContext) => `token:${ctx.grant.tokenId}`;

const triggerId = z.string().min(1).max(128).describe('Trigger id (trg_...).');

export const triggersList = defineTool({
  name: 'triggers_list',
  title: 'List triggers',
  description: 'Triggered messages of the site: what fires each, its message, frequency cap, quiet hours and whether it is enabled. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ enabled: z.boolean().optional().describe('Only enabled (true) or disabled (false) triggers.') }),
  output: z.object({ triggers: z.array(triggerViewSchema).describe('The triggers.') }),
  handler: async (ctx, input) => ({ triggers: await listTriggers(ctx.store, ctx.grant.siteId, input.enabled) }),
});

export const triggersGet = defineTool({
  name: 'triggers_get',
  title: 'Read a trigger',
  description: 'One triggered message with its definition and state. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ id: triggerId }),
  output: triggerViewSchema,
  handler: (ctx, input) => getTrigger(ctx.store, ctx.grant.siteId, input.id),
});

export const triggersCreate = defineTool({
  name: 'triggers_create',
  title: 'Create a trigger',
  description:
    "Creates a triggered message (disabled until triggers_enable): it fires when a profile enters a segment, does an event of a type, or reaches a score; at most cap_count fires per profile per cap_window_hours; a fire due in quiet hours (local, in the site's time zone) is deferred to their end, not dropped. Scope: write.",
  area,
  scope: 'write',
  flags: { changesData: true },
  input: triggerDefinitionSchema,
  output: triggerViewSchema,
  handler: (ctx, input) => createTrigger(ctx.store, ctx.grant.siteId, actor(ctx), input),
});

export const triggersUpdate = defineTool({
  name: 'triggers_update',
  title: 'Change a trigger',
  description: 'Changes the fields given of a trigger (the others stay); null clears the quiet hours. Fires already created keep their due time. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true, idempotent: true },
  input: z.object({ id: triggerId, ...triggerDefinitionSchema.partial().shape }),
  output: triggerViewSchema,
  handler: (ctx, input) => {
    const { id, ...patch } = input;
    return updateTrigger(ctx.store, ctx.grant.siteId, id, patch);
  },
});

export const triggersEnable = defineTool({
  name: 'triggers_enable',
  title: 'Enable a trigger',
  description: "Starts firing a trigger. Refused until the site's live endpoint is set (triggers_endpoint_set). Scope: write.",
  area,
  scope: 'write',
  flags: { changesData: true, idempotent: true },
  input: z.object({ id: triggerId }),
  output: triggerViewSchema,
  handler: (ctx, input) => enableTrigger(ctx.store, ctx.grant.siteId, input.id),
});

export const triggersDisable = defineTool({
  name: 'triggers_disable',
  title: 'Disable a trigger',
  description: 'Stops a trigger from firing and cancels its pending automatic fires (deferred or retrying); fires made by hand stay. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true, idempotent: true },
  input: z.object({ id: triggerId }),
  output: disabledTriggerSchema,
  handler: (ctx, input) => disableTrigger(ctx.store, ctx.grant.siteId, input.id),
});

export const triggersDelete = defineTool({
  name: 'triggers_delete',
  title: 'Delete a trigger',
  description: 'Deletes a trigger and its fire history (pending fires are never sent). Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true, destructive: true, idempotent: true },
  input: z.object({ id: triggerId }),
  output: deletedTriggerSchema,
  handler: (ctx, input) => deleteTrigger(ctx.store, ctx.grant.siteId, input.id),
});

export const triggersEndpointSet = defineTool({
  name: 'triggers_endpoint_set',
  title: 'Set the trigger endpoints',
  description:
    "Sets the site's live endpoint (URL and signing secret) that receives triggered messages, and the test endpoint of test fires. Both must be publicly routable http(s) URLs. Each POST is signed like a webhook delivery (X-SVC-Signature: hex HMAC-SHA256 of the body keyed by the secret, or the site_id without one; X-SVC-Event: trigger.message; X-SVC-Delivery: the fire id). Omitted fields stay; null clears. Scope: admin.",
  area,
  scope: 'admin',
  flags: { changesData: true, idempotent: true, openWorld: true },
  input: z.object({
    url: z.string().min(1).max(2048).nullable().optional().describe('Live endpoint URL (null clears: live fires then wait and retry).'),
    secret: z.string().min(8).max(256).nullable().optional().describe('Signing secret, at least 8 characters; null clears.'),
    test_url: z.string().min(1).max(2048).nullable().optional().describe('Test endpoint URL; null clears.'),
  }),
  output: endpointViewSchema,
  handler: (ctx, input) => setTriggerEndpoint(ctx.store, ctx.grant.siteId, actor(ctx), input, ctx.allowPrivateDestinations),
});

const optionalProfile = z
  .object(profileRef)
  .optional()
  .describe('The profile to message, by any of its identifiers.');

export const triggersTestFire = defineTool({
  name: 'triggers_test_fire',
  title: 'Test-fire a trigger',
  description:
    'Sends one message of a trigger to the site\'s TEST endpoint now (signed, "test": true in the body), for a profile or a sample profile id when none is named, ignoring cap and quiet hours; waits for the answer and records the fire with mode test. It reaches no real recipient, so it emits no trigger.fired. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true, openWorld: true },
  input: z.object({ id: triggerId, profile: optionalProfile }),
  output: testFireResultSchema,
  handler: (ctx, input) =>
    testFire(
      ctx.store,
      ctx.grant.siteId,
      actor(ctx),
      input.id,
      async () => (input.profile ? (await resolveProfile(ctx, input.profile.by, input.profile.value)).id : 'prf_test_sample'),
      ctx.allowPrivateDestinations,
    ),
});

export const triggersFire = defineTool({
  name: 'triggers_fire',
  title: 'Fire a trigger live for one profile',
  description:
    "Fires a trigger by hand for one profile: a live message to a real recipient through the site's live endpoint. The frequency cap does not apply; quiet hours defer it unless ignore_quiet_hours. The fire is delivered by the trigger worker (retries like webhooks); trigger.fired is emitted once the endpoint answers 2xx. Scope: write.",
  area,
  scope: 'write',
  flags: { changesData: true, issuesCredentials: true, openWorld: true },
  input: z.object({
    id: triggerId,
    profile: z.object(profileRef).describe('The profile to message, by any of its identifiers.'),
    ignore_quiet_hours: z.boolean().default(false).describe('Send now even in quiet hours.'),
  }),
  output: fireViewSchema,
  handler: (ctx, input) =>
    fireTrigger(ctx.store, ctx.grant.siteId, actor(ctx), input.id, async () => (await resolveProfile(ctx, input.profile.by, input.profile.value)).id, input.ignore_quiet_hours),
});

export const triggersFires = defineTool({
  name: 'triggers_fires',
  title: 'Fire history',
  description: 'Fires of the site, newest first, by trigger, profile and state (pending, delivered, failed, cancelled), with attempts, deferral by quiet hours and the last error. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({
    trigger_id: triggerId.optional().describe('Only fires of this trigger.'),
    profile_id: z.string().min(1).max(128).optional().describe('Only fires for this profile.'),
    state: z.enum(FIRE_STATES).optional().describe('Only this state.'),
    limit: limitInput(500, 50),
  }),
  output: fireListSchema,
  handler: (ctx, input) =>
    listFires(ctx.store, ctx.grant.siteId, { triggerId: input.trigger_id, profileId: input.profile_id, state: input.state, limit: input.limit }),
});

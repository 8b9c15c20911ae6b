import { z } from 'zod';
import { AppError } from '../../errors/app-error.js';
import { newId } from '../../store/ids.js';
import type { FireRow, TriggerFields, TriggerRow } from '../../store/triggers.js';
import { validateDestinationUrl } from '../../webhooks/destinations.js';
import { createFire, logAttempt, messageBody, quietHoursOf } from '../../domain/triggers/service.js';
import { TRIGGER_KINDS } from '../../domain/triggers/rules.js';
import { isoInZone, parseClock, safeTimeZone } from '../../domain/triggers/zoned.js';
import { defineTool, type ToolContext } from '../tool.js';
import { iso, limitInput, profileRef, resolveProfile } from './shared.js';

const area = 'triggers';

const HOUR = 3_600_000;
const clock = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'use HH:MM, 00:00 to 23:59');

const triggerView = z.object({
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
  message_values: z.record(z.string(), z.unknown()).describe('Fixed template values sent with every fire.'),
  include_email: z.boolean().describe("Whether the message POST carries the profile's email."),
  cap: z.object({ count: z.number().int(), window_hours: z.number() }).describe('At most count fires per profile within window_hours.'),
  quiet_hours: z.object({ start: z.string(), end: z.string() }).nullable().describe("Local quiet hours in the site's time zone; fires due in them are deferred to their end."),
  enabled: z.boolean().describe('Whether it fires.'),
  capped_count: z.number().int().describe('Fires the frequency cap has suppressed.'),
  created_by: z.string().describe('Who created it.'),
  created_at: z.string().describe('When.'),
  updated_at: z.string().describe('Last change.'),
});

function view(t: TriggerRow): z.input<typeof triggerView> {
  const q = quietHoursOf(t);
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
    quiet_hours: q,
    enabled: t.enabled === 1,
    capped_count: Number(t.capped_count),
    created_by: t.created_by,
    created_at: iso(t.created_at)!,
    updated_at: iso(t.updated_at)!,
  };
}

const fireView = z.object({
  id: z.string().describe('Fire id (stable across delivery attempts; the X-SVC-Delivery header).'),
  trigger_id: z.string().describe('The trigger.'),
  profile_id: z.string().describe('The profile messaged.'),
  mode: z.enum(['live', 'test']).describe('live (the live endpoint) or test (the test endpoint).'),
  reason: z.string().describe('segment_entered, event, score, manual or test.'),
  state: z.enum(['pending', 'delivered', 'failed', 'cancelled']).describe('pending (due, deferred or retrying), delivered, failed (gave up), cancelled (trigger disabled).'),
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

function fireOf(f: FireRow, tz: string): z.input<typeof fireView> {
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

const actor = (ctx: ToolContext) => `token:${ctx.grant.tokenId}`;
async function siteTz(ctx: ToolContext): Promise<string> {
  return safeTimeZone((await ctx.store.sites.get(ctx.grant.siteId))?.timezone);
}
async function own(ctx: ToolContext, id: string): Promise<TriggerRow> {
  const t = await ctx.store.triggers.get(ctx.grant.siteId, id);
  if (!t) throw new AppError('not_found', `no trigger ${id}`, { field: 'id' });
  return t;
}

const triggerId = z.string().min(1).max(128).describe('Trigger id (trg_...).');
const definition = {
  name: z.string().trim().min(1).max(200).describe('Name.'),
  on_kind: z.enum(TRIGGER_KINDS).describe('segment_entered: the profile enters a segment; event: the profile does an event of a type (/api/events); score: a score of the profile reaches min_score (/api/score).'),
  segment_id: z.string().min(1).max(128).optional().describe('segment_entered: the segment.'),
  event_type: z.string().min(1).max(64).optional().describe('event: the event type.'),
  min_score: z.number().finite().optional().describe('score: fires when a score at or above this follows one below it (or none).'),
  message_id: z.string().trim().min(1).max(200).describe("The message template id the customer's mailer or chat tool sends."),
  message_values: z.record(z.string(), z.unknown()).optional().describe('Fixed template values sent with every fire (no personal data).'),
  include_email: z.boolean().optional().describe("Send the profile's email in the message POST (to the site's own endpoint only). Default false."),
  cap_count: z.number().int().min(1).max(1000).optional().describe('Frequency cap: at most this many fires per profile per window (default 1).'),
  cap_window_hours: z.number().positive().max(8760).optional().describe('Frequency cap window in hours (default 24).'),
  quiet_start: clock.nullable().optional().describe("Quiet hours start, HH:MM local in the site's time zone (with quiet_end; null clears)."),
  quiet_end: clock.nullable().optional().describe('Quiet hours end, HH:MM local; before quiet_start means the window crosses midnight.'),
};
const defInput = z.object(definition);
type DefInput = z.output<typeof defInput>;

async function fieldsOf(ctx: ToolContext, d: DefInput): Promise<TriggerFields> {
  let onValue: string | null = null;
  let scoreMin: number | null = null;
  if (d.on_kind === 'segment_entered') {
    if (!d.segment_id) throw new AppError('validation_failed', 'segment_id: required for on_kind segment_entered', { field: 'segment_id' });
    if (!(await ctx.store.segments.get(ctx.grant.siteId, d.segment_id))) throw new AppError('not_found', `no segment ${d.segment_id}`, { field: 'segment_id' });
    onValue = d.segment_id;
  } else if (d.on_kind === 'event') {
    if (!d.event_type) throw new AppError('validation_failed', 'event_type: required for on_kind event', { field: 'event_type' });
    onValue = d.event_type;
  } else {
    if (d.min_score === undefined) throw new AppError('validation_failed', 'min_score: required for on_kind score', { field: 'min_score' });
    scoreMin = d.min_score;
  }
  const qs = d.quiet_start ?? null;
  const qe = d.quiet_end ?? null;
  if ((qs === null) !== (qe === null)) throw new AppError('validation_failed', 'quiet_start and quiet_end: give both or neither', { field: 'quiet_start' });
  if (qs !== null && parseClock(qs) === parseClock(qe!)) throw new AppError('validation_failed', 'quiet_end: equals quiet_start (an empty window); use null for no quiet hours', { field: 'quiet_end' });
  const values = d.message_values ?? {};
  if (JSON.stringify(values).length > 10_000) throw new AppError('validation_failed', 'message_values: at most 10,000 characters as JSON', { field: 'message_values' });
  return {
    name: d.name,
    on_kind: d.on_kind,
    on_value: onValue,
    score_min: scoreMin,
    message_id: d.message_id,
    message_values: JSON.stringify(values),
    include_email: d.include_email === true ? 1 : 0,
    cap_count: d.cap_count ?? 1,
    cap_window_ms: Math.round((d.cap_window_hours ?? 24) * HOUR),
    quiet_start: qs,
    quiet_end: qe,
  };
}

function asInput(t: TriggerRow): DefInput {
  return {
    name: t.name,
    on_kind: t.on_kind,
    segment_id: t.on_kind === 'segment_entered' ? (t.on_value ?? undefined) : undefined,
    event_type: t.on_kind === 'event' ? (t.on_value ?? undefined) : undefined,
    min_score: t.score_min ?? undefined,
    message_id: t.message_id,
    message_values: JSON.parse(t.message_values) as Record<string, unknown>,
    include_email: t.include_email === 1,
    cap_count: t.cap_count,
    cap_window_hours: t.cap_window_ms / HOUR,
    quiet_start: t.quiet_start,
    quiet_end: t.quiet_end,
  };
}

export const triggersList = defineTool({
  name: 'triggers_list',
  title: 'List triggers',
  description: 'Triggered messages of the site: what fires each, its message, frequency cap, quiet hours and whether it is enabled. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ enabled: z.boolean().optional().describe('Only enabled (true) or disabled (false) triggers.') }),
  output: z.object({ triggers: z.array(triggerView).describe('The triggers.') }),
  handler: async (ctx, input) => ({ triggers: (await ctx.store.triggers.list(ctx.grant.siteId, input.enabled)).map(view) }),
});

export const triggersGet = defineTool({
  name: 'triggers_get',
  title: 'Read a trigger',
  description: 'One triggered message with its definition and state. Scope: read.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ id: triggerId }),
  output: triggerView,
  handler: async (ctx, input) => view(await own(ctx, input.id)),
});

export const triggersCreate = defineTool({
  name: 'triggers_create',
  title: 'Create a trigger',
  description:
    "Creates a triggered message (disabled until triggers_enable): it fires when a profile enters a segment, does an event of a type, or reaches a score; at most cap_count fires per profile per cap_window_hours; a fire due in quiet hours (local, in the site's time zone) is deferred to their end, not dropped. Scope: write.",
  area,
  scope: 'write',
  flags: { changesData: true },
  input: defInput,
  output: triggerView,
  handler: async (ctx, input) => {
    const fields = await fieldsOf(ctx, input);
    const t = await ctx.store.write((tx) => tx.triggers.create(newId('trg'), ctx.grant.siteId, fields, actor(ctx), Date.now()));
    return view(t);
  },
});

export const triggersUpdate = defineTool({
  name: 'triggers_update',
  title: 'Change a trigger',
  description: 'Changes the fields given of a trigger (the others stay); null clears the quiet hours. Fires already created keep their due time. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true, idempotent: true },
  input: z.object({ id: triggerId, ...defInput.partial().shape }),
  output: triggerView,
  handler: async (ctx, input) => {
    const current = await own(ctx, input.id);
    const { id: _id, ...patch } = input;
    const merged = { ...asInput(current) };
    for (const [k, v] of Object.entries(patch)) if (v !== undefined) (merged as Record<string, unknown>)[k] = v;
    if (patch.on_kind !== undefined && patch.on_kind !== current.on_kind) {
      if (patch.on_kind !== 'segment_entered' && patch.segment_id === undefined) merged.segment_id = undefined;
      if (patch.on_kind !== 'event' && patch.event_type === undefined) merged.event_type = undefined;
    }
    const fields = await fieldsOf(ctx, merged);
    await ctx.store.write((tx) => tx.triggers.update(ctx.grant.siteId, input.id, fields, Date.now()));
    return view(await own(ctx, input.id));
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
  output: triggerView,
  handler: async (ctx, input) => {
    await own(ctx, input.id);
    const endpoint = await ctx.store.triggers.endpoint(ctx.grant.siteId);
    if (!endpoint?.url) throw new AppError('conflict', 'set the live endpoint first (triggers_endpoint_set)', { field: 'id' });
    await ctx.store.write((tx) => tx.triggers.setEnabled(ctx.grant.siteId, input.id, true, Date.now()));
    return view(await own(ctx, input.id));
  },
});

export const triggersDisable = defineTool({
  name: 'triggers_disable',
  title: 'Disable a trigger',
  description: 'Stops a trigger from firing and cancels its pending automatic fires (deferred or retrying); fires made by hand stay. Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true, idempotent: true },
  input: z.object({ id: triggerId }),
  output: z.object({ trigger: triggerView.describe('The trigger.'), cancelled_fires: z.number().int().describe('Pending fires cancelled.') }),
  handler: async (ctx, input) => {
    await own(ctx, input.id);
    const cancelled = await ctx.store.write(async (tx) => {
      await tx.triggers.setEnabled(ctx.grant.siteId, input.id, false, Date.now());
      return tx.triggers.cancelPending(ctx.grant.siteId, input.id);
    });
    return { trigger: view(await own(ctx, input.id)), cancelled_fires: cancelled };
  },
});

export const triggersDelete = defineTool({
  name: 'triggers_delete',
  title: 'Delete a trigger',
  description: 'Deletes a trigger and its fire history (pending fires are never sent). Scope: write.',
  area,
  scope: 'write',
  flags: { changesData: true, destructive: true, idempotent: true },
  input: z.object({ id: triggerId }),
  output: z.object({ deleted: z.boolean().describe('Whether the trigger existed.'), fires_deleted: z.number().int().describe('Fires deleted with it.') }),
  handler: async (ctx, input) => {
    const t = await ctx.store.triggers.get(ctx.grant.siteId, input.id);
    if (!t) return { deleted: false, fires_deleted: 0 };
    const n = await ctx.store.write((tx) => tx.triggers.remove(ctx.grant.siteId, input.id));
    return { deleted: true, fires_deleted: n };
  },
});

const endpointView = z.object({
  url: z.string().nullable().describe('The live endpoint messages are POSTed to.'),
  has_secret: z.boolean().describe('Whether a signing secret is set (never shown).'),
  test_url: z.string().nullable().describe('The test endpoint of triggers_test_fire.'),
  updated_by: z.string().describe('Who set it.'),
  updated_at: z.string().describe('When.'),
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
  output: endpointView,
  handler: async (ctx, input) => {
    const site = ctx.grant.siteId;
    const url = input.url ? await validateDestinationUrl(input.url, ctx.allowPrivateDestinations) : input.url;
    let testUrl = input.test_url;
    if (testUrl) {
      try {
        testUrl = await validateDestinationUrl(testUrl, ctx.allowPrivateDestinations);
      } catch (err) {
        if (err instanceof AppError) throw new AppError(err.code, err.message.replace(/^url:/, 'test_url:'), { field: 'test_url' });
        throw err;
      }
    }
    const now = Date.now();
    const row = await ctx.store.write(async (tx) => {
      const cur = await tx.triggers.endpoint(site);
      const next = {
        site_id: site,
        url: url === undefined ? (cur?.url ?? null) : url,
        secret_enc: input.secret === undefined ? (cur?.secret_enc ?? null) : input.secret === null ? null : ctx.store.secrets.seal(input.secret),
        test_url: testUrl === undefined ? (cur?.test_url ?? null) : testUrl,
        updated_by: actor(ctx),
        updated_at: now,
      };
      await tx.triggers.setEndpoint(next);
      return next;
    });
    return { url: row.url, has_secret: row.secret_enc !== null, test_url: row.test_url, updated_by: row.updated_by, updated_at: iso(row.updated_at)! };
  },
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
  output: z.object({
    fire: fireView.describe('The test fire.'),
    ok: z.boolean().describe('Whether the test endpoint answered 2xx.'),
    status: z.number().int().nullable().describe('Its HTTP status.'),
    error: z.string().nullable().describe('What went wrong.'),
    latency_ms: z.number().int().describe('Round trip in ms.'),
  }),
  handler: async (ctx, input) => {
    const site = ctx.grant.siteId;
    const t = await own(ctx, input.id);
    const endpoint = await ctx.store.triggers.endpoint(site);
    if (!endpoint?.test_url) throw new AppError('conflict', 'set the test endpoint first (triggers_endpoint_set test_url)', { field: 'id' });
    const profileId = input.profile ? (await resolveProfile(ctx, input.profile.by, input.profile.value)).id : 'prf_test_sample';
    const now = Date.now();
    const fire = {
      id: newId('fire'),
      site_id: site,
      trigger_id: t.id,
      profile_id: profileId,
      mode: 'test' as const,
      reason: 'test',
      state: 'pending' as const,
      due_at: now,
      deferred: 0,
      next_attempt_at: now,
      created_by: actor(ctx),
      created_at: now,
    };
    await ctx.store.write((tx) => tx.triggers.insertFire(fire));
    const body = await messageBody(ctx.store, t, fire, now);
    const { createGuardedDispatcher } = await import('../../outbound/guard.js');
    const { sendFire } = await import('../../domain/triggers/send.js');
    const http = createGuardedDispatcher({ allowPrivate: ctx.allowPrivateDestinations, connections: 1 });
    let r;
    try {
      r = await sendFire(http, ctx.store, endpoint, endpoint.test_url, fire, body);
    } finally {
      await http.close().catch(() => undefined);
    }
    const error = r.ok ? null : `${r.errorClass}: ${r.message ?? ''}`.slice(0, 500);
    await ctx.store.write(async (tx) => {
      await tx.triggers.recordTest(fire.id, { ok: r.ok, status: r.status, error, now: Date.now() });
      await logAttempt(tx, fire, 1, r, Date.now());
    });
    return { fire: fireOf((await ctx.store.triggers.fire(site, fire.id))!, await siteTz(ctx)), ok: r.ok, status: r.status, error, latency_ms: r.latencyMs };
  },
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
  output: fireView,
  handler: async (ctx, input) => {
    const site = ctx.grant.siteId;
    const t = await own(ctx, input.id);
    const endpoint = await ctx.store.triggers.endpoint(site);
    if (!endpoint?.url) throw new AppError('conflict', 'set the live endpoint first (triggers_endpoint_set)', { field: 'id' });
    const profile = await resolveProfile(ctx, input.profile.by, input.profile.value);
    const fire = await ctx.store.write((tx) => createFire(tx, t, profile.id, 'manual', Date.now(), { by: actor(ctx), ignoreQuietHours: input.ignore_quiet_hours }));
    return fireOf(fire!, await siteTz(ctx));
  },
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
    state: z.enum(['pending', 'delivered', 'failed', 'cancelled']).optional().describe('Only this state.'),
    limit: limitInput(500, 50),
  }),
  output: z.object({ fires: z.array(fireView).describe('The fires.'), timezone: z.string().describe("The site's time zone.") }),
  handler: async (ctx, input) => {
    const tz = await siteTz(ctx);
    const rows = await ctx.store.triggers.fires({ siteId: ctx.grant.siteId, triggerId: input.trigger_id, profileId: input.profile_id, state: input.state, limit: input.limit });
    return { fires: rows.map((f) => fireOf(f, tz)), timezone: tz };
  },
});

import { newId } from '../../store/ids.js';
import type { Repos } from '../../store/repos.js';
import type { FireRow, TriggerRow } from '../../store/triggers.js';
import type { AttemptResult } from '../../outbound/sender.js';
import { CATALOGUE } from '../../webhooks/catalogue.js';
import { capWindowStart, reachesScore, releaseTime, underCap, type FireReason, type QuietHours } from './rules.js';
import { safeTimeZone } from './zoned.js';

/** The X-SVC-Event header of a message POST to the site's trigger endpoint. */
export const MESSAGE_EVENT = 'trigger.message';

export function quietHoursOf(t: Pick<TriggerRow, 'quiet_start' | 'quiet_end'>): QuietHours | null {
  return t.quiet_start !== null && t.quiet_end !== null ? { start: t.quiet_start, end: t.quiet_end } : null;
}

async function siteZone(tx: Repos, siteId: string): Promise<string> {
  return safeTimeZone((await tx.sites.get(siteId))?.timezone);
}

/**
 * Creates a live fire of `t` for a profile, unless the frequency cap says no
 * (then the trigger's capped count goes up and null is returned). A fire due in
 * quiet hours is deferred to their end. `manual` fires (by hand) skip the cap.
 * Runs inside the write operation of the change that caused it.
 */
export async function createFire(
  tx: Repos,
  t: Readonly<TriggerRow>,
  profileId: string,
  reason: FireReason,
  now: number,
  opts: { by: string; ignoreQuietHours?: boolean } = { by: 'system' },
): Promise<FireRow | null> {
  if (reason !== 'manual') {
    const cap = { count: t.cap_count, windowMs: t.cap_window_ms };
    await tx.triggers.lockCap(t.id, profileId);
    const recent = await tx.triggers.firesSince(t.id, profileId, capWindowStart(now, cap));
    if (!underCap(recent, cap)) {
      await tx.triggers.countCapped(t.id);
      return null;
    }
  }
  const tz = await siteZone(tx, t.site_id);
  const due = opts.ignoreQuietHours === true ? now : releaseTime(now, quietHoursOf(t), tz);
  const fire = {
    id: newId('fire'),
    site_id: t.site_id,
    trigger_id: t.id,
    profile_id: profileId,
    mode: 'live' as const,
    reason,
    state: 'pending' as const,
    due_at: due,
    deferred: due > now ? 1 : 0,
    next_attempt_at: due,
    created_by: opts.by,
    created_at: now,
  };
  await tx.triggers.insertFire(fire);
  return (await tx.triggers.fire(t.site_id, fire.id))!;
}

/** Hook of segment membership: the profile just entered `segmentId`. */
export async function onSegmentEntered(tx: Repos, siteId: string, profileId: string, segmentId: string, now: number): Promise<void> {
  for (const t of await tx.triggers.listening(siteId, 'segment_entered', segmentId)) await createFire(tx, t, profileId, 'segment_entered', now);
}

/** Hook of /api/events: the profile did an event of `type`. */
export async function onEvent(tx: Repos, siteId: string, profileId: string, type: string, now: number): Promise<void> {
  for (const t of await tx.triggers.listeningForEvent(siteId, type)) await createFire(tx, t, profileId, 'event', now);
}

/** Hook of /api/score: score row `scoreId` of the profile was stored; fires triggers whose threshold it reaches. */
export async function onScore(tx: Repos, siteId: string, profileId: string, scoreId: number, score: number | null, now: number): Promise<void> {
  if (score === null) return;
  const triggers = await tx.triggers.listening(siteId, 'score', null);
  if (triggers.length === 0) return;
  const previous = await tx.triggers.previousScore(siteId, profileId, scoreId);
  for (const t of triggers) if (reachesScore(previous, score, t.score_min ?? 0)) await createFire(tx, t, profileId, 'score', now);
}

/**
 * The JSON body of a message POST: what the customer's mailer or chat tool
 * needs to send the message. It may carry the profile's email (when the
 * trigger says include_email): it goes only to the site's own endpoint, never
 * into an event, a log line or the audit.
 */
export interface MessageBody {
  type: typeof MESSAGE_EVENT;
  test: boolean;
  site_id: string;
  fire_id: string;
  trigger_id: string;
  profile_id: string;
  reason: string;
  message: { id: string; values: Record<string, unknown> };
  recipient: { profile_id: string; email: string | null; external_id: string | null };
  fired_at: string;
  timestamp: string;
}

/** Builds the body of one fire from the trigger and the profile as they are now (merges followed). */
export async function messageBody(r: Repos, t: TriggerRow, fire: Pick<FireRow, 'id' | 'profile_id' | 'reason' | 'created_at' | 'mode'>, now: number): Promise<string> {
  const profile = await r.profileRead.find(t.site_id, 'profile_id', fire.profile_id);
  const traits = profile ? (JSON.parse(profile.traits) as Record<string, string>) : {};
  const body: MessageBody = {
    type: MESSAGE_EVENT,
    test: fire.mode === 'test',
    site_id: t.site_id,
    fire_id: fire.id,
    trigger_id: t.id,
    profile_id: profile?.id ?? fire.profile_id,
    reason: fire.reason,
    message: { id: t.message_id, values: JSON.parse(t.message_values) as Record<string, unknown> },
    recipient: {
      profile_id: profile?.id ?? fire.profile_id,
      email: t.include_email === 1 ? (traits.email ?? null) : null,
      external_id: traits.external_id ?? null,
    },
    fired_at: new Date(fire.created_at).toISOString(),
    timestamp: new Date(now).toISOString(),
  };
  return JSON.stringify(body);
}

/** trigger.fired for a delivered live fire: ids only, validated by the catalogue. */
export function firedPayload(t: TriggerRow, fire: Pick<FireRow, 'id' | 'profile_id'>, now: number) {
  return CATALOGUE['trigger.fired'].schema.parse({
    event: 'trigger.fired',
    site_id: t.site_id,
    fire_id: fire.id,
    trigger_id: t.id,
    message_id: t.message_id,
    profile_id: fire.profile_id,
    timestamp: new Date(now).toISOString(),
  });
}

/**
 * Writes one message attempt to the health log (integration `trigger`, destination `trigger:live` or
 * `trigger:test`, delivery id = the fire id), beside the webhook attempts: a non-2xx answer is a failed
 * delivery there too. Runs inside a write operation.
 */
export async function logAttempt(tx: Repos, f: Pick<FireRow, 'id' | 'site_id' | 'mode'>, attempt: number, r: AttemptResult, now: number): Promise<void> {
  await tx.webhooks.logAttempt(
    { site_id: f.site_id, integration: 'trigger', destination_id: `trigger:${f.mode}`, delivery_id: f.id, event_type: MESSAGE_EVENT, kind: f.mode === 'test' ? 'test' : 'attempt', attempt },
    r,
    now,
  );
}

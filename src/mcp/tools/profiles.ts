import { z } from 'zod';
import { profileSnapshotSchema } from '../../domain/profiles/schema.js';
import { eraseProfileData, mergeProfiles, profileSnapshot, timelineOf } from '../../domain/profiles/service.js';
import { profilesMatching } from '../../domain/profiles/query.js';
import { defineTool } from '../tool.js';
import { checkedRule, iso, limitInput, profileRef, resolveProfile, ruleInput } from './shared.js';

const area = 'profiles';

export const profileGet = defineTool({
  name: 'profiles_get',
  title: 'Read a profile',
  description:
    'The snapshot of one profile (identity, segments, activity, meta) looked up by any identifier; a merged id resolves to the surviving profile. Plaintext email, phone, name and trait values only for admin-scope tokens.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object(profileRef),
  output: profileSnapshotSchema,
  handler: async (ctx, input) => profileSnapshot(ctx.store, await resolveProfile(ctx, input.by, input.value), ctx.pii),
});

export const profileSearch = defineTool({
  name: 'profiles_search',
  title: 'Find profiles by rule',
  description:
    'Profile ids matching a rule of the segment rule language, in ascending id order; page with `after`. A rule testing email, phone or name needs the admin scope.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({
    rule: ruleInput,
    limit: limitInput(1000, 100),
    after: z.string().min(1).max(128).optional().describe('next_after of the previous page.'),
  }),
  output: z.object({
    profile_ids: z.array(z.string()),
    next_after: z.string().nullable().describe('Pass back as `after` for the next page; null on the last page.'),
    evaluated_at: z.string(),
  }),
  handler: async (ctx, input) => {
    const rule = checkedRule(ctx, input.rule);
    const now = Date.now();
    const page = await profilesMatching(ctx.store, ctx.grant.siteId, rule, { now, afterId: input.after ?? '', limit: input.limit });
    return { profile_ids: page.ids, next_after: page.more ? page.ids[page.ids.length - 1]! : null, evaluated_at: iso(now)! };
  },
});

export const profileTimeline = defineTool({
  name: 'profiles_timeline',
  title: 'Timeline of a profile',
  description: 'The newest events, conversions, scores and leads of one profile, newest first (types and values, no personal data).',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ ...profileRef, limit: limitInput(500, 50) }),
  output: z.object({
    profile_id: z.string(),
    items: z.array(
      z.object({
        kind: z.enum(['event', 'conversion', 'score', 'lead']),
        id: z.string().describe('The item\'s id as ingestion answered it: evt_..., cnv_..., scr_... or lead_....'),
        at: z.string(),
        type: z.string().nullable().describe('Event type, conversion currency or lead kind.'),
        value: z.number().nullable().describe('Conversion revenue or score.'),
      }),
    ),
  }),
  handler: async (ctx, input) => {
    const p = await resolveProfile(ctx, input.by, input.value);
    return {
      profile_id: p.id,
      items: await timelineOf(ctx.store, ctx.grant.siteId, p.id, input.limit),
    };
  },
});

export const profileMerge = defineTool({
  name: 'profiles_merge',
  title: 'Merge two profiles',
  description:
    'Moves everything of one profile (sessions, identities, events, conversions, scores, leads) into another and marks it merged; traits of the surviving profile win. Cannot be undone.',
  area,
  scope: 'write',
  flags: { changesData: true, destructive: true },
  input: z.object({
    from_profile_id: z.string().min(1).max(128).describe('The profile that disappears into the other.'),
    into_profile_id: z.string().min(1).max(128).describe('The profile that survives.'),
  }),
  output: z.object({ merged: z.string(), into: z.string(), segments: z.array(z.string()) }),
  handler: (ctx, input) => mergeProfiles(ctx.store, ctx.membership, ctx.grant.siteId, { from: input.from_profile_id, into: input.into_profile_id }),
});

export const profileErase = defineTool({
  name: 'profiles_erase',
  title: 'Erase a person (GDPR)',
  description:
    'Deletes a profile and everything about the person in this site: the profile and the profiles merged into it, identities, hashed identifiers, sessions, events, scores, conversions, leads, segment memberships, and queued webhook payloads naming them. Returns the number of rows removed per table. Cannot be undone.',
  area,
  scope: 'admin',
  flags: { changesData: true, destructive: true, idempotent: true },
  input: z.object(profileRef),
  output: z.object({
    profile_id: z.string(),
    removed: z.object({
      profiles: z.number().int(),
      identities: z.number().int(),
      identity_hashes: z.number().int(),
      sessions: z.number().int(),
      events: z.number().int(),
      scores: z.number().int(),
      conversions: z.number().int(),
      leads: z.number().int(),
      segment_members: z.number().int(),
      outbox: z.number().int(),
      deliveries: z.number().int(),
    }),
  }),
  handler: async (ctx, input) => {
    const p = await resolveProfile(ctx, input.by, input.value);
    const removed = await eraseProfileData(ctx.store, ctx.membership, ctx.grant.siteId, p.id);
    return { profile_id: p.id, removed };
  },
});

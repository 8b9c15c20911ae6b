import { z } from 'zod';
import { defineTool } from '../tool.js';
import { iso, limitInput } from './shared.js';
import { eventId } from '../../domain/ingestion/ids.js';

const area = 'events';

export const eventsRecent = defineTool({
  name: 'events_recent',
  title: 'Recent events of a type',
  description: 'The newest behavioural events of one type (ids, profile, session and times; no event properties).',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ type: z.string().min(1).max(100).describe('Event type, e.g. pageview or add_to_cart.'), limit: limitInput(500, 50) }),
  output: z.object({
    events: z.array(z.object({ id: z.string().describe('Event id (evt_...), as /api/events answered it.'), type: z.string(), profile_id: z.string(), session_id: z.string(), at: z.string(), received_at: z.string() })),
  }),
  handler: async (ctx, input) => ({
    events: (await ctx.store.insights.recentEvents(ctx.grant.siteId, input.type, input.limit)).map((e) => ({
      id: eventId(e.id),
      type: e.type,
      profile_id: e.profile_id,
      session_id: e.session_id,
      at: iso(e.ts)!,
      received_at: iso(e.received_at)!,
    })),
  }),
});

export const eventTypes = defineTool({
  name: 'events_types',
  title: 'Event types seen',
  description: 'Each event type seen in the last N days with its count and latest time, most frequent first.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ days: z.number().int().min(1).max(366).default(30).describe('Window length in days (default 30).') }),
  output: z.object({ types: z.array(z.object({ type: z.string(), count: z.number().int(), last_at: z.string() })) }),
  handler: async (ctx, input) => ({
    types: (await ctx.store.insights.eventTypes(ctx.grant.siteId, Date.now() - input.days * 86_400_000)).map((t) => ({
      type: t.type,
      count: t.n,
      last_at: iso(t.last)!,
    })),
  }),
});

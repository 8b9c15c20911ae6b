import { z } from 'zod';
import { eventTypes, recentEvents } from '../../domain/analytics/events.js';
import { eventTypeViewSchema, eventViewSchema } from '../../domain/analytics/views.js';
import { defineTool } from '../tool.js';
import { limitInput } from './shared.js';

const area = 'events';

export const eventsRecent = defineTool({
  name: 'events_recent',
  title: 'Recent events of a type',
  description: 'The newest behavioural events of one type (ids, profile, session and times; no event properties).',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ type: z.string().min(1).max(100).describe('Event type, e.g. pageview or add_to_cart.'), limit: limitInput(500, 50) }),
  output: z.object({ events: z.array(eventViewSchema) }),
  handler: async (ctx, input) => ({ events: await recentEvents(ctx.store, ctx.grant.siteId, input.type, input.limit) }),
});

export const eventsTypes = defineTool({
  name: 'events_types',
  title: 'Event types seen',
  description: 'Each event type seen in the last N days with its count and latest time, most frequent first.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ days: z.number().int().min(1).max(366).default(30).describe('Window length in days (default 30).') }),
  output: z.object({ types: z.array(eventTypeViewSchema) }),
  handler: async (ctx, input) => ({ types: await eventTypes(ctx.store, ctx.grant.siteId, input.days) }),
});

import type { Store } from '../../store/store.js';
import { eventId } from '../ingestion/ids.js';
import { iso } from '../time.js';
import type { EventTypeView, EventView } from './views.js';

/** The newest events of one type (no event properties). */
export async function recentEvents(store: Store, siteId: string, type: string, limit: number): Promise<EventView[]> {
  return (await store.insights.recentEvents(siteId, type, limit)).map((e) => ({
    id: eventId(e.id),
    type: e.type,
    profile_id: e.profile_id,
    session_id: e.session_id,
    at: iso(e.ts)!,
    received_at: iso(e.received_at)!,
  }));
}

/** Each event type seen in the last `days` days with its count and latest time, most frequent first. */
export async function eventTypes(store: Store, siteId: string, days: number): Promise<EventTypeView[]> {
  return (await store.insights.eventTypes(siteId, Date.now() - days * 86_400_000)).map((t) => ({ type: t.type, count: t.n, last_at: iso(t.last)! }));
}

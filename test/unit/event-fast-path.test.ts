import { describe, expect, it } from 'vitest';
import { commonEvent, eventSchema } from '../../src/domain/ingestion/schemas.js';

/**
 * The event check without zod (commonEvent, the router's fast path) never
 * accepts what eventSchema refuses, and what it accepts comes out with the same
 * keys and values as eventSchema's output; what it does not take is left to
 * the schema (null).
 */
const base = { site_id: 'site_abc', session_id: 'sess_1', type: 'pageview' };
const long = (n: number) => 'x'.repeat(n);

const cases: Record<string, unknown>[] = [
  base,
  { ...base, visitor_id: 'vis_1' },
  { ...base, visitor_id: 'vis_1', url: 'https://a.example/?fbclid=1', viewport: { w: 1, h: 2 }, props: { ab: 'A' }, list: [1, 'x', null] },
  { url: 'first', ...base, title: 'middle', visitor_id: 'v', last: true },
  { ...base, site_id: long(64), session_id: long(128), visitor_id: long(128), type: long(100) },
  { ...base, type: '~!custom.thing' },
  // refused by the schema
  { ...base, site_id: '' },
  { ...base, site_id: long(65) },
  { ...base, session_id: long(129) },
  { ...base, session_id: 7 },
  { ...base, visitor_id: '' },
  { ...base, visitor_id: null },
  { ...base, visitor_id: long(129) },
  { ...base, type: 'page view' },
  { ...base, type: 'pagé' },
  { ...base, type: long(101) },
  { ...base, type: '' },
  { site_id: 'site_abc', type: 'pageview' },
  { session_id: 's', type: 'pageview' },
  { site_id: 'site_abc', session_id: 's' },
  // left to the schema, valid or not
  { ...base, timestamp: '2024-01-01T00:00:00Z' },
  { ...base, timestamp: 'yesterday' },
  { ...base, idempotency_key: 'k-1' },
  { ...base, idempotency_key: 'with space' },
];

describe('commonEvent (the /api/events check without zod)', () => {
  it.each(cases.map((c, i) => [i, c] as const))('case %i agrees with eventSchema', (_i, body) => {
    const fast = commonEvent(structuredClone(body));
    const zod = eventSchema.safeParse(structuredClone(body));
    if (fast === null) return; // the schema decides
    expect(zod.success).toBe(true);
    expect(fast).toEqual(zod.data);
    // Same keys in the same order: the webhook payload's properties follow the body's key order.
    const custom = (o: object) => Object.keys(o).filter((k) => !['site_id', 'session_id', 'visitor_id', 'type'].includes(k));
    expect(custom(fast)).toEqual(custom(zod.data!));
  });

  it('takes the common shapes and leaves the rest to the schema', () => {
    expect(commonEvent({ ...base, visitor_id: 'v', url: 'u' })).not.toBeNull();
    expect(commonEvent({ ...base, type: '~!custom.thing' })).not.toBeNull();
    for (const body of [
      { ...base, site_id: '' },
      { ...base, visitor_id: null },
      { ...base, type: 'page view' },
      { ...base, type: long(101) },
      { ...base, session_id: long(129) },
      { ...base, timestamp: '2024-01-01T00:00:00Z' },
      { ...base, idempotency_key: 'k-1' },
    ]) {
      expect(commonEvent(body)).toBeNull();
    }
  });

  it('accepts nothing eventSchema refuses', () => {
    for (const body of cases) {
      if (!eventSchema.safeParse(structuredClone(body)).success) expect(commonEvent(structuredClone(body))).toBeNull();
    }
  });
});

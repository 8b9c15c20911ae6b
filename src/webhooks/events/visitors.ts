import { z } from 'zod';
import { amount, currency, defineEvent, id, idOrEmpty, siteId, timestamp } from './define.js';

const at = '2025-06-02T09:30:00.000Z';

/** profile.identified: exactly the sample delivery of SPEC (every field a string). */
export const profileIdentified = defineEvent({
  id: 'ProfileIdentifiedEvent',
  description: 'An anonymous session is linked to a known identity.',
  personalData: true,
  schema: z.strictObject({
    event: z.literal('profile.identified'),
    site_id: siteId,
    visitor_id: idOrEmpty('Persistent visitor ID.'),
    session_id: idOrEmpty('The session that was linked.'),
    profile: z
      .strictObject({
        email: z.string().max(320).describe('Normalized email address; empty string when none is known.'),
        external_id: z.string().max(2048).describe('The site\'s own identifier; empty string when none is known.'),
      })
      .describe('The identity the session was linked to.'),
    segment: z.string().max(256).describe('Primary segment identifier; empty string when none.'),
    timestamp,
  }),
  example: {
    event: 'profile.identified',
    site_id: 'site_example',
    visitor_id: 'v_8f14e45fceea167a',
    session_id: 's_c9f0f895fb98ab91',
    profile: { email: 'ada@example.com', external_id: 'crm-1042' },
    segment: 'seg_high_intent',
    timestamp: at,
  },
});

/** segment.changed: a profile's primary segment moved. */
export const segmentChanged = defineEvent({
  id: 'SegmentChangedEvent',
  description: "A profile's primary segment changes.",
  personalData: false,
  schema: z.strictObject({
    event: z.literal('segment.changed'),
    site_id: siteId,
    profile_id: id('The profile whose primary segment changed.'),
    previous_segment: z.string().min(1).max(256).nullable().describe('Previous primary segment id; null when none.'),
    segment: z.string().min(1).max(256).nullable().describe('New primary segment id; null when none.'),
    timestamp,
  }),
  example: {
    event: 'segment.changed',
    site_id: 'site_example',
    profile_id: 'prf_00mbx2k1a3f9c2d4e5f6a7b8',
    previous_segment: 'seg_browsers',
    segment: 'seg_high_intent',
    timestamp: at,
  },
});

const lineItem = z
  .strictObject({
    sku: z.string().min(1).max(256).describe('Stock-keeping unit.'),
    qty: z.number().min(0).describe('Quantity.'),
    price: amount('Unit price.'),
  })
  .meta({ id: 'ConversionLineItem' });

/** conversion: carries revenue and line items (the payload /api/convert writes). */
export const conversion = defineEvent({
  id: 'ConversionEvent',
  description: 'A conversion is recorded.',
  personalData: false,
  schema: z.strictObject({
    event: z.literal('conversion'),
    site_id: siteId,
    conversion_id: id('The conversion.'),
    profile_id: id('The converting profile.'),
    session_id: id('The converting session.'),
    visitor_id: idOrEmpty('Persistent visitor ID of the session.'),
    revenue: amount('Revenue, 0 to 10,000,000.').max(10_000_000).nullable().describe('Revenue; null for a non-revenue conversion.'),
    currency,
    line_items: z.array(lineItem).max(100).describe('Line items, at most 100.'),
    timestamp,
  }),
  example: {
    event: 'conversion',
    site_id: 'site_example',
    conversion_id: 'cnv_00mbx2k1a3f9c2d4e5f6a7b8',
    profile_id: 'prf_00mbx2k1a3f9c2d4e5f6a7b8',
    session_id: 's_c9f0f895fb98ab91',
    visitor_id: 'v_8f14e45fceea167a',
    revenue: 129.5,
    currency: 'USD',
    line_items: [
      { sku: 'TEE-RED-M', qty: 2, price: 24.75 },
      { sku: 'MUG-01', qty: 1, price: 80 },
    ],
    timestamp: at,
  },
});

function behavioural<T extends string>(type: T, description: string, properties: Record<string, unknown>) {
  return defineEvent({
    id: `${type.replace(/(^|_)([a-z])/g, (_m, _s: string, c: string) => c.toUpperCase())}Event`,
    description,
    personalData: false,
    schema: z.strictObject({
      event: z.literal(type),
      site_id: siteId,
      event_id: id('The stored event.'),
      profile_id: id('The profile of the session.'),
      session_id: id('The session.'),
      visitor_id: idOrEmpty('Persistent visitor ID.'),
      timestamp,
      properties: z
        .record(z.string(), z.unknown())
        .describe("The event's custom properties exactly as the site sent them to /api/events."),
    }),
    example: {
      event: type,
      site_id: 'site_example',
      event_id: 'evt_48213',
      profile_id: 'prf_00mbx2k1a3f9c2d4e5f6a7b8',
      session_id: 's_c9f0f895fb98ab91',
      visitor_id: 'v_8f14e45fceea167a',
      timestamp: at,
      properties,
    },
  });
}

/** pageview: one delivery per event. */
export const pageview = behavioural('pageview', 'A page is viewed (high-volume behavioural event, one delivery per event).', {
  url: 'https://www.example.com/pricing',
  referrer: 'https://www.example.com/',
});

/** click: one delivery per event. */
export const click = behavioural('click', 'An element is clicked (high-volume behavioural event, one delivery per event).', {
  url: 'https://www.example.com/pricing',
  selector: '#cta-start-trial',
});

/** add_to_cart: cart lifecycle, when the site emits it. */
export const addToCart = behavioural('add_to_cart', 'An item is added to the cart (cart lifecycle, when the site emits it).', {
  sku: 'TEE-RED-M',
  qty: 1,
  price: 24.75,
});

/** abandon_cart: cart lifecycle, when the site emits it. */
export const abandonCart = behavioural('abandon_cart', 'A cart is abandoned (cart lifecycle, when the site emits it).', {
  cart_value: 49.5,
  items: 2,
});

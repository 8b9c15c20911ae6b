import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ConversionSignals } from '../../src/adplatforms/signals.js';
import { phoneE164 } from '../../src/domain/ingestion/ad-signals.js';
import { metaEvent, metaEventProblem } from '../../src/adplatforms/meta.js';
import { googleConversion, googleConversionProblem, googleDateTime } from '../../src/adplatforms/google.js';
import { sendBisecting, type JobOutcome } from '../../src/adplatforms/http.js';
import { googleConfigSchema, metaConfigSchema } from '../../src/adplatforms/connections.js';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const AT = Date.UTC(2026, 10, 23, 9, 5, 7, 345);

const base: ConversionSignals = { v: 1, conversion_id: 'cnv_1', at: AT, value: 10, currency: 'EUR', items: [] };

describe('phone normalization for the ad platforms', () => {
  it('gives E.164 for numbers written with their country code, and nothing for national numbers', () => {
    expect(phoneE164('+1 (415) 555-0100')).toBe('+14155550100');
    expect(phoneE164('0044 20 7946 0958')).toBe('+442079460958');
    expect(phoneE164('+44 (0)20 7946 0958')).toBe('+442079460958'); // the trunk 0 is dropped
    expect(phoneE164('+49 030 901820')).toBe('+4930901820');
    expect(phoneE164('415-555-0100')).toBeUndefined();
    expect(phoneE164('+1 555')).toBeUndefined();
    expect(phoneE164('call me')).toBeUndefined();
  });
});

describe('Meta event', () => {
  const cfg = metaConfigSchema.parse({ pixel_id: '123456' });

  it('uses seconds, the conversion id and the site domain when the session has no landing URL', () => {
    const e = metaEvent({ ...base, user_agent: 'UA', items: [{ sku: 'A', qty: 1.6, price: 2 }, { sku: 'A', qty: 1, price: 2 }, { sku: 'Z', qty: 0.2, price: 9 }] }, cfg, 'shop.example');
    expect(e.event_time).toBe(Math.floor(AT / 1000));
    expect(e.event_id).toBe('cnv_1');
    expect(e.event_source_url).toBe('https://shop.example/');
    expect(e.custom_data.content_ids).toEqual(['A']);
    expect(e.custom_data.contents).toEqual([
      { id: 'A', quantity: 2, item_price: 2 },
      { id: 'A', quantity: 1, item_price: 2 },
    ]);
    expect(e.custom_data.num_items).toBe(3);
    expect(e.user_data).toEqual({ client_user_agent: 'UA' });
    expect(metaEventProblem(e, AT)).toBeNull();
  });

  it('builds fbc from the fbclid unaltered and the time it was first seen', () => {
    const e = metaEvent({ ...base, fbclid: 'AbC-_123', fbclid_at: AT - 5000, user_agent: 'UA' }, cfg, null);
    expect(e.user_data.fbc).toBe(`fb.1.${AT - 5000}.AbC-_123`);
  });

  it('is refused locally when Meta would refuse it', () => {
    expect(metaEventProblem(metaEvent(base, cfg, 'shop.example'), AT)).toMatch(/client_user_agent/);
    expect(metaEventProblem(metaEvent({ ...base, user_agent: 'UA' }, cfg, null), AT)).toMatch(/event_source_url/);
    expect(metaEventProblem(metaEvent({ ...base, user_agent: 'UA' }, cfg, 'shop.example'), AT + 7 * 86_400_000 + 1000)).toMatch(/7 days/);
  });
});

describe('Google click conversion', () => {
  const cfg = googleConfigSchema.parse({ customer_id: '123-456-7890', conversion_action_id: 'customers/1234567890/conversionActions/42' });

  it('formats the date-time as Google requires', () => {
    expect(googleDateTime(AT)).toBe('2026-11-23 09:05:07+00:00');
  });

  it('names the conversion action, keeps one identifier per entry and sends no cart data without a merchant id', () => {
    const c = googleConversion({ ...base, em: sha('a@b.c'), ph_e164: sha('+14155550100'), items: [{ sku: 'A', qty: 1, price: 1 }] }, cfg);
    expect(c).toEqual({
      conversionAction: 'customers/1234567890/conversionActions/42',
      conversionDateTime: '2026-11-23 09:05:07+00:00',
      orderId: 'cnv_1',
      conversionValue: 10,
      currencyCode: 'EUR',
      userIdentifiers: [{ hashedEmail: sha('a@b.c') }, { hashedPhoneNumber: sha('+14155550100') }],
    });
    expect(googleConversionProblem(c)).toBeNull();
  });

  it('refuses a conversion that nothing attributes to a click', () => {
    expect(googleConversionProblem(googleConversion(base, cfg))).toMatch(/no gclid and no email or phone/);
    expect(googleConversionProblem(googleConversion({ ...base, gclid: 'G' }, cfg))).toBeNull();
  });
});

describe('sendBisecting', () => {
  const ok: JobOutcome = { ok: true, status: 200, latencyMs: 1, errorClass: null, message: null, excerpt: null, retryable: false };
  const bad: JobOutcome = { ...ok, ok: false, status: 400, errorClass: 'rejected', message: 'bad' };

  it('isolates the refused items with few requests and keeps the outcomes in order', async () => {
    const items = Array.from({ length: 16 }, (_, i) => i);
    const poison = new Set([3, 11]);
    const requests: number[][] = [];
    const out = await sendBisecting(items, async (batch) => {
      requests.push([...batch]);
      const refused = batch.some((i) => poison.has(i));
      return { outcomes: batch.map(() => (refused ? bad : ok)), splittable: refused };
    });
    expect(out.map((o) => o.ok)).toEqual(items.map((i) => !poison.has(i)));
    // every accepted item was accepted exactly once
    const accepted = requests.filter((b) => !b.some((i) => poison.has(i))).flat();
    expect(accepted.sort((a, b) => a - b)).toEqual(items.filter((i) => !poison.has(i)));
    expect(requests.length).toBeLessThanOrEqual(1 + 2 * 2 * Math.log2(16));
  });
});

import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  CATALOGUE,
  EVENT_TYPES,
  isEventType,
  samplePayload,
  validatePayload,
  type EventType,
} from '../../src/webhooks/catalogue.js';
import {
  behaviouralPayload,
  BEHAVIOURAL_WEBHOOK_TYPES,
  conversionPayload,
  leadCapturedPayload,
  profileIdentifiedPayload,
} from '../../src/domain/ingestion/payloads.js';

// The event types of SPEC.md's "Event types" table, in its order.
const SPEC_EVENT_TYPES = [
  'profile.identified', 'segment.changed', 'conversion', 'add_to_cart', 'abandon_cart', 'pageview', 'click',
  'experiment.ended', 'experiment.shipped', 'experiment.guardrail_paused', 'variant.watchdog_disabled',
  'trigger.fired', 'lead.captured', 'call.completed', 'generation.finished', 'crawl.completed',
  'campaign.launched', 'campaign.paused', 'campaign.closed', 'stall.found',
];

// Property names that could hold a person's contact or identity values.
const PERSONAL_KEY = /e_?mail|phone|mobile|name|address|street|postcode|zip_?code|birth|transcript|caller|contact|recording|ssn/i;
const EMAIL = /[^\s@"]+@[^\s@"]+\.[^\s@"]+/;
const ISO_DATE_TIME = /\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:\d{2})?)?/g;
const PHONE = /\+?\d[\d\s().-]{5,}\d/;

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

// Walks a JSON Schema, following `#/$defs/...` references: collects every declared
// property path, and every path of an object that admits arbitrary keys.
function walkSchema(node: Json, path: string, defs: Record<string, Json>, out: { keys: string[]; open: string[] }): void {
  if (Array.isArray(node)) {
    for (const n of node) walkSchema(n, path, defs, out);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  if (typeof node.$ref === 'string') {
    const target = defs[node.$ref.replace('#/$defs/', '')];
    expect(target, `unresolved ${node.$ref}`).toBeDefined();
    walkSchema(target!, path, defs, out);
  }
  const props = node.properties;
  if (props && typeof props === 'object' && !Array.isArray(props)) {
    for (const [k, v] of Object.entries(props)) {
      out.keys.push(`${path}.${k}`);
      walkSchema(v, `${path}.${k}`, defs, out);
    }
  }
  if (node.type === 'object' && node.additionalProperties !== false) out.open.push(path);
  for (const [k, v] of Object.entries(node)) {
    if (k === 'properties' || k === '$defs') continue;
    walkSchema(v, k === 'items' ? `${path}[]` : path, defs, out);
  }
}

// Collects every string-typed property that neither an enum, a const, a pattern nor a format pins down:
// the only places free text could go.
function freeStrings(node: Json, path: string, defs: Record<string, Json>, out: string[]): void {
  if (Array.isArray(node)) {
    for (const n of node) freeStrings(n, path, defs, out);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  if (typeof node.$ref === 'string') freeStrings(defs[node.$ref.replace('#/$defs/', '')]!, path, defs, out);
  const types = ([] as Json[]).concat(node.type ?? []);
  if (types.includes('string') && node.enum === undefined && node.const === undefined && node.pattern === undefined && node.format === undefined) {
    out.push(path);
  }
  const props = node.properties;
  if (props && typeof props === 'object' && !Array.isArray(props)) {
    for (const [k, v] of Object.entries(props)) freeStrings(v, `${path}.${k}`, defs, out);
  }
  if (node.items !== undefined) freeStrings(node.items, `${path}[]`, defs, out);
  for (const k of ['anyOf', 'oneOf', 'allOf']) if (node[k] !== undefined) freeStrings(node[k]!, path, defs, out);
}

// Unconstrained strings a no-personal-data payload may have: opaque identifiers (svc's own ids, and the
// site's session/visitor ids, form ids and SKUs, which are ids in the site's own systems), segment ids, and
// labels and the stall pass's proposed action, which the site's team writes or svc composes from them.
// A new free-text field fails here until it has been reviewed and named.
const REVIEWED_FREE_STRING = /^(\w+_id|segment|previous_segment|step|cohort_key|sku|label|arm_label|cohort_label|proposed_action)$/;

function exampleKeysAndStrings(value: unknown, path: string, out: { keys: string[]; strings: string[] }): void {
  if (typeof value === 'string') out.strings.push(value);
  else if (Array.isArray(value)) value.forEach((v) => exampleKeysAndStrings(v, `${path}[]`, out));
  else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      out.keys.push(`${path}.${k}`);
      exampleKeysAndStrings(v, `${path}.${k}`, out);
    }
  }
}

function jsonSchemaOf(type: EventType) {
  return z.toJSONSchema(CATALOGUE[type].schema, { io: 'input' }) as { [k: string]: Json } & { $defs?: Record<string, Json> };
}

function schemaOf(type: EventType) {
  const out = { keys: [] as string[], open: [] as string[] };
  const json = jsonSchemaOf(type);
  walkSchema(json, '$', json.$defs ?? {}, out);
  return out;
}

describe('event catalogue', () => {
  it('holds exactly the 20 event types of SPEC.md, in its order', () => {
    expect([...EVENT_TYPES]).toEqual(SPEC_EVENT_TYPES);
    expect(Object.keys(CATALOGUE).sort()).toEqual([...SPEC_EVENT_TYPES].sort());
    const ids = EVENT_TYPES.map((t) => String(jsonSchemaOf(t).$ref));
    expect(new Set(ids).size).toBe(20);
  });

  it.each(EVENT_TYPES)('%s: example validates, carries event/site_id/timestamp, and is described', (type) => {
    const def = CATALOGUE[type];
    const r = validatePayload(type, def.example);
    expect(r.success, r.success ? '' : z.prettifyError(r.error)).toBe(true);
    expect(def.example).toMatchObject({ event: type, site_id: expect.any(String) });
    expect(new Date(def.example.timestamp).toISOString()).toBe(def.example.timestamp);
    expect(def.description.length).toBeGreaterThan(10);
    expect(def.description).not.toContain('\n');
    const json = jsonSchemaOf(type);
    const id = String(json.$ref).replace('#/$defs/', '');
    expect(id).toMatch(/^[A-Z][A-Za-z]+Event$/);
    const top = json.$defs?.[id] as { description?: string; required?: string[]; additionalProperties?: boolean };
    expect(top.description).toBe(def.description);
    expect(top.additionalProperties).toBe(false);
    expect(top.required).toEqual(expect.arrayContaining(['event', 'site_id', 'timestamp']));
  });

  it.each(EVENT_TYPES)('%s: schema is strict, pins the event literal and needs a UTC ISO timestamp', (type) => {
    const example = CATALOGUE[type].example as Record<string, unknown>;
    expect(validatePayload(type, { ...example, extra_field: 1 }).success).toBe(false);
    const other = EVENT_TYPES.find((t) => t !== type)!;
    expect(validatePayload(type, { ...example, event: other }).success).toBe(false);
    expect(validatePayload(type, { ...example, timestamp: 'yesterday' }).success).toBe(false);
    expect(validatePayload(type, { ...example, timestamp: '2025-06-02T11:30:00+02:00' }).success).toBe(false);
    const { site_id: _drop, ...noSite } = example;
    expect(validatePayload(type, noSite).success).toBe(false);
  });

  it('personalData is true for profile.identified only', () => {
    expect(EVENT_TYPES.filter((t) => CATALOGUE[t].personalData)).toEqual(['profile.identified']);
  });

  it('the personal-data rule detects what it is meant to detect (profile.identified)', () => {
    const { keys } = schemaOf('profile.identified');
    expect(keys.filter((k) => PERSONAL_KEY.test(k.split('.').pop()!))).toEqual(['$.profile.email']);
    expect(EMAIL.test(CATALOGUE['profile.identified'].example.profile.email)).toBe(true);
    expect(PHONE.test('+44 20 7946 0958')).toBe(true);
    expect(PHONE.test('call +1 (555) 010-9999 tomorrow')).toBe(true);
  });

  it.each(EVENT_TYPES.filter((t) => !CATALOGUE[t].personalData))(
    '%s: no property can hold an email, phone or name, and the example holds none',
    (type) => {
      const { keys, open } = schemaOf(type);
      expect(keys.length).toBeGreaterThan(3);
      expect(keys.filter((k) => PERSONAL_KEY.test(k.split('.').pop()!.replace(/\[\]$/, '')))).toEqual([]);
      // The only maps with arbitrary keys are the site's own custom event properties of the
      // behavioural events, which SPEC requires to be kept verbatim.
      expect(open).toEqual(BEHAVIOURAL_WEBHOOK_TYPES.has(type) ? ['$.properties'] : []);
      const json = jsonSchemaOf(type);
      const free: string[] = [];
      freeStrings(json, '$', json.$defs ?? {}, free);
      expect(free.length).toBeGreaterThan(0);
      expect(free.filter((p) => !REVIEWED_FREE_STRING.test(p.split('.').pop()!)), 'unreviewed free-text fields').toEqual([]);
      const ex = { keys: [] as string[], strings: [] as string[] };
      exampleKeysAndStrings(CATALOGUE[type].example, '$', ex);
      expect(ex.keys.filter((k) => PERSONAL_KEY.test(k.split('.').pop()!.replace(/\[\]$/, '')))).toEqual([]);
      for (const s of ex.strings) {
        expect(EMAIL.test(s), s).toBe(false);
        expect(PHONE.test(s.replace(ISO_DATE_TIME, '')), s).toBe(false);
      }
    },
  );

  it('validates the payloads the ingestion code writes, unchanged', () => {
    const at = Date.UTC(2025, 5, 2, 9, 30, 0, 123);
    const identified = profileIdentifiedPayload({
      siteId: 'site_a', visitorId: null, sessionId: 's1', email: 'ada@example.com', externalId: null, segment: null, at,
    });
    expect(validatePayload('profile.identified', identified)).toMatchObject({ success: true, data: identified });
    const full = profileIdentifiedPayload({
      siteId: 'site_a', visitorId: 'v1', sessionId: 's1', email: 'ada@example.com', externalId: 'crm-7', segment: 'seg_x', at,
    });
    expect(validatePayload('profile.identified', full).success).toBe(true);

    for (const revenue of [null, 0, 10_000_000, 19.99]) {
      const p = conversionPayload({
        siteId: 'site_a', conversionId: 'cnv_1', profileId: 'prf_1', sessionId: 's1', visitorId: null,
        revenue, currency: 'EUR', lineItems: revenue === null ? [] : [{ sku: 'A', qty: 2, price: 9.5 }], at,
      });
      expect(validatePayload('conversion', p)).toMatchObject({ success: true, data: p });
    }
    for (const kind of ['lead_form', 'optin'] as const) {
      for (const workable of [true, false]) {
        const p = leadCapturedPayload({ siteId: 'site_a', leadId: 'lead_1', formId: 'optin_form', kind, profileId: 'prf_1', workable, at });
        expect(validatePayload('lead.captured', p)).toMatchObject({ success: true, data: p });
      }
    }
    for (const type of BEHAVIOURAL_WEBHOOK_TYPES) {
      expect(isEventType(type)).toBe(true);
      const p = behaviouralPayload({
        type, siteId: 'site_a', eventId: 'evt_9', profileId: 'prf_1', sessionId: 's1', visitorId: 'v1', at,
        properties: { url: 'https://x.example/a', nested: { list: [1, 'two', null] }, flag: true },
      });
      expect(validatePayload(type as EventType, p)).toMatchObject({ success: true, data: p });
    }
  });

  it('refuses shapes the SPEC rules out', () => {
    const conv = CATALOGUE.conversion.example;
    expect(validatePayload('conversion', { ...conv, revenue: -1 }).success).toBe(false);
    expect(validatePayload('conversion', { ...conv, revenue: 10_000_001 }).success).toBe(false);
    expect(validatePayload('conversion', { ...conv, line_items: Array(101).fill({ sku: 'a', qty: 1, price: 1 }) }).success).toBe(false);
    const lead = CATALOGUE['lead.captured'].example;
    expect(validatePayload('lead.captured', { ...lead, email: 'ada@example.com' }).success).toBe(false);
    const call = CATALOGUE['call.completed'].example;
    expect(validatePayload('call.completed', { ...call, transcript: 'hello' }).success).toBe(false);
    expect(validatePayload('call.completed', { ...call, callback_at: null }).success).toBe(true);
    expect(validatePayload('call.completed', { ...call, callback_at: 'Tuesday' }).success).toBe(false);
    const stall = CATALOGUE['stall.found'].example;
    expect(validatePayload('stall.found', { ...stall, value_per_week: null }).success).toBe(true);
    expect(validatePayload('stall.found', { ...stall, iso_week: '2025-W54' }).success).toBe(false);
    const seg = CATALOGUE['segment.changed'].example;
    expect(validatePayload('segment.changed', { ...seg, previous_segment: null, segment: null }).success).toBe(true);
    const launched = CATALOGUE['campaign.launched'].example;
    const freeText = { ...launched.steps[0]!, error_code: 'Call Ada on +44 20 7946 0958' };
    expect(validatePayload('campaign.launched', { ...launched, steps: [freeText] }).success).toBe(false);
  });

  it('validatePayload reports an unknown event type as a failed result', () => {
    const r = validatePayload('nope' as EventType, {});
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]).toMatchObject({ code: 'custom', path: ['event'] });
    expect(isEventType('nope')).toBe(false);
    expect(isEventType(42)).toBe(false);
  });

  it.each(EVENT_TYPES)('%s: samplePayload stamps the site and now, and validates', (type) => {
    const before = Date.now();
    const p = samplePayload(type, 'site_other');
    expect(p.site_id).toBe('site_other');
    expect(Date.parse(p.timestamp)).toBeGreaterThanOrEqual(before - 1);
    expect(Date.parse(p.timestamp)).toBeLessThanOrEqual(Date.now());
    expect(validatePayload(type, p).success).toBe(true);
    expect(CATALOGUE[type].example.site_id).toBe('site_example');
  });
});

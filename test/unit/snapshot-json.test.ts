import { describe, expect, it } from 'vitest';
import { buildSnapshot, flatTraits, snapshotJson, stringified } from '../../src/domain/profiles/snapshot.js';
import { isoTime } from '../../src/domain/iso-time.js';
import type { ProfileFacts } from '../../src/store/profile-read.js';

/** GET /profile answers with snapshotJson: it must write JSON.stringify(buildSnapshot(...)) byte for byte. */

function facts(over: Partial<ProfileFacts> = {}, traits: unknown = { plan: 'gold', email: 'a@example.com', n: '12' }): ProfileFacts {
  return {
    profile: {
      id: 'prf_1',
      site_id: 'site_1',
      known: 1,
      traits: JSON.stringify(traits),
      primary_segment: 'seg_1',
      merged_into: null,
      created_at: 1_700_000_000_000,
      updated_at: 1_700_000_100_123,
    },
    identities: [
      { kind: 'email', value: 'a@example.com' },
      { kind: 'external_id', value: 'crm-1' },
      { kind: 'visitor', value: 'v1' },
      { kind: 'visitor', value: 'v2' },
    ],
    hashes: [
      { kind: 'email_sha256', hash: 'ab'.repeat(32) },
      { kind: 'phone_sha256', hash: 'cd'.repeat(32) },
    ],
    segments: [{ id: 'seg_1', name: 'Gold "buyers"', priority: 10, since: 1_700_000_000_500 }],
    sessions: { count: 2, first_seen: 1_700_000_000_000, last_seen: 1_700_000_200_000 },
    events: [
      { type: 'pageview', n: 3, last: 1_700_000_200_000 },
      { type: 'add_to_cart', n: 1, last: 1_700_000_150_000 },
    ],
    conversions: { count: 2, revenue: 0.1 + 0.2, last: 1_700_000_160_000, currency: 'EUR', otherCurrencies: [{ currency: 'USD', revenue: 12.5 }] },
    leads: 1,
    lastScore: { score: 0.731, at: 1_700_000_170_000 },
    mergedFrom: ['prf_0', 'prf_00'],
    ...over,
  };
}

const cases: [string, ProfileFacts][] = [
  ['a known profile with everything', facts()],
  [
    'an anonymous profile with nothing',
    facts(
      {
        identities: [{ kind: 'visitor', value: 'v9' }],
        hashes: [],
        segments: [],
        sessions: { count: 0, first_seen: null, last_seen: null },
        events: [],
        conversions: { count: 0, revenue: 0, last: null, currency: '', otherCurrencies: [] },
        leads: 0,
        lastScore: null,
        mergedFrom: [],
      },
      {},
    ),
  ],
  ['a score without a value, no primary segment', facts({ lastScore: { score: null, at: 1 }, profile: { ...facts().profile, primary_segment: null, known: 0 } })],
  [
    'strings to escape: quotes, backslashes, controls, unicode, lone surrogates, DEL',
    facts(
      {
        identities: [
          { kind: 'visitor', value: 'v"\\\n\t\u0001' },
          { kind: 'external_id', value: 'é日本\u{1F600}' },
          { kind: 'external_id', value: '\ud800x\u007f\u2028' },
        ],
        segments: [{ id: 'seg_\u00e9', name: '</script>\u0000', priority: -3, since: 0 }],
        events: [{ type: 'clíck "x"', n: 2, last: 5 }],
      },
      { 'na"me': 'Zoë "Z"', email: 'e\\x@example.com', phone: '+33 1', name: '\u2029', '10': 'numeric key', '2': 'first', nested: { a: [1, 'b'] } },
    ),
  ],
  ['traits without email, phone or name', facts({}, { plan: 'free' })],
  ['traits whose email is not a string', facts({}, { email: 42, phone: null, name: { first: 'A' } })],
  ['numbers: negative zero, large, fractional', facts({ conversions: { count: 1, revenue: -0, last: 8_640_000_000_000_000, currency: 'JPY', otherCurrencies: [] }, leads: 1e21 })],
];

describe('snapshotJson', () => {
  for (const [name, f] of cases) {
    for (const pii of [false, true]) {
      it(`writes JSON.stringify(buildSnapshot) exactly: ${name}, pii ${pii}`, () => {
        expect(snapshotJson(f, pii)).toBe(JSON.stringify(buildSnapshot(f, pii)));
      });
    }
  }

  it('says an answer is all ASCII only when it is, and says so for the usual answer', () => {
    const isAscii = (j: string) => /^[\u0000-\u007f]*$/.test(j);
    let claimed = 0;
    for (const [name, f] of cases) {
      for (const pii of [false, true]) {
        const body = { ascii: !pii };
        const j = snapshotJson(f, pii, body);
        if (body.ascii) claimed++;
        expect(isAscii(j) || !body.ascii, `${name}, pii ${pii}`).toBe(true);
      }
    }
    // The usual answer (printable ASCII everywhere, stored traits embedded) is said to be ASCII, with or without pii.
    const plainFacts: Partial<ProfileFacts> = {
      segments: [{ id: 'seg_1', name: 'Gold buyers', priority: 10, since: 1_700_000_000_500 }],
      conversions: { count: 2, revenue: 0.1 + 0.2, last: 1_700_000_160_000, currency: 'EUR', otherCurrencies: [] },
    };
    const usual = facts(plainFacts);
    for (const pii of [false, true]) {
      const body = { ascii: false };
      expect(snapshotJson(usual, pii, body)).toBe(JSON.stringify(buildSnapshot(usual, pii)));
      expect(body.ascii).toBe(true);
    }
    expect(claimed).toBeGreaterThan(0);
    // A character above U+007F anywhere: in embedded traits (pii only), an identity, a segment, an event type, a
    // merged id, another currency's code, a trait key (trait_keys), a trait value JSON.stringify re-writes.
    const wide: [string, ProfileFacts, boolean][] = [
      ['embedded traits', facts(plainFacts, { plan: 'gold', city: 'Z\u00fcrich' }), true],
      ['an identity', facts({ ...plainFacts, identities: [{ kind: 'visitor', value: 'v\u00e9' }] }), false],
      ['a segment name', facts({ ...plainFacts, segments: [{ id: 's', name: '\u65e5', priority: 1, since: 1 }] }), false],
      ['an event type', facts({ ...plainFacts, events: [{ type: '\u{1F600}', n: 1, last: 1 }] }), false],
      ['a merged id', facts({ ...plainFacts, mergedFrom: ['p\u0080'] }), false],
      ['another currency', facts({ ...plainFacts, conversions: { count: 1, revenue: 1, last: 1, currency: 'EUR', otherCurrencies: [{ currency: '\u20ac', revenue: 1 }] } }), false],
      ['a trait key', facts(plainFacts, { 'cl\u00e9': 'x' }), false],
      ['a re-written trait value', facts(plainFacts, { plan: '\u00e9', n: 1 }), true],
    ];
    for (const [name, f, pii] of wide) {
      // Each differs from `usual` (said to be ASCII above) in that one string.
      const body = { ascii: true };
      const j = snapshotJson(f, pii, body);
      expect(isAscii(j), name).toBe(false);
      expect(body.ascii, name).toBe(false);
    }
  });

  it('lists trait keys in the order of Array#sort, for few keys and many', () => {
    let seed = 5;
    const rand = (n: number) => (seed = (seed * 1103515245 + 12345) % 2147483648) % n;
    const alphabet = ['a', 'B', 'z', '0', '9', '_', '\u00e9', '\uff21', '\u{1F600}', '\ue000'];
    for (let n = 0; n <= 24; n++) {
      for (let round = 0; round < 20; round++) {
        const traits: Record<string, string> = {};
        while (Object.keys(traits).length < n) traits[Array.from({ length: 1 + rand(3) }, () => alphabet[rand(alphabet.length)]).join('')] = 'v';
        const f = facts({}, traits);
        for (const pii of [false, true]) expect(snapshotJson(f, pii)).toBe(JSON.stringify(buildSnapshot(f, pii)));
      }
    }
  });

  it('throws as buildSnapshot does on a time out of range', () => {
    const f = facts({ sessions: { count: 1, first_seen: 9e15, last_seen: 9e15 } });
    expect(() => JSON.stringify(buildSnapshot(f, false))).toThrow(RangeError);
    expect(() => snapshotJson(f, false)).toThrow(RangeError);
  });
});

/**
 * snapshotJson embeds the stored traits text as it is when it already is JSON.stringify of what JSON.parse reads
 * from it (stringified); any other stored text must still give JSON.stringify(buildSnapshot) byte for byte.
 */
describe('stored traits embedded as they are', () => {
  /**
   * What stringified must answer: the text is JSON.stringify of what it parses to, with only string values and
   * no escape (a text with an escape, or another value, is written by JSON.stringify, also when it would match).
   */
  const embeddable = (text: string): boolean => {
    const o = JSON.parse(text) as Record<string, unknown>;
    return JSON.stringify(o) === text && !text.includes('\\') && Object.values(o).every((v) => typeof v === 'string');
  };
  const stored: [string, string][] = [
    ['empty', '{}'],
    ['as JSON.stringify writes it', JSON.stringify({ plan: 'gold', email: 'a@example.com', n: '12', '': 'empty key' })],
    ['as the seeder writes it', '{"plan":"gold","country":"FR","n":"7","source":"ads","email":"zoe@example.com","name":"Zoë Ø","external_id":"crm-7","phone":"+33612345678"}'],
    ['non-ASCII and astral characters, U+2028', JSON.stringify({ 'clé': '日本\u{1F600}', x: '\u2028\u2029' })],
    ['spaces between members', '{ "plan": "gold", "n": "1" }'],
    ['a newline at the end', '{"plan":"gold"}\n'],
    ['an escape JSON.stringify would not write', '{"plan":"\\u0067old","url":"a\\/b"}'],
    ['escapes JSON.stringify writes', JSON.stringify({ q: 'say "hi"\\', c: '\n\t\u0001', s: '\ud800' })],
    ['a raw lone surrogate', '{"s":"\ud800x","t":"\udfff"}'],
    ['a duplicate key', '{"plan":"free","plan":"gold"}'],
    ['a duplicate key of the same length', '{"a":"1","b":"2","a":"3"}'],
    ['integer-like keys out of order', '{"b":"1","10":"x","2":"y"}'],
    ['integer-like keys in order', JSON.stringify({ b: '1', 10: 'x', 2: 'y' })],
    ['a key that is not an array index', '{"b":"1","4294967295":"x","-1":"y","01":"z"}'],
    ['values that are not strings', '{"n":12,"ok":true,"none":null,"list":["a"],"o":{"a":"b"}}'],
    ['a number written two ways', '{"n":1.0,"m":1e2}'],
    ['__proto__ as a key', '{"__proto__":"x","a":"b"}'],
    ['an email, phone and name that need escapes', JSON.stringify({ email: 'a"b@example.com', phone: '\\1', name: '\u0000' })],
  ];
  for (const [name, text] of stored) {
    it(`answers JSON.stringify(buildSnapshot) exactly: ${name}`, () => {
      const f = { ...facts(), profile: { ...facts().profile, traits: text } };
      for (const pii of [false, true]) expect(snapshotJson(f, pii)).toBe(JSON.stringify(buildSnapshot(f, pii)));
      expect(stringified(text, JSON.parse(text) as Record<string, unknown>)).toBe(embeddable(text));
    });
  }

  it('embeds the common case as it is and re-writes the rest (held to JSON.stringify over generated texts)', () => {
    let seed = 11;
    const rand = (n: number) => (seed = (seed * 1103515245 + 12345) % 2147483648) % n;
    const alphabet = ['a', 'b', 'Z', '0', '1', '9', ' ', '"', '\\', '/', 'é', '日', '\u{1F600}', '\ud800', '\udc00', '\n', '\u0000', '\u007f', '\u2028', ':', ',', '{', '}'];
    const word = () => Array.from({ length: rand(5) }, () => alphabet[rand(alphabet.length)]).join('');
    const key = () => (rand(4) === 0 ? String(rand(20)) : word());
    let embedded = 0;
    let flat = 0;
    for (let i = 0; i < 3_000; i++) {
      const members: [string, string][] = Array.from({ length: rand(6) }, () => [key(), word()]);
      const canonical = JSON.stringify(Object.fromEntries(members));
      // Hand-written texts: members in the given order (duplicates and integer keys as they come), each string raw
      // or through JSON.stringify, sometimes a space.
      const raw = (s: string) => (rand(2) === 0 ? JSON.stringify(s) : `"${s}"`);
      const sp = () => (rand(8) === 0 ? ' ' : '');
      const hand = `{${members.map(([k, v]) => `${sp()}${raw(k)}:${sp()}${raw(v)}`).join(',')}}`;
      for (const text of [canonical, hand]) {
        let o: Record<string, unknown>;
        try {
          o = JSON.parse(text) as Record<string, unknown>;
        } catch {
          continue;
        }
        expect(stringified(text, o), text).toBe(embeddable(text));
        if (embeddable(text)) embedded++;
        const t = flatTraits(text);
        if (t !== null) {
          // Read without JSON.parse only when the text is JSON.stringify of what JSON.parse reads: the same keys in
          // the same order and the same values.
          flat++;
          expect(embeddable(text), text).toBe(true);
          expect(t.keys, text).toEqual(Object.keys(o));
          expect(t.values, text).toEqual(Object.values(o));
          expect(t.ascii, text).toBe(/^[\u0000-\u007f]*$/.test(text));
        }
        const f = { ...facts(), profile: { ...facts().profile, traits: text } };
        const body = { ascii: true };
        const j = snapshotJson(f, true, body);
        expect(j, text).toBe(JSON.stringify(buildSnapshot(f, true)));
        // Never said to be ASCII when it is not (it would be sent as Latin-1).
        if (body.ascii) expect(/^[\u0000-\u007f]*$/.test(j), text).toBe(true);
      }
    }
    expect(embedded).toBeGreaterThan(2_000);
    expect(flat).toBeGreaterThan(1_000);
  });

  it('reads the usual stored text without JSON.parse, and leaves every other form to it', () => {
    const usual = '{"plan":"gold","country":"FR","n":"7","source":"ads","email":"zoe@example.com","name":"Zo\u00eb \u00d8","external_id":"crm-7","phone":"+33612345678"}';
    expect(flatTraits(usual)).toEqual({ keys: Object.keys(JSON.parse(usual)), values: Object.values(JSON.parse(usual)), ascii: false });
    expect(flatTraits('{}')).toEqual({ keys: [], values: [], ascii: true });
    expect(flatTraits(JSON.stringify({ a: 'b', '': '' }))).toEqual({ keys: ['a', ''], values: ['b', ''], ascii: true });
    for (const text of [
      '{"a":"1","a":"2"}',
      '{"b":"1","2":"y"}',
      '{"1a":"x"}',
      '{"a":"\\u0041"}',
      '{"a":1}',
      '{"a":"b",}',
      '{"a":"b"}}',
      '{"a":"b"} ',
      '{ "a":"b"}',
      '{"a" :"b"}',
      '{"s":"\ud800"}',
      '{"a":"\u0001"}',
      '{"a"}',
      '{"a":"b"',
      JSON.stringify(Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']))),
    ]) {
      expect(flatTraits(text), text).toBeNull();
    }
    expect(flatTraits(JSON.stringify(Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`, 'v']))))?.keys.length).toBe(16);
  });
});

describe('isoTime', () => {
  it('writes what toISOString writes, in range and out of it', () => {
    const values = [0, 1, 999, 1000, 86_399_999, 86_400_000, 951_782_400_000, 951_868_799_999, 4_107_542_400_000, 253_402_300_799_999, 253_402_300_800_000, -1, -86_400_000, 8.64e15, 1_700_000_000_123.7];
    let seed = 7;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    for (let i = 0; i < 20_000; i++) values.push(Math.floor(rand() * 253_402_300_800_000));
    for (let i = 0; i < 2_000; i++) values.push(Math.floor(rand() * 4_000_000_000_000) + 946_684_800_000 - 86_400_000 * 400);
    for (const t of values) expect(isoTime(t), String(t)).toBe(new Date(t).toISOString());
  });

  it('throws as toISOString does on an invalid time', () => {
    expect(() => isoTime(Number.NaN)).toThrow(RangeError);
    expect(() => isoTime(8.64e15 + 1)).toThrow(RangeError);
  });
});

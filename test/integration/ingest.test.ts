import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'node:http';
import { connect } from 'node:net';
import { cleanup, cli, createSite, post, startSvc, stats, tempDir, type Stats, type Svc } from '../helpers/svc.js';
import { query, storeStats } from '../helpers/db.js';

let svc: Svc;
let dataDir: string;
let site: string;
let otherSite: string;

beforeAll(async () => {
  dataDir = tempDir();
  site = createSite(dataDir);
  otherSite = createSite(dataDir, 'Other');
  svc = await startSvc({ dataDir });
});
afterAll(async () => {
  expect(await svc.stop()).toBe(0);
  cleanup(dataDir);
});

/**
 * What a site has stored, for the "stores nothing" checks: the `svc stats` counts, but the outbox as one
 * count in one statement, since the server's dispatcher moves rows from pending to done at any moment
 * (and counting the two one after the other can see a row in both).
 */
const rowCounts = ({ outbox_pending: _pending, outbox_done: _done, ...rest }: Stats) => rest;
const stored = async () => ({
  ...rowCounts(await storeStats(dataDir, site)),
  outbox: Number(query<{ n: number }>(dataDir, 'SELECT count(*) AS n FROM outbox WHERE site_id = ?', site)[0]!.n),
});

const outbox = (type: string, s = site) =>
  query<{ payload: string }>(dataDir, 'SELECT payload FROM outbox WHERE site_id = ? AND event_type = ? ORDER BY id', s, type).map(
    (r) => JSON.parse(r.payload) as Record<string, any>,
  );

describe('POST /api/identify', () => {
  it('links the session to the visitor profile and emits profile.identified once', async () => {
    const ev = await post(`${svc.url}/api/events`, { site_id: site, session_id: 'id-s1', visitor_id: 'id-v1', type: 'pageview' });
    expect(ev.status).toBe(201);
    const r = await post(`${svc.url}/api/identify`, {
      site_id: site,
      session_id: 'id-s1',
      visitor_id: 'id-v1',
      traits: { email: '  Jane.Doe@Example.COM ', plan: 'pro' },
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ profile_id: ev.body.profile_id, known: true, identified: true, merged_profiles: 0 });
    const again = await post(`${svc.url}/api/identify`, {
      site_id: site,
      session_id: 'id-s1',
      visitor_id: 'id-v1',
      traits: { company: 'Acme' },
    });
    expect(again.body).toMatchObject({ profile_id: ev.body.profile_id, identified: false });
    const events = outbox('profile.identified').filter((p) => p.session_id === 'id-s1');
    expect(events).toHaveLength(1);
    const p = events[0]!;
    expect(Object.keys(p).sort()).toEqual(['event', 'profile', 'segment', 'session_id', 'site_id', 'timestamp', 'visitor_id']);
    expect(p).toMatchObject({
      event: 'profile.identified',
      site_id: site,
      visitor_id: 'id-v1',
      session_id: 'id-s1',
      profile: { email: 'jane.doe@example.com', external_id: '' },
      segment: '',
    });
    expect(new Date(p.timestamp).toISOString()).toBe(p.timestamp);
    const [row] = query<{ traits: string; known: number }>(dataDir, 'SELECT traits, known FROM profiles WHERE id = ?', ev.body.profile_id);
    expect(JSON.parse(row!.traits)).toEqual({ email: 'jane.doe@example.com', plan: 'pro', company: 'Acme' });
  });

  it('stitches a second visitor with the same email onto the same profile, moving its anonymous history', async () => {
    const first = await post(`${svc.url}/api/identify`, {
      site_id: site,
      session_id: 'st-s1',
      visitor_id: 'st-v1',
      traits: { email: 'stitch@example.com' },
    });
    const anon = await post(`${svc.url}/api/events`, {
      site_id: site,
      session_id: 'st-s2',
      visitor_id: 'st-v2',
      type: 'add_to_cart',
      sku: 'A1',
    });
    expect(anon.body.profile_id).not.toBe(first.body.profile_id);
    const second = await post(`${svc.url}/api/identify`, {
      site_id: site,
      session_id: 'st-s2',
      visitor_id: 'st-v2',
      traits: { email: 'STITCH@example.com', external_id: 'crm-42' },
    });
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({ profile_id: first.body.profile_id, identified: true, merged_profiles: 1 });
    const owners = query<{ profile_id: string }>(
      dataDir,
      "SELECT DISTINCT profile_id FROM identities WHERE site_id = ? AND value IN ('stitch@example.com','st-v1','st-v2','crm-42')",
      site,
    );
    expect(owners).toEqual([{ profile_id: first.body.profile_id }]);
    const moved = query<{ profile_id: string }>(dataDir, "SELECT profile_id FROM events WHERE session_id = 'st-s2'");
    expect(moved).toEqual([{ profile_id: first.body.profile_id }]);
    const merged = query<{ merged_into: string }>(dataDir, 'SELECT merged_into FROM profiles WHERE id = ?', anon.body.profile_id);
    expect(merged[0]!.merged_into).toBe(first.body.profile_id);
    const byEmail = query(dataDir, "SELECT * FROM identities WHERE site_id = ? AND kind = 'email' AND value = 'stitch@example.com'", site);
    expect(byEmail).toHaveLength(1);
  });

  it('refuses an email and external_id that belong to two different profiles, storing nothing', async () => {
    await post(`${svc.url}/api/identify`, { site_id: site, session_id: 'cf-1', traits: { email: 'a@conflict.test' } });
    await post(`${svc.url}/api/identify`, { site_id: site, session_id: 'cf-2', traits: { external_id: 'ext-conflict' } });
    const before = await stored();
    // The in-process reader the checks below use counts exactly what `svc stats` prints.
    const { outbox: _outbox, ...counts } = before;
    expect(rowCounts(stats(dataDir, site))).toEqual(counts);
    expect(before.profiles).toBeGreaterThan(0);
    const r = await post(`${svc.url}/api/identify`, {
      site_id: site,
      session_id: 'cf-3',
      traits: { email: 'a@conflict.test', external_id: 'ext-conflict' },
    });
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe('identity_conflict');
    expect(await stored()).toEqual(before);
  });

  it('keeps sites apart: the same email on another site is another profile', async () => {
    const a = await post(`${svc.url}/api/identify`, { site_id: site, session_id: 'ten-1', traits: { email: 'tenant@example.com' } });
    const b = await post(`${svc.url}/api/identify`, { site_id: otherSite, session_id: 'ten-1', traits: { email: 'tenant@example.com' } });
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(a.body.profile_id).not.toBe(b.body.profile_id);
  });

  it.each([
    [{ session_id: 's', traits: { a: 'b' } }, 'site_id'],
    [{ site_id: 'SITE', traits: { a: 'b' } }, 'session_id'],
    [{ site_id: 'SITE', session_id: 's', traits: {} }, 'traits'],
    [{ site_id: 'SITE', session_id: 's', traits: { n: 5 } }, 'traits.n'],
    [{ site_id: 'SITE', session_id: 's' }, 'traits'],
    [{ site_id: 'SITE', session_id: 's', traits: { a: 'b' }, extra: 1 }, '(body)'],
    [{ site_id: 'SITE', session_id: 5, traits: { a: 'b' } }, 'session_id'],
  ])('rejects %j naming %s', async (body, field) => {
    const json = JSON.parse(JSON.stringify(body).replace('SITE', site));
    const before = await stored();
    const r = await post(`${svc.url}/api/identify`, json);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('validation_failed');
    expect(r.body.error.details.field).toBe(field);
    expect(await stored()).toEqual(before);
  });
});

describe('POST /api/convert', () => {
  it('records revenue and line items and writes the conversion event', async () => {
    const items = [
      { sku: 'SKU-1', qty: 2, price: 19.99 },
      { sku: 'SKU-2', qty: 1, price: 0 },
    ];
    const r = await post(`${svc.url}/api/convert`, { site_id: site, session_id: 'cv-1', revenue: 39.98, line_items: items });
    expect(r.status).toBe(201);
    expect(r.body.conversion_id).toMatch(/^cnv_/);
    const [row] = query<{ revenue: number; line_items: string; currency: string }>(
      dataDir,
      'SELECT revenue, line_items, currency FROM conversions WHERE id = ?',
      r.body.conversion_id,
    );
    expect(row).toEqual({ revenue: 39.98, line_items: JSON.stringify(items), currency: 'USD' });
    const ev = outbox('conversion').find((p) => p.conversion_id === r.body.conversion_id);
    expect(ev).toMatchObject({ event: 'conversion', revenue: 39.98, line_items: items, session_id: 'cv-1' });
  });

  it('records a non-revenue conversion with revenue null', async () => {
    const r = await post(`${svc.url}/api/convert`, { site_id: site, session_id: 'cv-2', revenue: null });
    expect(r.status).toBe(201);
    const [row] = query<{ revenue: number | null }>(dataDir, 'SELECT revenue FROM conversions WHERE id = ?', r.body.conversion_id);
    expect(row!.revenue).toBeNull();
  });

  it('accepts the bounds 0 and 10,000,000 and 100 line items', async () => {
    const items = Array.from({ length: 100 }, (_, i) => ({ sku: `S${i}`, qty: 1, price: 1 }));
    expect((await post(`${svc.url}/api/convert`, { site_id: site, session_id: 'cv-3', revenue: 0 })).status).toBe(201);
    expect((await post(`${svc.url}/api/convert`, { site_id: site, session_id: 'cv-3', revenue: 10_000_000, line_items: items })).status).toBe(201);
  });

  it.each([
    ['{"site_id":"SITE","session_id":"x","revenue":-0.01}', 'revenue'],
    ['{"site_id":"SITE","session_id":"x","revenue":10000000.01}', 'revenue'],
    ['{"site_id":"SITE","session_id":"x","revenue":1e400}', 'revenue'],
    ['{"site_id":"SITE","session_id":"x","revenue":"12"}', 'revenue'],
    ['{"site_id":"SITE","session_id":"x"}', 'revenue'],
    ['{"site_id":"SITE","session_id":"x","revenue":1,"line_items":[{"sku":"a","qty":-1,"price":1}]}', 'line_items[0].qty'],
    ['{"site_id":"SITE","session_id":"x","revenue":1,"line_items":[{"sku":"a","qty":1,"price":-5}]}', 'line_items[0].price'],
    ['{"site_id":"SITE","session_id":"x","revenue":1,"line_items":[{"sku":"a","qty":1e999,"price":1}]}', 'line_items[0].qty'],
    ['{"site_id":"SITE","session_id":"x","revenue":1,"line_items":[{"sku":"a","qty":1000001,"price":1}]}', 'line_items[0].qty'],
    ['{"site_id":"SITE","session_id":"x","revenue":1,"line_items":[{"sku":"a","qty":1,"price":1},{"sku":"b","qty":1,"price":10000000.01}]}', 'line_items[1].price'],
    ['{"site_id":"SITE","session_id":"x","revenue":1,"line_items":[{"qty":1,"price":1}]}', 'line_items[0].sku'],
    ['{"site_id":"SITE","session_id":"x","revenue":1,"line_items":{}}', 'line_items'],
  ])('rejects %s naming %s, storing nothing', async (raw, field) => {
    const before = await stored();
    const r = await post(`${svc.url}/api/convert`, raw.replace('SITE', site));
    expect(r.status).toBe(400);
    expect(r.body.error.details.field).toBe(field);
    expect(await stored()).toEqual(before);
  });

  it('rejects 101 line items', async () => {
    const items = Array.from({ length: 101 }, (_, i) => ({ sku: `S${i}`, qty: 1, price: 1 }));
    const r = await post(`${svc.url}/api/convert`, { site_id: site, session_id: 'cv-4', revenue: 1, line_items: items });
    expect(r.status).toBe(400);
    expect(r.body.error.details.field).toBe('line_items');
    expect(r.body.error.message).toContain('100');
  });
});

describe('POST /api/lead/capture', () => {
  it('stores a lead, identifies the profile and emits lead.captured without personal values', async () => {
    const r = await post(`${svc.url}/api/lead/capture`, {
      site_id: site,
      visitor_id: 'lead-v1',
      email: 'Lead@Example.com',
      name: 'Lea D',
      phone: '+44 20 7946 0000',
      appointment_slot: '2026-12-01T10:30:00+01:00',
      form_id: 'demo-request',
    });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ form_id: 'demo-request', kind: 'lead_form', workable: true });
    const [lead] = query<Record<string, unknown>>(dataDir, 'SELECT * FROM leads WHERE id = ?', r.body.lead_id);
    expect(lead).toMatchObject({ email: 'Lead@Example.com', name: 'Lea D', appointment_slot: '2026-12-01T10:30:00+01:00', status: 'new', workable: 1 });
    const ev = outbox('lead.captured').find((p) => p.lead_id === r.body.lead_id)!;
    expect(ev).toMatchObject({ event: 'lead.captured', lead_id: r.body.lead_id, form_id: 'demo-request' });
    const text = JSON.stringify(ev);
    expect(text).not.toMatch(/lead@example\.com|Lea D|7946/i);
    const ident = outbox('profile.identified').find((p) => p.profile.email === 'lead@example.com');
    expect(ident?.visitor_id).toBe('lead-v1');
  });

  it('stitches a lead whose email is already known onto that profile, its contact values becoming traits', async () => {
    const known = await post(`${svc.url}/api/identify`, { site_id: site, session_id: 'ls-1', visitor_id: 'ls-v1', traits: { email: 'known.lead@example.com' } });
    const r = await post(`${svc.url}/api/lead/capture`, { site_id: site, visitor_id: 'ls-v2', email: ' Known.Lead@Example.com ', phone: '+1 555 0100' });
    expect(r.status).toBe(201);
    expect(r.body.profile_id).toBe(known.body.profile_id);
    const [row] = query<{ traits: string }>(dataDir, 'SELECT traits FROM profiles WHERE id = ?', known.body.profile_id);
    expect(JSON.parse(row!.traits)).toEqual({ email: 'known.lead@example.com', phone: '+1 555 0100' });
    const owners = query<{ profile_id: string }>(dataDir, "SELECT DISTINCT profile_id FROM identities WHERE site_id = ? AND value IN ('known.lead@example.com', 'ls-v1', 'ls-v2')", site);
    expect(owners).toEqual([{ profile_id: known.body.profile_id }]);
  });

  it('files source=optin_form as an opt-in and anything else as a lead form', async () => {
    const a = await post(`${svc.url}/api/lead/capture`, { site_id: site, email: 'n@example.com', source: 'optin_form' });
    const b = await post(`${svc.url}/api/lead/capture`, { site_id: site, email: 'm@example.com', source: 'footer' });
    expect(a.body.kind).toBe('optin');
    expect(b.body.kind).toBe('lead_form');
  });

  it('stores a lead with no contact value and flags it not workable', async () => {
    const r = await post(`${svc.url}/api/lead/capture`, { site_id: site, session_id: 'lead-empty' });
    expect(r.status).toBe(201);
    expect(r.body.workable).toBe(false);
    const [lead] = query<{ status: string; workable: number }>(dataDir, 'SELECT status, workable FROM leads WHERE id = ?', r.body.lead_id);
    expect(lead).toEqual({ status: 'unworkable', workable: 0 });
  });

  it.each([
    ['email', 'e'.repeat(308) + '@example.com', 'e'.repeat(309) + '@example.com'],
    ['name', 'n'.repeat(200), 'n'.repeat(201)],
    ['phone', '1'.repeat(40), '1'.repeat(41)],
  ])('accepts %s at its limit and rejects one character more', async (field, ok, tooLong) => {
    expect((await post(`${svc.url}/api/lead/capture`, { site_id: site, [field]: ok })).status).toBe(201);
    const before = await stored();
    const r = await post(`${svc.url}/api/lead/capture`, { site_id: site, [field]: tooLong });
    expect(r.status).toBe(400);
    expect(r.body.error.details.field).toBe(field);
    expect(await stored()).toEqual(before);
  });

  it.each(['tomorrow', '2026-13-01T10:00:00Z', '2026-12-01T10:00:00', '2026-12-01'])('rejects appointment_slot %s', async (slot) => {
    const r = await post(`${svc.url}/api/lead/capture`, { site_id: site, email: 'x@example.com', appointment_slot: slot });
    expect(r.status).toBe(400);
    expect(r.body.error.details.field).toBe('appointment_slot');
  });
});

describe('POST /api/events and /api/score', () => {
  it('stores custom keys verbatim, byte for byte', async () => {
    const raw = `{"site_id":"${site}","session_id":"vb-1","type":"signup_step","big":9007199254740991,"f":1.50,"e":1E2,"s":"caf\\u00e9 ☕","nested":{"a":[1,{"b":null}],"":true},"neg":-0}`;
    const r = await post(`${svc.url}/api/events`, raw);
    expect(r.status).toBe(201);
    const id = Number(String(r.body.event_id).replace('evt_', ''));
    const [row] = query<{ body: string; type: string }>(dataDir, 'SELECT body, type FROM events WHERE id = ?', id);
    expect(row!.body).toBe(raw);
    expect(row!.type).toBe('signup_step');
    const score = `{"site_id":"${site}","session_id":"vb-1","score":0.75,"signal_dwell_ms":12000,"weird key":[true,false]}`;
    const s = await post(`${svc.url}/api/score`, score);
    expect(s.status).toBe(201);
    const [srow] = query<{ body: string; score: number }>(dataDir, 'SELECT body, score FROM scores WHERE id = ?', Number(s.body.score_id.replace('scr_', '')));
    expect(srow).toEqual({ body: score, score: 0.75 });
  });

  it('writes pageview, click, add_to_cart and abandon_cart to the outbox while a destination subscribes, and custom types not', async () => {
    const types = ['pageview', 'click', 'add_to_cart', 'abandon_cart'];
    const obSite = createSite(dataDir, 'Outbox');
    const send = async (session: string) => {
      for (const type of [...types, 'custom_thing']) {
        const r = await post(`${svc.url}/api/events`, { site_id: obSite, session_id: session, type, timestamp: '2026-11-20T10:00:00+02:00', label: 'x' });
        expect(r.status).toBe(201);
      }
    };
    const rows = (session: string) =>
      query<{ event_type: string; payload: string }>(dataDir, 'SELECT event_type, payload FROM outbox WHERE site_id = ? ORDER BY id', obSite)
        .map((r) => ({ type: r.event_type, p: JSON.parse(r.payload) as Record<string, any> }))
        .filter((r) => r.p.session_id === session);
    const webhooks = (...args: string[]) => {
      const r = cli(['webhooks', ...args, '--data', dataDir, '--json']);
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout) as { id: string };
    };
    // No destination: no outbox row at all (the events themselves are stored).
    await send('ob-none');
    expect(rows('ob-none')).toEqual([]);
    expect(Number(query<{ n: number }>(dataDir, "SELECT count(*) AS n FROM events WHERE site_id = ? AND session_id = 'ob-none'", obSite)[0]!.n)).toBe(5);
    // A destination of another site changes nothing for this one.
    webhooks('add', '--site', otherSite, '--url', 'http://127.0.0.1:9/other', '--events', 'all', '--allow-private-destinations');
    await send('ob-other');
    expect(rows('ob-other')).toEqual([]);
    // A destination subscribed to click only: the click alone.
    const clicks = webhooks('add', '--site', obSite, '--url', 'http://127.0.0.1:9/clicks', '--events', 'click', '--allow-private-destinations');
    await send('ob-click');
    expect(rows('ob-click').map((r) => r.type)).toEqual(['click']);
    // Subscribed to all four: one row each, events before it keep none.
    webhooks('update', clicks.id, '--events', types.join(','));
    await send('ob-1');
    const got = rows('ob-1');
    expect(got.map((r) => r.type)).toEqual(types);
    for (const r of got) expect(r.p).toMatchObject({ event: r.type, timestamp: '2026-11-20T08:00:00.000Z', properties: { label: 'x' } });
    expect(rows('ob-none')).toEqual([]);
    expect(query(dataDir, "SELECT id FROM outbox WHERE event_type = 'custom_thing'")).toHaveLength(0);
    // Disabled: none again; enabled again: rows again.
    webhooks('update', clicks.id, '--disable');
    await send('ob-off');
    expect(rows('ob-off')).toEqual([]);
    webhooks('update', clicks.id, '--enable');
    await send('ob-on');
    expect(rows('ob-on').map((r) => r.type)).toEqual(types);
    webhooks('remove', clicks.id);
    await send('ob-gone');
    expect(rows('ob-gone')).toEqual([]);
  });

  async function rawPost(path: string, chunks: Buffer[], headers: Record<string, string | number>) {
    const u = new URL(path, svc.url);
    return new Promise<{ status: number; headers: Record<string, unknown>; body: any }>((resolve, reject) => {
      const req = request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers }, (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: JSON.parse(text) }));
      });
      req.on('error', reject);
      for (const c of chunks) req.write(c);
      req.end();
    });
  }

  function eventOfSize(size: number): Buffer {
    const head = `{"site_id":"${site}","session_id":"cap-1","type":"big","pad":"`;
    const tail = '"}';
    return Buffer.from(head + 'x'.repeat(size - head.length - tail.length) + tail);
  }

  it('accepts a body of exactly 65,536 bytes and refuses 65,537 with 413 and the size headers', async () => {
    const before = await stored();
    const ok = await post(`${svc.url}/api/events`, eventOfSize(65_536).toString());
    expect(ok.status).toBe(201);
    const mid = await stored();
    expect(mid.events).toBe(before.events + 1);
    const r = await post(`${svc.url}/api/events`, eventOfSize(65_537).toString());
    expect(r.status).toBe(413);
    expect(r.body.error.code).toBe('payload_too_large');
    expect(r.body.error.message).toContain('65537');
    expect(r.body.error.message).toContain('65536');
    expect(r.headers.get('x-svc-body-limit')).toBe('65536');
    expect(r.headers.get('x-svc-body-size')).toBe('65537');
    expect(await stored()).toEqual(mid);
  });

  it('counts chunked bodies with no Content-Length on the wire', async () => {
    const before = await stored();
    const body = eventOfSize(100_000);
    const chunks = [body.subarray(0, 30_000), body.subarray(30_000, 70_000), body.subarray(70_000)];
    const r = await rawPost('/api/score', chunks, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    expect(r.status).toBe(413);
    expect(r.headers['x-svc-body-size']).toBe('100000');
    expect(r.body.error.details).toMatchObject({ limit: 65_536, size: 100_000 });
    expect(await stored()).toEqual(before);
  });

  it('refuses a body far over the cap on its declared size, without waiting for it', async () => {
    // Raw socket: 10 bytes of a declared 50,000,000 are sent, the rest never is; the answer must come anyway.
    const u = new URL(svc.url);
    const before = await stored();
    const text = await new Promise<string>((resolve, reject) => {
      const s = connect(Number(u.port), u.hostname);
      let out = '';
      s.on('data', (c: Buffer) => (out += c.toString()));
      s.on('close', () => resolve(out));
      s.on('error', reject);
      s.write(
        `POST /api/events HTTP/1.1\r\nHost: ${u.host}\r\nContent-Type: application/json\r\nContent-Length: 50000000\r\n\r\n` +
          '{"site_id"',
      );
    });
    expect(text).toMatch(/^HTTP\/1\.1 413 /);
    expect(text).toMatch(/\r\nX-SVC-Body-Size: 50000000\r\n/i);
    expect(text).toMatch(/\r\nX-SVC-Body-Limit: 65536\r\n/i);
    expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)).error.code).toBe('payload_too_large');
    expect(await stored()).toEqual(before);
  });

  it('applies the documented caps to identify, convert and lead capture too', async () => {
    const before = await stored();
    const pad = 'p'.repeat(40_000);
    const r = await post(`${svc.url}/api/identify`, { site_id: site, session_id: 'c', traits: { a: pad } });
    expect(r.status).toBe(413);
    expect(r.headers.get('x-svc-body-limit')).toBe('32768');
    const l = await post(`${svc.url}/api/lead/capture`, { site_id: site, name: pad });
    expect(l.status).toBe(413);
    expect(l.headers.get('x-svc-body-limit')).toBe('16384');
    // Valid content cannot reach 64 KB here (100 line items of 256-character skus are 28 KB): whitespace does.
    const raw = `{"site_id":"${site}","session_id":"c","revenue":1${' '.repeat(70_000)}}`;
    const c = await post(`${svc.url}/api/convert`, raw);
    expect(c.status).toBe(413);
    expect(c.body.error.code).toBe('payload_too_large');
    expect(c.headers.get('x-svc-body-limit')).toBe('65536');
    expect(c.headers.get('x-svc-body-size')).toBe(String(Buffer.byteLength(raw)));
    expect(await stored()).toEqual(before);
  });

  it.each([
    ['{"session_id":"x","type":"pageview"}', 'site_id'],
    ['{"site_id":"SITE","type":"pageview"}', 'session_id'],
    ['{"site_id":"SITE","session_id":"x"}', 'type'],
    ['{"site_id":"SITE","session_id":"x","type":"pageview","timestamp":"yesterday"}', 'timestamp'],
    ['{"site_id":"SITE","session_id":"x","type":"has space"}', 'type'],
    ['{"site_id":"SITE","session_id":"x","type":"pageview","timestamp":"9999-12-31T23:59:59-23:59"}', 'timestamp'],
    ['{"site_id":"SITE","session_id":"x","type":"pageview","timestamp":"0000-01-01T00:00:00Z"}', 'timestamp'],
    ['{"site_id":"SITE","session_id":"x","type":"pageview","timestamp":"1999-12-31T23:59:59.999Z"}', 'timestamp'],
    ['[1,2]', '(body)'],
    ['"text"', '(body)'],
  ])('rejects event %s naming %s, storing nothing', async (raw, field) => {
    const before = await stored();
    const r = await post(`${svc.url}/api/events`, raw.replace('SITE', site));
    expect(r.status).toBe(400);
    expect(r.body.error.details.field).toBe(field);
    expect(await stored()).toEqual(before);
  });

  it('accepts event times from 2000-01-01T00:00:00Z to 24 hours ahead of the server clock, and no later', async () => {
    const at = (ts: string) => post(`${svc.url}/api/events`, { site_id: site, session_id: 'tsb', type: 'custom_ts', timestamp: ts });
    expect((await at('2000-01-01T00:00:00Z')).status).toBe(201);
    expect((await at(new Date(Date.now() + 23 * 3600_000).toISOString())).status).toBe(201);
    const late = await at(new Date(Date.now() + 25 * 3600_000).toISOString());
    expect(late.status).toBe(400);
    expect(late.body.error.message).toBe('timestamp: must lie between 2000-01-01T00:00:00Z and 24 hours after the server time');
  });

  it('rejects a non-numeric score', async () => {
    const r = await post(`${svc.url}/api/score`, { site_id: site, session_id: 'x', score: 'high' });
    expect(r.status).toBe(400);
    expect(r.body.error.details.field).toBe('score');
  });
});

describe('bad input never stores and never 500s', () => {
  it.each([
    ['/api/events', '{"site_id":', 'application/json', 400, 'invalid_json'],
    ['/api/identify', '', 'application/json', 400, 'invalid_json'],
    ['/api/convert', 'revenue=1', 'application/x-www-form-urlencoded', 415, 'unsupported_media_type'],
    ['/api/score', '{}', '', 415, 'unsupported_media_type'],
  ])('%s with %j (%s) gives %i %s', async (path, body, type, status, code) => {
    const before = await stored();
    const res = await fetch(`${svc.url}${path}`, {
      method: 'POST',
      headers: type ? { 'content-type': type } : {},
      body: new TextEncoder().encode(body),
    });
    expect(res.status).toBe(status);
    expect(((await res.json()) as any).error.code).toBe(code);
    expect(await stored()).toEqual(before);
  });

  const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
  it.each([
    ['/api/events', '{"site_id":"SITE","session_id":"h","type":"pageview","deep":' + deep(20_000) + '}', 'deep' + '[0]'.repeat(63)],
    ['/api/score', '{"site_id":"SITE","session_id":"h","deep":' + deep(64) + '}', 'deep' + '[0]'.repeat(63)],
    ['/api/events', '{"site_id":"SITE","session_id":"h\\u0000","type":"pageview"}', 'session_id'],
    ['/api/lead/capture', '{"site_id":"SITE","name":"x\\u0000y"}', 'name'],
    ['/api/events', '{"site_id":"SITE","session_id":"h","type":"pageview","url":"https://a.test/\\u0000"}', 'url'],
    ['/api/events', '{"site_id":"SITE","session_id":"\\ud800","type":"pageview"}', 'session_id'],
    ['/api/events', '{"site_id":"SITE","session_id":"h","type":"pageview","type":"click"}', 'type'],
    ['/api/convert', '{"site_id":"SITE","session_id":"h","revenue":1e308,"revenue":5}', 'revenue'],
    ['/api/identify', '{"site_id":"SITE","session_id":"h","traits":{"__proto__":"x","a":"b"}}', 'traits.__proto__'],
    ['/api/events', '{"site_id":"SITE","session_id":"h","type":"pageview","__proto__":{"type":"x"}}', '__proto__'],
    ['/api/events', '{"site_id":"SITE","session_id":"h","type":"pageview","p":{"x":1e400}}', 'p.x'],
    ['/api/events', '{"site_id":"SITE","session_id":"h","type":"pageview","y":-1e400}', 'y'],
    ['/api/events', '{"site_id":"SITE","session_id":"h","type":"pageview","z":123456789012345678901234567890}', 'z'],
    ['/api/score', '{"site_id":"SITE","session_id":"h","w":[0,1e-400]}', 'w[1]'],
    ['/api/convert', '{"site_id":"SITE","session_id":"h","revenue":5,"line_items":[{"sku":"a","qty":9007199254740993,"price":1}]}', 'line_items[0].qty'],
    ['/api/lead/capture', '{"site_id":"SITE","visitor_id":"c","email":"jane@exa\u202emple.com"}', 'email'],
    ['/api/lead/capture', '{"site_id":"SITE","visitor_id":"c","name":"Jane\\u0007Doe"}', 'name'],
    ['/api/lead/capture', '{"site_id":"SITE","visitor_id":"c","phone":"+1 555\uffff"}', 'phone'],
    ['/api/lead/capture', '{"site_id":"SITE","visitor_id":"c","name":"x\udbff\udfff"}', 'name'],
    ['/api/identify', '{"site_id":"SITE","session_id":"c","traits":{"email":"a\u2066@b.c"}}', 'traits.email'],
    ['/api/identify', '{"site_id":"SITE","session_id":"c","traits":{"plan":"p","name":"Ann\u0085"}}', 'traits.name'],
    ['/api/identify', '{"site_id":"SITE","session_id":"c","traits":{"phone":"\ufdd0 1"}}', 'traits.phone'],
  ])('%s refuses %s naming %s, storing nothing', async (path, raw, field) => {
    const before = await stored();
    const r = await post(`${svc.url}${path}`, raw.replace('SITE', site));
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'validation_failed', details: { field } });
    expect(await stored()).toEqual(before);
  });

  it('accepts line items at their upper bounds', async () => {
    const r = await post(`${svc.url}/api/convert`, { site_id: site, session_id: 'li-max', revenue: 10_000_000, line_items: [{ sku: 'big', qty: 1_000_000, price: 10_000_000 }] });
    expect(r.status).toBe(201);
  });

  it('stores contact values with any other character, and a malformed email, as sent', async () => {
    const lead = await post(`${svc.url}/api/lead/capture`, { site_id: site, visitor_id: 'uni-1', email: 'not an email', name: 'José Ñúñez 山田 \u200f', phone: '(555) 010-9999' });
    expect(lead.status).toBe(201);
    const [row] = query<{ email: string; name: string }>(dataDir, 'SELECT email, name FROM leads WHERE id = ?', lead.body.lead_id);
    expect(row).toEqual({ email: 'not an email', name: 'José Ñúñez 山田 \u200f' });
    // A custom trait is not a contact field: only email, name and phone are checked.
    expect((await post(`${svc.url}/api/identify`, { site_id: site, session_id: 'uni-2', traits: { note: 'tab\there' } })).status).toBe(200);
  });

  it('accepts nesting up to 64 levels, the body object included', async () => {
    const raw = `{"site_id":"${site}","session_id":"h","deep":${deep(63)}}`;
    const r = await post(`${svc.url}/api/score`, raw);
    expect(r.status).toBe(201);
    const [row] = query<{ body: string }>(dataDir, 'SELECT body FROM scores WHERE id = ?', Number(r.body.score_id.replace('scr_', '')));
    expect(row!.body).toBe(raw);
  });

  it('refuses a body that is not valid UTF-8 rather than storing replacement characters', async () => {
    const before = await stored();
    for (const path of ['/api/events', '/api/identify']) {
      const body = Buffer.concat([
        Buffer.from(`{"site_id":"${site}","session_id":"utf","type":"pageview","traits":{"a":"`),
        Buffer.from([0xff, 0xc3, 0x28]),
        Buffer.from('"}}'),
      ]);
      const res = await fetch(`${svc.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      expect(res.status).toBe(400);
      expect(((await res.json()) as any).error).toMatchObject({ code: 'invalid_json', message: expect.stringContaining('UTF-8') });
    }
    expect(await stored()).toEqual(before);
  });

  it('rejects an unknown site_id with 400 unknown_site', async () => {
    const r = await post(`${svc.url}/api/events`, { site_id: 'site_nope', session_id: 'x', type: 'pageview' });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'unknown_site', details: { field: 'site_id' } });
  });

  it('answers other methods with 405 and CORS preflight with 204', async () => {
    const g = await fetch(`${svc.url}/api/events`);
    expect(g.status).toBe(405);
    expect(g.headers.get('allow')).toBe('POST, OPTIONS');
    const o = await fetch(`${svc.url}/api/events`, { method: 'OPTIONS' });
    expect(o.status).toBe(204);
    expect(o.headers.get('access-control-allow-origin')).toBe('*');
  });

  it('accepts text/plain bodies from browser beacons', async () => {
    const r = await post(`${svc.url}/api/events`, { site_id: site, session_id: 'beacon', type: 'pageview' }, { 'content-type': 'text/plain;charset=UTF-8' });
    expect(r.status).toBe(201);
  });

  it.each([
    ['application/json', 201],
    ['text/plain', 201],
    ['Application/JSON; charset=utf-8', 201],
    [' text/plain ', 201],
    ['application/jsonx', 415],
    ['text/plainx', 415],
  ])('takes the media type %j with %i', async (type, status) => {
    const r = await post(`${svc.url}/api/events`, { site_id: site, session_id: 'media-type', type: 'pageview' }, { 'content-type': type });
    expect(r.status).toBe(status);
    if (status === 415) expect(r.body.error.code).toBe('unsupported_media_type');
  });
});

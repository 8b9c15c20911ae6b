import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, cli, createSite, post, startSvc, tempDir, type Svc } from '../helpers/svc.js';
import { startReceiver, type Received } from '../helpers/receiver.js';
import { execute, query } from '../helpers/db.js';
import { call, callOk, errorOf, McpClients, mintToken } from '../helpers/mcp-client.js';
import { validatePayload } from '../../src/webhooks/catalogue.js';
import { Scrape } from '../helpers/metrics.js';

const PRIVATE = ['--allow-private-destinations'];
const FAST = { SVC_WEBHOOK_RETRY_SCHEDULE: '100ms,100ms,100ms', SVC_WEBHOOK_POLL_MS: '50', SVC_LOG_LEVEL: 'debug' };
const SECRET = 'trg_secret_for_tests';
const hmac = (body: string, key: string) => createHmac('sha256', key).update(body, 'utf8').digest('hex');

// Personal values that must never appear in an event, and the transcript that must never leave the lead record.
const EMAIL = 'pat.pipeline@example.com';
const PHONE = '+49 170 5550123';
const NAME = 'Pat Pipeline';
const TRANSCRIPT_MARK = 'TRANSCRIPT-MARK-7f3a9c';

let svc: Svc;
let metricsUrl: string;
let dataDir: string;
let site: string;
const tok = { admin: '', write: '', read: '' };
const mcp = new McpClients(() => svc.url);
let msgRx: Awaited<ReturnType<typeof startReceiver>>;
let testRx: Awaited<ReturnType<typeof startReceiver>>;
let allRx: Awaited<ReturnType<typeof startReceiver>>;

const events = (type: string) => allRx.received.filter((r) => r.headers['x-svc-event'] === type);

beforeAll(async () => {
  dataDir = tempDir();
  site = createSite(dataDir);
  execute(dataDir, "UPDATE sites SET timezone = 'Europe/Berlin' WHERE id = ?", site);
  msgRx = await startReceiver();
  testRx = await startReceiver();
  allRx = await startReceiver();
  const add = cli(['webhooks', 'add', '--site', site, '--url', `${allRx.url}/all`, '--events', 'all', '--data', dataDir, ...PRIVATE, '--json']);
  if (add.code !== 0) throw new Error(add.stderr);
  tok.admin = mintToken(dataDir, site, ['--scope', 'admin', '--allow-credential-issuance']);
  tok.write = mintToken(dataDir, site, ['--scope', 'write']);
  tok.read = mintToken(dataDir, site, ['--scope', 'read']);
  svc = await startSvc({ dataDir, args: [...PRIVATE, '--metrics-port', '0'], env: FAST });
  for (let i = 0; i < 400 && !/svc metrics on http/.test(svc.stderr()); i++) await new Promise((r) => setTimeout(r, 50));
  metricsUrl = /svc metrics on (http:\/\/\S+)/.exec(svc.stderr())![1]!;
});

afterAll(async () => {
  await mcp.closeAll();
  await svc?.stop();
  await msgRx?.close();
  await testRx?.close();
  await allRx?.close();
  cleanup(dataDir);
});

const inDays = (d: number) => new Date(Date.now() + d * 86_400_000).toISOString();

describe('leads pipeline', () => {
  const leads = { a: '', b: '', c: '', d: '' };

  it('lists, filters, assigns, notes, tasks and appointments', async () => {
    const cap = async (key: keyof typeof leads, body: Record<string, unknown>) => {
      const r = await post(`${svc.url}/api/lead/capture`, { site_id: site, ...body });
      expect(r.status).toBe(201);
      leads[key] = r.body.lead_id as string;
      return r.body as { profile_id: string };
    };
    await cap('a', { session_id: 'sa', email: EMAIL, phone: PHONE, name: NAME, appointment_slot: inDays(5) });
    await cap('b', { session_id: 'sb', email: 'b@example.com', appointment_slot: inDays(2).replace('Z', '+00:00') });
    await cap('c', { session_id: 'sc', phone: '+1 555 0100', appointment_slot: inDays(-3) });
    await cap('d', { session_id: 'sd' });

    const r = await mcp.connect(tok.read);
    const w = await mcp.connect(tok.write);
    expect((await callOk(r, 'leads_list', { status: 'new' })).leads.map((l: any) => l.id).sort()).toEqual([leads.a, leads.b, leads.c].sort());
    expect((await callOk(r, 'leads_list', { status: 'unworkable' })).leads.map((l: any) => l.id)).toEqual([leads.d]);
    const bad = await call(w, 'leads_set_status', { id: leads.d, status: 'working' });
    expect(errorOf(bad)).toMatchObject({ code: 'conflict', details: { field: 'status' } });
    expect(errorOf(await call(w, 'leads_set_status', { id: leads.a, status: 'contacted' })).code).toBe('validation_failed');

    const owned = await callOk(w, 'leads_assign_owner', { id: leads.a, owner: 'owner@localhost' });
    expect(owned.owner_id).toMatch(/^usr_/);
    expect(errorOf(await call(w, 'leads_assign_owner', { id: leads.a, owner: 'nobody@example.com' })).code).toBe('not_found');
    expect((await callOk(r, 'leads_list', { owner_id: owned.owner_id })).leads.map((l: any) => l.id)).toEqual([leads.a]);
    expect((await callOk(r, 'leads_list', { unowned: true })).leads).toHaveLength(3);

    const note = await callOk(w, 'leads_add_note', { id: leads.a, body: 'Asked for pricing.' });
    expect(note).toMatchObject({ lead_id: leads.a, body: 'Asked for pricing.', author: expect.stringMatching(/^token:/) });
    expect((await callOk(r, 'leads_notes', { id: leads.a })).notes.map((n: any) => n.id)).toEqual([note.id]);

    const task = await callOk(w, 'leads_task_create', { id: leads.b, title: 'Send offer', due_at: '2026-12-01T09:00:00Z' });
    expect(task).toMatchObject({ state: 'open', due_local: '2026-12-01T10:00:00+01:00' });
    expect((await callOk(r, 'leads_list', { has_open_task: true })).leads.map((l: any) => l.id)).toEqual([leads.b]);
    expect((await callOk(r, 'leads_list', { due_before: '2026-12-01T09:00:01Z' })).leads.map((l: any) => l.id)).toEqual([leads.b]);
    expect((await callOk(r, 'leads_list', { due_before: '2026-12-01T09:00:00Z' })).leads).toHaveLength(0);
    expect((await callOk(w, 'leads_task_complete', { task_id: task.id })).state).toBe('done');
    expect((await callOk(w, 'leads_task_complete', { task_id: task.id })).done_at).not.toBeNull();
    expect((await callOk(r, 'leads_list', { has_open_task: true })).leads).toHaveLength(0);

    const upcoming = await callOk(r, 'leads_appointments');
    expect(upcoming.timezone).toBe('Europe/Berlin');
    expect(upcoming.appointments.map((x: any) => x.lead_id)).toEqual([leads.b, leads.a]);
    expect(upcoming.appointments[0].local).toMatch(/\+0[12]:00$/);
    const all = await callOk(r, 'leads_appointments', { include_past: true });
    expect(all.appointments.map((x: any) => [x.lead_id, x.upcoming])).toEqual([
      [leads.b, true],
      [leads.a, true],
      [leads.c, false],
    ]);
  });

  it('maps calls into the pipeline: status, callback task, transcript kept on the lead only', async () => {
    const w = await mcp.connect(tok.write);
    const before = events('call.completed').length;
    const rec = await callOk(w, 'calls_record', {
      call: {
        call_id: 'tel-1001',
        lead_id: leads.a,
        started_at: '2026-03-27T10:00:00Z', // a Friday
        duration_seconds: 184,
        outcome: 'connected',
        notes: 'Interested in the pro plan.',
        transcript: `Agent: hello. Caller: ${TRANSCRIPT_MARK} busy now, call me back Tuesday at 3pm.`,
      },
    });
    expect(rec).toMatchObject({
      call_id: 'tel-1001',
      status_before: 'new',
      status_after: 'working',
      callback_at: '2026-03-31T15:00:00+02:00',
      duration_seconds: 184,
    });
    expect(rec.transcript).toBeUndefined();
    const tasks = await callOk(w, 'leads_tasks_list', { lead_id: leads.a, state: 'open' });
    expect(tasks.tasks).toEqual([expect.objectContaining({ id: rec.task_id, call_id: 'tel-1001', due_at: '2026-03-31T13:00:00.000Z' })]);
    expect(errorOf(await call(w, 'calls_record', { call: { call_id: 'tel-1001', lead_id: leads.a, started_at: '2026-03-27T10:00:00Z', outcome: 'voicemail' } })).code).toBe(
      'conflict',
    );
    expect(errorOf(await call(w, 'calls_get', { call_id: 'tel-1001', include_transcript: true })).code).toBe('insufficient_scope');
    const a = await mcp.connect(tok.admin);
    expect((await callOk(a, 'calls_get', { call_id: 'tel-1001', include_transcript: true })).transcript).toContain(TRANSCRIPT_MARK);

    // An import with one bad row stores nothing and names the row.
    const profileC = query<{ profile_id: string }>(dataDir, 'SELECT profile_id FROM leads WHERE id = ?', leads.c)[0]!.profile_id;
    const header = 'call_id,lead_id,profile_id,started_at,ended_at,outcome,notes,transcript';
    const rows = [
      `tel-2001,${leads.b},,2026-03-27T12:00:00Z,2026-03-27T12:05:00Z,not_interested,"Said no, thanks",`,
      `tel-2002,,${profileC},2026-03-27T13:00:00Z,,wrong_number,,"${TRANSCRIPT_MARK} who is this?"`,
      `tel-1001,${leads.a},,2026-03-27T10:00:00Z,,connected,,`,
    ];
    const badCsv = `${header}\n${rows[0]}\ntel-2003,${leads.b},,not-a-date,,connected,,\n`;
    const refused = await call(w, 'calls_import', { csv: badCsv });
    expect(errorOf(refused)).toMatchObject({ code: 'validation_failed', details: { row: 2, field: 'started_at' } });
    const missing = await call(w, 'calls_import', { csv: `${header}\n${rows[0]}\ntel-2004,lead_nope,,2026-03-27T12:00:00Z,,connected,,\n` });
    expect(errorOf(missing)).toMatchObject({ code: 'not_found', details: { row: 2, field: 'lead_id' } });
    expect(query(dataDir, "SELECT id FROM lead_calls WHERE id LIKE 'tel-2%'")).toHaveLength(0);
    expect(query<{ status: string }>(dataDir, 'SELECT status FROM leads WHERE id = ?', leads.b)[0]!.status).toBe('new');

    const imported = await callOk(w, 'calls_import', { csv: `${header}\n${rows.join('\n')}\n` });
    expect(imported).toMatchObject({ imported: 2, skipped: ['tel-1001'], moved: 2, callbacks: 0 });
    expect(query<{ id: string; status: string }>(dataDir, 'SELECT id, status FROM leads WHERE id IN (?, ?) ORDER BY id', leads.b, leads.c)).toEqual(
      [
        { id: leads.b, status: 'lost' },
        { id: leads.c, status: 'unworkable' },
      ].sort((x, y) => x.id.localeCompare(y.id)),
    );
    const json = await callOk(w, 'calls_import', {
      rows: [
        { call_id: 'tel-3001', lead_id: leads.b, started_at: '2026-03-28T09:00:00+01:00', outcome: 'interested', notes: 'ring me next Monday 10am' },
        { call_id: 'tel-3002', lead_id: leads.d, started_at: '2026-03-28T09:30:00+01:00', outcome: 'connected' },
      ],
    });
    // A lost lead is reopened; a lead with no contact value stays unworkable, and the call says why.
    expect(json.calls[0]).toMatchObject({ status_before: 'lost', status_after: 'working', status_note: null, callback_at: '2026-03-30T10:00:00+02:00' });
    expect(json.calls[1]).toMatchObject({ status_before: 'unworkable', status_after: 'unworkable', status_note: expect.stringContaining('no contact value') });

    const got = await allRx.waitFor(before + 5, 20_000, (x) => x.headers['x-svc-event'] === 'call.completed');
    const payloads = got.map((x) => JSON.parse(x.body) as Record<string, unknown>);
    expect(payloads.map((p) => p.call_id).sort()).toEqual(['tel-1001', 'tel-2001', 'tel-2002', 'tel-3001', 'tel-3002']);
    for (const p of payloads) expect(validatePayload('call.completed', p)).toMatchObject({ success: true });
    expect(payloads.find((p) => p.call_id === 'tel-1001')).toMatchObject({ outcome: 'connected', callback_at: '2026-03-31T15:00:00+02:00', lead_id: leads.a, duration_seconds: 184 });
    expect(payloads.find((p) => p.call_id === 'tel-2002')).toMatchObject({ outcome: 'wrong_number', callback_at: null, lead_id: leads.c });
  });
});

describe('triggered messages', () => {
  let profileId = '';
  const trg = { event: '', segment: '', score: '', quiet: '' };

  it('needs an endpoint; the admin sets it', async () => {
    const w = await mcp.connect(tok.write);
    const t = await callOk(w, 'triggers_create', { name: 'Demo follow-up', on_kind: 'event', event_type: 'demo_viewed', message_id: 'tpl_demo', message_values: { cta: 'Book a call' }, include_email: true });
    trg.event = t.id;
    expect(t).toMatchObject({ enabled: false, cap: { count: 1, window_hours: 24 }, quiet_hours: null, include_email: true });
    expect(errorOf(await call(w, 'triggers_enable', { id: t.id })).code).toBe('conflict');
    expect(errorOf(await call(w, 'triggers_endpoint_set', { url: `${msgRx.url}/live` })).code).toBe('insufficient_scope');
    const a = await mcp.connect(tok.admin);
    const bad = await call(a, 'triggers_create', { name: 'x', on_kind: 'segment_entered', message_id: 'm' });
    expect(errorOf(bad)).toMatchObject({ code: 'validation_failed', details: { field: 'segment_id' } });
    const half = await call(a, 'triggers_create', { name: 'x', on_kind: 'score', min_score: 5, message_id: 'm', quiet_start: '22:00' });
    expect(errorOf(half)).toMatchObject({ code: 'validation_failed', details: { field: 'quiet_start' } });
    const ep = await callOk(a, 'triggers_endpoint_set', { url: `${msgRx.url}/live`, secret: SECRET, test_url: `${testRx.url}/test` });
    expect(ep).toMatchObject({ url: `${msgRx.url}/live`, has_secret: true, test_url: `${testRx.url}/test` });
    expect((await callOk(w, 'triggers_enable', { id: t.id })).enabled).toBe(true);
  });

  it('fires on segment entry, events and scores, capped, signed, and emits trigger.fired with ids only', async () => {
    const w = await mcp.connect(tok.write);
    const seg = await callOk(w, 'segments_create', { name: 'Gold', rule: { trait: 'plan', op: 'eq', value: 'gold' } });
    trg.segment = (await callOk(w, 'triggers_create', { name: 'Welcome gold', on_kind: 'segment_entered', segment_id: seg.id, message_id: 'tpl_gold' })).id;
    trg.score = (await callOk(w, 'triggers_create', { name: 'Hot', on_kind: 'score', min_score: 80, message_id: 'tpl_hot', cap_count: 5 })).id;
    // Quiet hours around the current Berlin time: the fire is deferred, not dropped.
    const h = Number(new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Berlin', hour: '2-digit', hourCycle: 'h23' }).format(new Date()));
    const hh = (n: number) => `${String((n + 24) % 24).padStart(2, '0')}:00`;
    trg.quiet = (await callOk(w, 'triggers_create', { name: 'Quiet', on_kind: 'event', event_type: 'quiet_test', message_id: 'tpl_q', quiet_start: hh(h - 1), quiet_end: hh(h + 2) })).id;
    for (const id of [trg.segment, trg.score, trg.quiet]) await callOk(w, 'triggers_enable', { id });

    const idr = await post(`${svc.url}/api/identify`, { site_id: site, session_id: 'tp1', visitor_id: 'vp1', traits: { email: EMAIL, plan: 'gold', name: NAME, phone: PHONE } });
    expect(idr.status).toBeLessThan(300);
    profileId = idr.body.profile_id;
    for (let i = 0; i < 3; i++) expect((await post(`${svc.url}/api/events`, { site_id: site, session_id: 'tp1', type: 'demo_viewed' })).status).toBeLessThan(300);
    await post(`${svc.url}/api/score`, { site_id: site, session_id: 'tp1', score: 50 });
    await post(`${svc.url}/api/score`, { site_id: site, session_id: 'tp1', score: 90 });
    await post(`${svc.url}/api/score`, { site_id: site, session_id: 'tp1', score: 95 });
    await post(`${svc.url}/api/events`, { site_id: site, session_id: 'tp1', type: 'quiet_test' });

    // Fires are created in the transaction of the data that caused them: once the requests are answered, these are all.
    // One per trigger: the cap held the event trigger to one, the score fired once, quiet hours deferred.
    const made = query<{ trigger_id: string }>(dataDir, 'SELECT trigger_id FROM trigger_fires WHERE profile_id = ?', profileId).map((f) => f.trigger_id);
    expect(made.sort()).toEqual([trg.event, trg.segment, trg.score, trg.quiet].sort());
    const msgs = await msgRx.waitFor(3);
    expect(msgRx.received).toHaveLength(3);
    const byTrigger = new Map<string, { r: Received; body: any }>();
    for (const r of msgs) {
      expect(r.path).toBe('/live');
      expect(r.headers['x-svc-signature']).toBe(hmac(r.body, SECRET));
      expect(r.headers['x-svc-event']).toBe('trigger.message');
      const body = JSON.parse(r.body);
      expect(r.headers['x-svc-delivery']).toBe(body.fire_id);
      expect(body).toMatchObject({ test: false, site_id: site, profile_id: profileId });
      byTrigger.set(body.trigger_id, { r, body });
    }
    expect([...byTrigger.keys()].sort()).toEqual([trg.event, trg.segment, trg.score].sort());
    expect(byTrigger.get(trg.event)!.body).toMatchObject({ reason: 'event', message: { id: 'tpl_demo', values: { cta: 'Book a call' } }, recipient: { email: EMAIL } });
    expect(byTrigger.get(trg.segment)!.body).toMatchObject({ reason: 'segment_entered', recipient: { email: null } });
    expect(byTrigger.get(trg.score)!.body).toMatchObject({ reason: 'score', message: { id: 'tpl_hot' } });

    const fired = await allRx.waitFor(3, 20_000, (x) => x.headers['x-svc-event'] === 'trigger.fired');
    for (const f of fired) {
      const p = JSON.parse(f.body);
      expect(validatePayload('trigger.fired', p)).toMatchObject({ success: true });
      expect(p.profile_id).toBe(profileId);
    }
    expect(fired.map((f) => JSON.parse(f.body).fire_id).sort()).toEqual(msgs.map((m) => JSON.parse(m.body).fire_id).sort());

    const r = await mcp.connect(tok.read);
    const t = await callOk(r, 'triggers_get', { id: trg.event });
    expect(t.capped_count).toBe(2);
    const quiet = (await callOk(r, 'triggers_fires', { trigger_id: trg.quiet })).fires;
    expect(quiet).toEqual([expect.objectContaining({ state: 'pending', deferred: true, attempts: 0 })]);
    expect(Date.parse(quiet[0].due_at)).toBeGreaterThan(Date.now());
    expect(quiet[0].due_local).toMatch(/T\d\d:00:00\+0[12]:00$/);
    const delivered = (await callOk(r, 'triggers_fires', { state: 'delivered' })).fires;
    expect(delivered).toHaveLength(3);
    const disabled = await callOk(w, 'triggers_disable', { id: trg.quiet });
    expect(disabled).toMatchObject({ cancelled_fires: 1, trigger: { enabled: false } });
    expect((await callOk(r, 'triggers_fires', { trigger_id: trg.quiet })).fires[0].state).toBe('cancelled');
  });

  it('test fires go to the test endpoint without trigger.fired; live fires by hand need credential issuance and retry with a stable fire id', async () => {
    const w = await mcp.connect(tok.write);
    const test = await callOk(w, 'triggers_test_fire', { id: trg.event, profile: { by: 'profile_id', value: profileId } });
    expect(test).toMatchObject({ ok: true, status: 200, fire: { mode: 'test', state: 'delivered', reason: 'test' } });
    expect(testRx.received).toHaveLength(1);
    const tb = JSON.parse(testRx.received[0]!.body);
    expect(tb).toMatchObject({ test: true, trigger_id: trg.event, fire_id: test.fire.id });
    expect(testRx.received[0]!.headers['x-svc-signature']).toBe(hmac(testRx.received[0]!.body, SECRET));

    const refused = await call(w, 'triggers_fire', { id: trg.event, profile: { by: 'profile_id', value: profileId } });
    expect(errorOf(refused).details.reason).toBe('credential_issuance');

    msgRx.setBehaviour((_r, n) => (n === 4 ? { status: 503, body: 'busy' } : { status: 200, body: 'ok' }));
    const a = await mcp.connect(tok.admin);
    const fire = await callOk(a, 'triggers_fire', { id: trg.event, profile: { by: 'email', value: EMAIL } });
    expect(fire).toMatchObject({ reason: 'manual', state: 'pending', mode: 'live' });
    const got = await msgRx.waitFor(5);
    expect(got.slice(3).map((x) => x.headers['x-svc-delivery'])).toEqual([fire.id, fire.id]);
    const fired = await allRx.waitFor(4, 20_000, (x) => x.headers['x-svc-event'] === 'trigger.fired');
    // Every trigger.fired ever enqueued (the outbox keeps them): the test fire has none, the retried live fire one.
    const firedIds = query<{ payload: string }>(dataDir, "SELECT payload FROM outbox WHERE event_type = 'trigger.fired' ORDER BY id").map((x) => JSON.parse(x.payload).fire_id);
    expect(firedIds).toHaveLength(4);
    expect(firedIds).toContain(fire.id);
    expect(firedIds).not.toContain(test.fire.id);
    expect(fired).toHaveLength(4);
    const after = (await callOk(a, 'triggers_fires', { trigger_id: trg.event, state: 'delivered' })).fires.find((f: any) => f.id === fire.id);
    expect(after).toMatchObject({ attempts: 2, last_status: 200 });
    const health = query<{ ok: number; status: number; kind: string; destination_id: string }>(
      dataDir,
      "SELECT ok, status, kind, destination_id FROM health_log WHERE integration = 'trigger' AND delivery_id = ? ORDER BY id",
      fire.id,
    );
    expect(health).toEqual([
      { ok: 0, status: 503, kind: 'attempt', destination_id: 'trigger:live' },
      { ok: 1, status: 200, kind: 'attempt', destination_id: 'trigger:live' },
    ]);
    expect(query(dataDir, "SELECT id FROM health_log WHERE integration = 'trigger' AND kind = 'test' AND delivery_id = ?", test.fire.id)).toHaveLength(1);
    // Every live attempt the endpoint saw is counted once its outcome is committed: the 503 as http_status, the rest delivered.
    const live = msgRx.received.length;
    await expect.poll(async () => (await Scrape.of(metricsUrl)).value('svc_trigger_messages_total'), { timeout: 20_000 }).toBe(live);
    const s = await Scrape.of(metricsUrl);
    expect(s.value('svc_trigger_messages_total', { outcome: 'http_status' })).toBe(1);
    expect(s.value('svc_trigger_messages_total', { outcome: 'delivered' })).toBe(live - 1);
    expect(s.histogram('svc_trigger_message_duration_seconds').count).toBe(live);
  });

  it('no event carries a personal value or the transcript, and the transcript never reaches the log', async () => {
    const bodies = allRx.received.map((r) => r.body);
    expect(bodies.length).toBeGreaterThan(0);
    // Every event enqueued, delivered yet or not.
    const outbox = query<{ event_type: string; payload: string }>(dataDir, 'SELECT event_type, payload FROM outbox ORDER BY id');
    expect(new Set(outbox.map((x) => x.event_type))).toEqual(new Set(['lead.captured', 'call.completed', 'trigger.fired', 'profile.identified', 'segment.changed']));
    for (const x of outbox.filter((o) => o.event_type === 'trigger.fired' || o.event_type === 'call.completed')) {
      for (const v of [EMAIL, PHONE, NAME, 'b@example.com', '+1 555 0100', 'Said no']) expect(x.payload, x.event_type).not.toContain(v);
    }
    for (const r of allRx.received) {
      const type = r.headers['x-svc-event'] as string;
      expect(r.body).not.toContain(TRANSCRIPT_MARK);
      if (type === 'trigger.fired' || type === 'call.completed') {
        for (const v of [EMAIL, PHONE, NAME, 'b@example.com', '+1 555 0100', 'Said no']) expect(r.body, type).not.toContain(v);
      }
    }
    for (const r of [...msgRx.received, ...testRx.received]) expect(r.body).not.toContain(TRANSCRIPT_MARK);
    // The log has lines of its own (JSON), so the checks below are not of an empty log.
    expect(svc.stderr().split('\n').filter((l) => l.startsWith('{')).length).toBeGreaterThan(0);
    expect(svc.stderr()).not.toContain(TRANSCRIPT_MARK);
    expect(svc.stderr()).not.toContain(EMAIL);
    expect(JSON.stringify(query(dataDir, 'SELECT * FROM mcp_audit'))).not.toContain(TRANSCRIPT_MARK);
    expect(JSON.stringify(query(dataDir, 'SELECT payload FROM outbox'))).not.toContain(TRANSCRIPT_MARK);
  });

  it('erasing a person removes their calls (transcripts), notes, tasks and fires', async () => {
    const a = await mcp.connect(tok.admin);
    const leadA = query<{ id: string; profile_id: string }>(dataDir, "SELECT id, profile_id FROM leads WHERE email = ?", EMAIL)[0]!;
    expect(query(dataDir, 'SELECT id FROM lead_calls WHERE lead_id = ?', leadA.id).length).toBeGreaterThan(0);
    expect(query(dataDir, 'SELECT id FROM trigger_fires WHERE profile_id = ?', leadA.profile_id).length).toBeGreaterThan(0);
    await callOk(a, 'profiles_erase', { by: 'profile_id', value: leadA.profile_id });
    for (const [table, col, v] of [
      ['lead_calls', 'lead_id', leadA.id],
      ['lead_notes', 'lead_id', leadA.id],
      ['lead_tasks', 'lead_id', leadA.id],
      ['trigger_fires', 'profile_id', leadA.profile_id],
    ] as const) {
      expect(query(dataDir, `SELECT * FROM ${table} WHERE ${col} = ?`, v), table).toHaveLength(0);
    }
  });
});

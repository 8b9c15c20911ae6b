import { createHmac, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, cli, cliAsync, cliJson, createSite, post, startSvc, tempDir, type Svc } from '../helpers/svc.js';
import { startReceiver, type Received } from '../helpers/receiver.js';
import { query, storedBytes } from '../helpers/db.js';
import { callErr, callOk, McpClients, mintToken, until } from '../helpers/mcp-client.js';

const PRIVATE = ['--allow-private-destinations'];
const FAST = { SVC_WEBHOOK_RETRY_SCHEDULE: '100ms,100ms', SVC_WEBHOOK_POLL_MS: '50' };
const hex = (body: string, key: string) => createHmac('sha256', key).update(body, 'utf8').digest('hex');
const whsec = () => `whsec_${randomBytes(32).toString('base64')}`;

/** What the official Standard Webhooks verifier says of a received delivery under one secret. */
function verifies(secret: string, r: Received): boolean {
  try {
    new Webhook(secret).verify(r.body, r.headers as Record<string, string>);
    return true;
  } catch {
    return false;
  }
}

/** A receiver that knows one secret (settable later) and accepts only deliveries that the official verifier accepts with it. */
async function receiverKnowing(initial: string | null) {
  const state = { secret: initial };
  const rx = await startReceiver((r) => (state.secret !== null && verifies(state.secret, r) ? { status: 200, body: 'ok' } : { status: 401, body: 'bad signature' }));
  return { rx, state };
}

describe('Standard Webhooks signing and secret rotation', () => {
  let svc: Svc;
  let dataDir: string;
  let site: string;
  let key: string;
  const mcp = new McpClients(() => svc.url);
  const OLD = whsec();

  let oldOnly: Awaited<ReturnType<typeof receiverKnowing>>;
  let newOnly: Awaited<ReturnType<typeof receiverKnowing>>;
  let plain: Awaited<ReturnType<typeof startReceiver>>;
  let toOldOnly: string;
  let toNewOnly: string;
  let NEW = '';

  const api = async (method: string, p: string, body?: unknown) => {
    const res = await fetch(`${svc.url}/api/pulse/v1${p}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null, text };
  };
  const add = (url: string, events: string, extra: string[]) =>
    cliJson<{ id: string; destination: any }>(['webhooks', 'add', '--site', site, '--url', url, '--events', events, ...extra, '--data', dataDir, ...PRIVATE]);
  const convert = (session: string) => post(`${svc.url}/api/convert`, { site_id: site, session_id: session, revenue: 5 });
  const deliveries = (destination: string) =>
    query<{ id: string; state: string; attempts: number }>(dataDir, 'SELECT id, state, attempts FROM deliveries WHERE destination_id = ? ORDER BY created_at, id', destination);

  beforeAll(async () => {
    dataDir = tempDir();
    site = createSite(dataDir);
    key = cliJson<{ key: string }>(['key', 'mint', '--site', site, '--scopes', 'webhooks:manage', '--data', dataDir]).key;
    oldOnly = await receiverKnowing(OLD);
    newOnly = await receiverKnowing(null);
    plain = await startReceiver();
    toOldOnly = add(`${oldOnly.rx.url}/old`, 'conversion', ['--secret', OLD, '--signing-mode', 'standard']).id;
    toNewOnly = add(`${newOnly.rx.url}/new`, 'conversion', ['--secret', OLD, '--signing-mode', 'standard']).id;
    add(`${plain.url}/svc`, 'conversion', ['--secret', 'plain-svc-secret']);
    svc = await startSvc({ dataDir, args: PRIVATE, env: FAST });
  });
  afterAll(async () => {
    await mcp.closeAll();
    await svc.stop();
    for (const rx of [oldOnly.rx, newOnly.rx, plain]) await rx.close();
    cleanup(dataDir);
  });

  it('standard mode adds webhook-id, webhook-timestamp and webhook-signature to the svc headers; svc mode sends the svc headers only', async () => {
    await convert('before-rotation');
    const [r] = await oldOnly.rx.waitFor(1);
    expect(r!.headers['webhook-id']).toBe(r!.headers['x-svc-delivery']);
    expect(r!.headers['webhook-id']).toMatch(/^dlv_/);
    expect(Math.abs(Number(r!.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(300);
    expect(r!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(r!.headers['x-svc-signature']).toBe(hex(r!.body, OLD));
    expect(r!.headers['x-svc-event']).toBe('conversion');
    expect(r!.headers['x-svc-signature-next']).toBeUndefined();
    expect(verifies(OLD, r!)).toBe(true);

    const [s] = await plain.waitFor(1);
    expect(s!.headers['x-svc-signature']).toBe(hex(s!.body, 'plain-svc-secret'));
    expect(Object.keys(s!.headers).sort()).toEqual(['connection', 'content-length', 'content-type', 'host', 'user-agent', 'x-svc-delivery', 'x-svc-event', 'x-svc-signature']);
    // The receiver that will only know the new secret refuses this one; let it fail for good before rotating.
    await until(async () => deliveries(toNewOnly), (d) => d.length === 1 && d[0]!.state === 'failed');
    expect(deliveries(toOldOnly)).toMatchObject([{ state: 'delivered' }]);
  });

  it('rotating (CLI and MCP) loses nothing: during the grace period receivers that know only the old or only the new secret accept every delivery', async () => {
    const rotated = cliJson<{ secret: string; previous_secret_expires_at: string; destination: any }>(['webhooks', 'rotate-secret', toOldOnly, '--grace', '1h', '--data', dataDir]);
    NEW = rotated.secret;
    expect(NEW).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Date.parse(rotated.previous_secret_expires_at) - Date.now()).toBeGreaterThan(3_500_000);
    expect(rotated.destination).toMatchObject({ id: toOldOnly, signing_mode: 'standard', previous_secret_expires_at: rotated.previous_secret_expires_at });

    const admin = await mcp.connect(mintToken(dataDir, site, ['--scope', 'admin', '--allow-credential-issuance']));
    const viaMcp = await callOk(admin, 'webhooks_rotate_secret', { id: toNewOnly, secret: NEW, grace_period_seconds: 3600 });
    expect(viaMcp).toMatchObject({ secret: NEW, destination: { id: toNewOnly, signing_mode: 'standard' } });
    newOnly.state.secret = NEW;

    const before = { old: oldOnly.rx.received.length, new: newOnly.rx.received.length };
    for (const s of ['during-1', 'during-2', 'during-3']) await convert(s);
    const atOld = (await oldOnly.rx.waitFor(before.old + 3)).slice(before.old);
    const atNew = (await newOnly.rx.waitFor(before.new + 3)).slice(before.new);
    for (const r of [...atOld, ...atNew]) {
      expect(r.headers['x-svc-signature']).toBe(hex(r.body, OLD));
      expect(r.headers['x-svc-signature-next']).toBe(hex(r.body, NEW));
      expect((r.headers['webhook-signature'] as string).split(' ')).toHaveLength(2);
      expect(verifies(OLD, r)).toBe(true);
      expect(verifies(NEW, r)).toBe(true);
      expect(verifies(whsec(), r)).toBe(false);
    }
    await until(async () => [...deliveries(toOldOnly), ...deliveries(toNewOnly)], (d) => d.filter((x) => x.state === 'delivered').length === 7);
    // Every delivery made during the grace period was accepted at its first attempt.
    const failed = query<{ n: number }>(dataDir, "SELECT count(*) AS n FROM health_log WHERE ok = 0 AND created_at >= ? AND destination_id IN (?, ?)", Date.parse(rotated.destination.secret_rotated_at), toOldOnly, toNewOnly);
    expect(Number(failed[0]!.n)).toBe(0);

    // The old secret is never shown again, and neither secret is stored in plaintext.
    const listed = cli(['webhooks', 'list', '--site', site, '--json', '--data', dataDir]);
    expect(listed.stdout).not.toContain(OLD);
    expect(listed.stdout).not.toContain(NEW);
    expect(JSON.stringify(await callOk(admin, 'webhooks_list'))).not.toContain(NEW);
    const bytes = storedBytes(dataDir);
    expect(bytes.includes(Buffer.from(NEW))).toBe(false);
    expect(bytes.includes(Buffer.from(OLD))).toBe(false);
  });

  it('replays and `svc webhooks test` sign the same way, with a fresh timestamp and the same webhook-id', async () => {
    const before = oldOnly.rx.received.length;
    const original = oldOnly.rx.received[before - 1]!;
    const replay = await cliAsync(['webhooks', 'replay', original.headers['x-svc-delivery'] as string, '--data', dataDir, ...PRIVATE]);
    expect(replay.code, replay.stderr).toBe(0);
    const test = await cliAsync(['webhooks', 'test', toOldOnly, '--data', dataDir, ...PRIVATE, '--json']);
    expect(test.code, test.stderr).toBe(0);
    const [replayed, sample] = (await oldOnly.rx.waitFor(before + 2)).slice(before);
    expect(replayed!.headers['webhook-id']).toBe(original.headers['webhook-id']);
    expect(replayed!.body).toBe(original.body);
    expect(sample!.headers['webhook-id']).toBe(JSON.parse(test.stdout).delivery_id);
    for (const r of [replayed!, sample!]) {
      expect(verifies(OLD, r) && verifies(NEW, r)).toBe(true);
      expect(r.headers['x-svc-signature-next']).toBe(hex(r.body, NEW));
    }
  });

  it('svc verify --standard checks a received delivery: exit 0 with either secret during the grace period, 1 otherwise, 2 on usage errors', () => {
    const r = oldOnly.rx.received.at(-1)!;
    const file = path.join(dataDir, 'body.json');
    writeFileSync(file, r.body);
    const h = r.headers as Record<string, string>;
    const verify = (secret: string, extra: string[] = []) =>
      cli(['verify', '--standard', '--secret', secret, '--id', h['webhook-id']!, '--timestamp', h['webhook-timestamp']!, '--signature', h['webhook-signature']!, '--file', file, ...extra]);
    expect(verify(NEW)).toMatchObject({ code: 0, stdout: 'signature valid\n' });
    expect(verify(OLD)).toMatchObject({ code: 0, stdout: 'signature valid\n' });
    expect(verify(whsec())).toMatchObject({ code: 1, stderr: 'svc: signature does not match\n' });
    expect(cli(['verify', '--standard', '--secret', NEW, '--timestamp', h['webhook-timestamp']!, '--signature', h['webhook-signature']!, '--file', file]).code).toBe(2);
  });

  it('a rotation while one is in its grace period is refused (conflict), unless it drops the old secret at once', async () => {
    const again = cli(['webhooks', 'rotate-secret', toOldOnly, '--data', dataDir]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^svc: destination dst_\S+ is still in the grace period of its last rotation until \S+Z; /);
    const admin = await mcp.connect(mintToken(dataDir, site, ['--scope', 'admin', '--allow-credential-issuance']));
    expect(await callErr(admin, 'webhooks_rotate_secret', { id: toNewOnly })).toMatchObject({ code: 'conflict' });
    expect(await callErr(admin, 'webhooks_rotate_secret', { id: toNewOnly, secret: NEW })).toMatchObject({ code: 'validation_failed', details: { field: 'secret' } });

    const dropped = cliJson<{ secret: string; previous_secret_expires_at: string | null; destination: any }>(['webhooks', 'rotate-secret', toNewOnly, '--grace', '0', '--data', dataDir]);
    expect(dropped.previous_secret_expires_at).toBeNull();
    expect(dropped.destination.previous_secret_expires_at).toBeNull();
    expect(dropped.secret).not.toBe(NEW);
    newOnly.state.secret = dropped.secret;
    const row = query<{ previous_secret_enc: string | null }>(dataDir, 'SELECT previous_secret_enc FROM destinations WHERE id = ?', toNewOnly)[0]!;
    expect(row.previous_secret_enc).toBeNull();
  });

  it('the grace period ends: deliveries carry the new signature only, so the receiver that knows only the old secret refuses them', async () => {
    // A REST subscription rotated with a 1-second grace period; the test waits for the clock to pass its end.
    const created = await api('POST', '/webhooks', { url: `${oldOnly.rx.url}/rest`, events: ['conversion'], secret: OLD, signing_mode: 'standard' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ signing_mode: 'standard', has_secret: true, previous_secret_expires_at: null, secret_rotated_at: null });
    const id = created.body.id as string;
    const rotated = await api('POST', `/webhooks/${id}/rotate-secret`, { grace_period_seconds: 1 });
    expect(rotated.status).toBe(200);
    const next = rotated.body.secret as string;
    expect(next).toMatch(/^whsec_/);
    expect(rotated.body.destination).toMatchObject({ id, previous_secret_expires_at: rotated.body.previous_secret_expires_at });
    const got = await api('GET', `/webhooks/${id}`);
    expect(got.text).not.toContain(next);
    const ends = Date.parse(rotated.body.previous_secret_expires_at);
    await until(async () => Date.now(), (now) => now > ends + 50, 10_000);
    expect((await api('GET', `/webhooks/${id}`)).body.previous_secret_expires_at).toBeNull();

    const before = oldOnly.rx.received.length;
    await convert('after-grace');
    const rest = (await oldOnly.rx.waitFor(1, 20_000, (r) => r.path === '/rest' && r.at > ends))[0]!;
    expect(rest.headers['x-svc-signature']).toBe(hex(rest.body, next));
    expect(rest.headers['x-svc-signature-next']).toBeUndefined();
    expect((rest.headers['webhook-signature'] as string).split(' ')).toHaveLength(1);
    expect(verifies(next, rest)).toBe(true);
    expect(verifies(OLD, rest)).toBe(false);
    await oldOnly.rx.waitFor(before + 2);
    const log = await until(
      async () => (await api('GET', `/webhooks/${id}/deliveries`)).body.deliveries,
      (d: any[]) => d.length >= 1,
    );
    expect(log[0]).toMatchObject({ ok: false, status: 401, kind: 'attempt' });
  });

  it('refuses a standard destination without a whsec_ secret on every surface, naming the field, and stores nothing', async () => {
    const count = () => Number(query<{ n: number }>(dataDir, 'SELECT count(*) AS n FROM destinations')[0]!.n);
    const n = count();
    const noSecret = cli(['webhooks', 'add', '--site', site, '--url', 'http://127.0.0.1:9/x', '--events', 'all', '--signing-mode', 'standard', '--data', dataDir, ...PRIVATE]);
    expect(noSecret.code).toBe(2);
    expect(noSecret.stderr).toMatch(/^svc: secret: a destination without a secret cannot use signing_mode standard/);
    const hexSecret = cli(['webhooks', 'add', '--site', site, '--url', 'http://127.0.0.1:9/x', '--events', 'all', '--signing-mode', 'standard', '--secret', randomBytes(32).toString('hex'), '--data', dataDir, ...PRIVATE]);
    expect(hexSecret.code).toBe(2);
    expect(hexSecret.stderr).toMatch(/^svc: secret: a standard-mode secret is whsec_/);
    expect(cli(['webhooks', 'add', '--site', site, '--url', 'http://127.0.0.1:9/x', '--events', 'all', '--signing-mode', 'svix', '--data', dataDir]).code).toBe(2);

    const rest = await api('POST', '/webhooks', { url: 'http://127.0.0.1:9/x', events: ['all'], signing_mode: 'standard' });
    expect(rest.status).toBe(400);
    expect(rest.body.error).toMatchObject({ code: 'bad_request', details: { field: 'secret' } });
    const badMode = await api('POST', '/webhooks', { url: 'http://127.0.0.1:9/x', events: ['all'], secret: OLD, signing_mode: 'svix' });
    expect(badMode.status).toBe(400);
    expect(badMode.body.error.details.field).toBe('signing_mode');

    const writer = await mcp.connect(mintToken(dataDir, site, ['--scope', 'write']));
    expect(await callErr(writer, 'webhooks_create', { url: 'http://127.0.0.1:9/x', events: ['all'], signing_mode: 'standard' })).toMatchObject({
      code: 'validation_failed',
      details: { field: 'secret' },
    });
    expect(count()).toBe(n);

    // An existing standard destination keeps a secret: removing it is refused, on the CLI and over MCP.
    const removed = cli(['webhooks', 'update', toOldOnly, '--remove-secret', '--data', dataDir]);
    expect(removed.code).toBe(2);
    expect(await callErr(writer, 'webhooks_update', { id: toNewOnly, secret: null })).toMatchObject({ code: 'validation_failed', details: { field: 'secret' } });
    expect(query<{ secret_enc: string | null }>(dataDir, 'SELECT secret_enc FROM destinations WHERE id = ?', toOldOnly)[0]!.secret_enc).not.toBeNull();
  });

  it('switches a destination to standard on every surface; an existing secret keeps signing in its whsec_ form', async () => {
    const legacy = 'a-legacy-secret-0123456789';
    const rx = await startReceiver();
    try {
      const id = add(`${rx.url}/legacy`, 'conversion', ['--secret', legacy]).id;
      const writer = await mcp.connect(mintToken(dataDir, site, ['--scope', 'write']));
      expect(await callOk(writer, 'webhooks_update', { id, signing_mode: 'standard' })).toMatchObject({ id, signing_mode: 'standard', has_secret: true });
      await convert('legacy');
      const [r] = await rx.waitFor(1, 20_000);
      expect(r!.headers['x-svc-signature']).toBe(hex(r!.body, legacy));
      expect(verifies(`whsec_${Buffer.from(legacy).toString('base64')}`, r!)).toBe(true);
      const back = await callOk(writer, 'webhooks_update', { id, signing_mode: 'svc' });
      expect(back.signing_mode).toBe('svc');
      const viaCli = cliJson<any>(['webhooks', 'update', id, '--signing-mode', 'standard', '--data', dataDir]);
      expect(viaCli.signing_mode).toBe('standard');
    } finally {
      await rx.close();
    }
  });

  it('the MCP rotation tool needs the admin scope and credential issuance', async () => {
    const writer = await mcp.connect(mintToken(dataDir, site, ['--scope', 'write']));
    expect(await callErr(writer, 'webhooks_rotate_secret', { id: toOldOnly })).toMatchObject({ code: 'insufficient_scope', details: { reason: 'scope' } });
    const admin = await mcp.connect(mintToken(dataDir, site, ['--scope', 'admin']));
    expect(await callErr(admin, 'webhooks_rotate_secret', { id: toOldOnly })).toMatchObject({ code: 'insufficient_scope', details: { reason: 'credential_issuance' } });
    const issuer = await mcp.connect(mintToken(dataDir, site, ['--scope', 'admin', '--allow-credential-issuance']));
    expect(await callErr(issuer, 'webhooks_rotate_secret', { id: 'dst_nosuch' })).toMatchObject({ code: 'not_found' });
    expect(await callErr(issuer, 'webhooks_rotate_secret', { id: toOldOnly, grace_period_seconds: 8 * 86_400 })).toMatchObject({
      code: 'validation_failed',
      details: { field: 'grace_period_seconds' },
    });
  });
});

import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validate } from '@readme/openapi-parser';
import openapiTS, { astToString } from 'openapi-typescript';
import { cleanup, cliJson, createSite, post, ROOT, startSvc, tempDir, type Svc } from '../helpers/svc.js';
import { startReceiver } from '../helpers/receiver.js';
import { CATALOGUE, EVENT_TYPES } from '../../src/webhooks/catalogue.js';

// openapi.json as a client generator sees it: valid, lint-clean under Redocly's recommended rules, and good
// enough that openapi-typescript + openapi-fetch give a client that type-checks and works against a live
// server, and webhook payload types a receiver can be written against.

let svc: Svc;
let dataDir: string;
let work: string;
let site: string;
let segmentId: string;
let rx: Awaited<ReturnType<typeof startReceiver>>;
let doc: any;
const keys = { pii: '', segments: '', hooks: '' };

const TSC = path.join(ROOT, 'node_modules/typescript/bin/tsc');
const TSC_FLAGS = ['--strict', '--noUncheckedIndexedAccess', '--target', 'es2022', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--lib', 'es2022,dom', '--skipLibCheck'];

function tsc(args: string[]) {
  const r = spawnSync(process.execPath, [TSC, ...TSC_FLAGS, ...args], { cwd: work, encoding: 'utf8' });
  return { code: r.status, out: r.stdout + r.stderr };
}

function runNode(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: work, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

beforeAll(async () => {
  dataDir = tempDir();
  site = createSite(dataDir);
  const mint = (scopes: string) => cliJson<{ key: string }>(['key', 'mint', '--site', site, '--scopes', scopes, '--data', dataDir]).key;
  keys.pii = mint('profile:read,profile:read:pii');
  keys.segments = mint('segment:read');
  keys.hooks = mint('webhooks:manage');
  segmentId = cliJson<{ id: string }>(['segment', 'create', '--site', site, '--name', 'Pro plan', '--rule', '{"trait":"plan","op":"eq","value":"pro"}', '--json', '--data', dataDir]).id;
  svc = await startSvc({ dataDir, args: ['--allow-private-destinations'], env: { SVC_WEBHOOK_POLL_MS: '50' } });
  for (const [n, email] of [
    [1, 'Ada@Example.com'],
    [2, 'grace@example.com'],
  ] as const) {
    await post(`${svc.url}/api/events`, { site_id: site, session_id: `oa-s${n}`, visitor_id: `oa-v${n}`, type: 'pageview' });
    const r = await post(`${svc.url}/api/identify`, { site_id: site, session_id: `oa-s${n}`, visitor_id: `oa-v${n}`, traits: { email, plan: 'pro', name: `Person ${n}` } });
    expect(r.status).toBeLessThan(300);
  }
  rx = await startReceiver(() => ({ status: 204 }));
  doc = await (await fetch(`${svc.url}/api/pulse/v1/openapi.json`)).json();

  // A client project: the generated types, node_modules from this checkout (openapi-fetch), ESM.
  work = tempDir('svc-openapi-client-');
  mkdirSync(path.join(work, 'src'));
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(work, 'node_modules'));
  writeFileSync(path.join(work, 'package.json'), JSON.stringify({ type: 'module', private: true }));
  writeFileSync(path.join(work, 'src/api.d.ts'), astToString(await openapiTS(structuredClone(doc))));
});

afterAll(async () => {
  await svc?.stop();
  await rx?.close();
  cleanup(dataDir);
  if (work) cleanup(work);
});

describe('openapi.json', () => {
  it('is a valid OpenAPI 3.1 document of every path we serve and every event we send, with its license', async () => {
    expect(doc.openapi).toBe('3.1.0');
    const result = await validate(structuredClone(doc));
    expect(result.valid, JSON.stringify(result)).toBe(true);
    expect(Object.keys(doc.paths).sort()).toEqual([
      '/api/pulse/v1/openapi.json',
      '/api/pulse/v1/profile',
      '/api/pulse/v1/profiles/query',
      '/api/pulse/v1/segment/{segmentId}/members',
      '/api/pulse/v1/webhooks',
      '/api/pulse/v1/webhooks/{webhookId}',
      '/api/pulse/v1/webhooks/{webhookId}/deliveries',
      '/api/pulse/v1/webhooks/{webhookId}/rotate-secret',
    ]);
    // Request fields come from the zod schemas the document is generated from.
    expect(doc.components.schemas.WebhookCreate.properties.signing_mode.enum).toEqual(['svc', 'standard']);
    expect(doc.components.schemas.WebhookUpdate.properties.signing_mode.enum).toEqual(['svc', 'standard']);
    expect(doc.components.schemas.WebhookSecretRotate.properties.grace_period_seconds).toMatchObject({ type: 'integer', minimum: 0, maximum: 604800 });
    expect(doc.paths['/api/pulse/v1/webhooks/{webhookId}/rotate-secret'].post.responses['409']).toBeDefined();
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    expect(doc.info.license).toEqual({ name: pkg.license, identifier: pkg.license });
    expect(readFileSync(path.join(ROOT, 'LICENSE'), 'utf8')).toContain('Apache License\n                           Version 2.0');
    expect(pkg.license).toBe('Apache-2.0');
    expect(Object.keys(doc.webhooks)).toEqual([...EVENT_TYPES]);
    const conversion = doc.webhooks.conversion.post;
    expect(conversion.requestBody.content['application/json']).toEqual({ schema: { $ref: '#/components/schemas/ConversionEvent' }, example: CATALOGUE.conversion.example });
    const headers = conversion.parameters.map((p: any) => (p.$ref ? doc.components.parameters[p.$ref.split('/').pop()] : p));
    expect(headers.map((h: any) => [h.name, h.in, h.required])).toEqual([
      ['X-SVC-Signature', 'header', true],
      ['X-SVC-Event', 'header', true],
      ['X-SVC-Delivery', 'header', true],
      ['User-Agent', 'header', true],
    ]);
    expect(headers[1].schema).toEqual({ type: 'string', const: 'conversion' });
    // Nested schemas with an id of their own are components, never a "__shared" $defs block.
    expect(JSON.stringify(doc)).not.toContain('__shared');
    expect(doc.components.schemas.ConversionEvent.properties.line_items.items).toEqual({ $ref: '#/components/schemas/ConversionLineItem' });
  });

  it('lists the query parameters of every route, with their bounds', () => {
    const params = (p: string, m = 'get') => Object.fromEntries(doc.paths[`/api/pulse/v1${p}`][m].parameters.map((x: any) => [x.name, { in: x.in, required: x.required, schema: x.schema }]));
    const profile = params('/profile');
    expect(Object.keys(profile)).toEqual(['profile_id', 'visitor_id', 'email', 'external_id', 'email_sha256', 'phone_sha256', 'include_pii']);
    expect(profile.email_sha256).toEqual({ in: 'query', required: false, schema: { type: 'string', pattern: '^[0-9a-f]{64}$' } });
    expect(profile.include_pii.schema).toEqual({ type: 'string', enum: ['true', 'false'] });
    expect(params('/segment/{segmentId}/members')).toEqual({
      segmentId: { in: 'path', required: true, schema: { type: 'string', minLength: 1, maxLength: 128 } },
      limit: { in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 1000 } },
      cursor: { in: 'query', required: false, schema: { type: 'string', minLength: 1, maxLength: 512 } },
    });
    expect(Object.keys(params('/webhooks/{webhookId}/deliveries'))).toEqual(['webhookId', 'limit', 'failed']);
    // Every response is described; every operation has a 2xx and a 4xx.
    for (const [p, item] of Object.entries<any>({ ...doc.paths, ...doc.webhooks })) {
      for (const [m, op] of Object.entries<any>(item)) {
        const codes = Object.keys(op.responses);
        expect(codes.some((c) => c.startsWith('2')), `${m} ${p}`).toBe(true);
        expect(codes.some((c) => c.startsWith('4')), `${m} ${p}`).toBe(true);
        for (const c of codes) expect(op.responses[c].description, `${m} ${p} ${c}`).toMatch(/\w{3}/);
      }
    }
  });

  it("passes Redocly's recommended rules with no error and no warning", () => {
    const file = path.join(work, 'openapi.json');
    writeFileSync(file, JSON.stringify(doc, null, 2));
    const r = spawnSync(process.execPath, [path.join(ROOT, 'node_modules/@redocly/cli/bin/cli.js'), 'lint', '--config', path.join(ROOT, 'redocly.yaml'), '--format', 'json', file], {
      cwd: work,
      encoding: 'utf8',
    });
    const out = JSON.parse(r.stdout) as { totals: { errors: number; warnings: number }; problems: { ruleId: string; message: string }[] };
    expect(out.problems.map((p) => `${p.ruleId}: ${p.message}`)).toEqual([]);
    expect(out.totals).toMatchObject({ errors: 0, warnings: 0 });
    expect(r.status).toBe(0);
    // The ruleset does look at our examples: a payload example that breaks its schema is reported.
    const broken = structuredClone(doc);
    broken.webhooks.conversion.post.requestBody.content['application/json'].example = { ...CATALOGUE.conversion.example, revenue: 'lots' };
    writeFileSync(file, JSON.stringify(broken));
    const bad = spawnSync(process.execPath, [path.join(ROOT, 'node_modules/@redocly/cli/bin/cli.js'), 'lint', '--config', path.join(ROOT, 'redocly.yaml'), '--format', 'json', file], { cwd: work, encoding: 'utf8' });
    expect((JSON.parse(bad.stdout) as typeof out).problems.map((p) => p.ruleId)).toContain('no-invalid-media-type-examples');
  });

  it('answers 406 to a client that does not accept JSON', async () => {
    const res = await fetch(`${svc.url}/api/pulse/v1/openapi.json`, { headers: { accept: 'text/html' } });
    expect(res.status).toBe(406);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('not_acceptable');
  });
});

const CLIENT = `import createClient from 'openapi-fetch';
import type { paths, components } from './api.js';

type Snapshot = components['schemas']['ProfileSnapshot'];
export interface Keys { pii: string; segments: string; hooks: string }
export interface Ctx { base: string; site: string; segmentId: string; receiver: string; emailSha256: string }

/** Calls every path of the profile REST API through the generated types; returns what a test can check. */
export async function run(keys: Keys, ctx: Ctx) {
  const auth = (key: string) => createClient<paths>({ baseUrl: ctx.base, headers: { Authorization: 'Bearer ' + key } });
  const profiles = auth(keys.pii);
  const segments = auth(keys.segments);
  const hooks = auth(keys.hooks);
  const anonymous = createClient<paths>({ baseUrl: ctx.base });

  const byVisitor = await profiles.GET('/api/pulse/v1/profile', { params: { query: { visitor_id: 'oa-v1', include_pii: 'true' } } });
  const snapshot: Snapshot | undefined = byVisitor.data;
  const byHash = await profiles.GET('/api/pulse/v1/profile', { params: { query: { email_sha256: ctx.emailSha256, include_pii: 'false' } } });
  const missing = await profiles.GET('/api/pulse/v1/profile', { params: { query: { external_id: 'nobody' } } });
  const missingCode: string | undefined = missing.error?.error.code;

  const first = await segments.GET('/api/pulse/v1/segment/{segmentId}/members', { params: { path: { segmentId: ctx.segmentId }, query: { limit: 1 } } });
  const cursor: string | null | undefined = first.data?.next_cursor;
  const second = cursor
    ? await segments.GET('/api/pulse/v1/segment/{segmentId}/members', { params: { path: { segmentId: ctx.segmentId }, query: { limit: 1, cursor } } })
    : undefined;
  const query = await segments.POST('/api/pulse/v1/profiles/query', {
    body: { rule: { all: [{ trait: 'plan', op: 'eq', value: 'pro' }, { event: 'pageview', within_days: 7 }] }, limit: 10 },
  });

  const created = await hooks.POST('/api/pulse/v1/webhooks', {
    body: { url: ctx.receiver + '/svc', events: ['conversion'], secret: 'openapi-client-secret', description: 'generated client' },
  });
  const webhookId = created.data?.id ?? '';
  const listed = await hooks.GET('/api/pulse/v1/webhooks');
  const read = await hooks.GET('/api/pulse/v1/webhooks/{webhookId}', { params: { path: { webhookId } } });
  // A conversion (ingestion is outside this API) makes a delivery; wait for the log to show it.
  await fetch(ctx.base + '/api/convert', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ site_id: ctx.site, session_id: 'oa-s1', revenue: 42 }) });
  let deliveries = await hooks.GET('/api/pulse/v1/webhooks/{webhookId}/deliveries', { params: { path: { webhookId }, query: { limit: 10, failed: 'false' } } });
  for (const deadline = Date.now() + 20_000; (deliveries.data?.deliveries.length ?? 0) === 0 && Date.now() < deadline; ) {
    await new Promise((r) => setTimeout(r, 50));
    deliveries = await hooks.GET('/api/pulse/v1/webhooks/{webhookId}/deliveries', { params: { path: { webhookId }, query: { limit: 10, failed: 'false' } } });
  }
  const rotated = await hooks.POST('/api/pulse/v1/webhooks/{webhookId}/rotate-secret', { params: { path: { webhookId } }, body: { grace_period_seconds: 60 } });
  const rotatedSecret: string | undefined = rotated.data?.secret;
  const updated = await hooks.PATCH('/api/pulse/v1/webhooks/{webhookId}', { params: { path: { webhookId } }, body: { events: ['all'], enabled: false } });
  const removed = await hooks.DELETE('/api/pulse/v1/webhooks/{webhookId}', { params: { path: { webhookId } } });
  const gone = await hooks.GET('/api/pulse/v1/webhooks/{webhookId}', { params: { path: { webhookId } } });
  const document = await anonymous.GET('/api/pulse/v1/openapi.json');

  return {
    profile: { status: byVisitor.response.status, id: snapshot?.profile_id, email: snapshot?.identity.email, pii: snapshot?.meta.pii, segment: snapshot?.segments.primary, events: snapshot?.activity.events },
    byHash: { status: byHash.response.status, id: byHash.data?.profile_id, email: byHash.data?.identity.email ?? null },
    missing: { status: missing.response.status, code: missingCode },
    members: { status: first.response.status, first: first.data?.profile_ids, second: second?.data?.profile_ids, last: second?.data?.next_cursor },
    query: { status: query.response.status, ids: query.data?.profile_ids, next: query.data?.next_cursor, at: query.data?.evaluated_at },
    created: { status: created.response.status, events: created.data?.events, hasSecret: created.data?.has_secret, description: created.data?.description },
    listed: { status: listed.response.status, ids: listed.data?.webhooks.map((w) => w.id) },
    read: { status: read.response.status, url: read.data?.url },
    deliveries: { status: deliveries.response.status, log: deliveries.data?.deliveries.map((d) => ({ event: d.event, ok: d.ok, status: d.status, kind: d.kind })) },
    rotated: { status: rotated.response.status, whsec: rotatedSecret?.startsWith('whsec_') ?? false, graceUntil: typeof rotated.data?.previous_secret_expires_at },
    updated: { status: updated.response.status, events: updated.data?.events, enabled: updated.data?.enabled },
    removed: { status: removed.response.status },
    gone: { status: gone.response.status, code: gone.error?.error.code },
    document: { status: document.response.status, openapi: document.data?.openapi },
    webhookId,
  };
}
`;

const MAIN = `import { run } from './client.js';
const [keys, ctx] = JSON.parse(process.argv[2] ?? '[]');
process.stdout.write(JSON.stringify(await run(keys, ctx)));
`;

/** A receiver's handler typed by the generated webhook payloads: a switch on `event` narrows each payload. */
const RECEIVER = `import type { webhooks } from './api.js';

export type EventName = keyof webhooks;
export type Payload<E extends EventName> = webhooks[E]['post']['requestBody']['content']['application/json'];
export type AnyPayload = { [E in EventName]: Payload<E> }[EventName];
export type DeliveryHeaders = webhooks['conversion']['post']['parameters']['header'];

export const HANDLED: Record<AnyPayload['event'], true> = { ${EVENT_TYPES.map((t) => `'${t}': true`).join(', ')} };

export function summarize(headers: DeliveryHeaders, p: AnyPayload): string {
  const from = headers['X-SVC-Delivery'] + ' ';
  switch (p.event) {
    case 'conversion':
      return from + p.conversion_id + ' ' + (p.revenue ?? 0) + ' ' + p.currency + ' ' + p.line_items.map((l) => l.sku + 'x' + l.qty).join(',');
    case 'profile.identified':
      return from + p.profile.email + ' ' + p.profile.external_id;
    case 'lead.captured':
      return from + p.lead_id + ' ' + p.form_id;
    case 'pageview':
    case 'click':
      return from + p.event_id + ' ' + JSON.stringify(p.properties);
    default:
      return from + p.event + ' ' + p.site_id + ' ' + p.timestamp;
  }
}
`;

describe('a client generated from openapi.json', () => {
  it('type-checks, with openapi-fetch, against the generated paths and webhook payload types', () => {
    writeFileSync(path.join(work, 'src/client.ts'), CLIENT);
    writeFileSync(path.join(work, 'src/main.ts'), MAIN);
    writeFileSync(path.join(work, 'src/receiver.ts'), RECEIVER);
    const r = tsc(['--outDir', 'out', 'src/main.ts', 'src/client.ts', 'src/receiver.ts']);
    expect(r.out).toBe('');
    expect(r.code).toBe(0);
  });

  it('is refused by the type checker when it misuses a path, a parameter or a payload', () => {
    const cases: [string, RegExp][] = [
      [`await c.GET('/api/pulse/v1/profiles', {});`, /profiles/],
      [`await c.GET('/api/pulse/v1/profile', { params: { query: { visitor: 'x' } } });`, /visitor/],
      [`await c.GET('/api/pulse/v1/segment/{segmentId}/members', { params: { path: { segmentId: 's' }, query: { limit: 'ten' } } });`, /limit|number/],
      [`await c.POST('/api/pulse/v1/webhooks', { body: { url: 'https://x.example', events: ['conversions'] } });`, /conversions/],
      [`const p = {} as Payload<'lead.captured'>; p.revenue;`, /revenue/],
    ];
    const files = cases.map(([line], i) => {
      const file = `src/wrong${i}.ts`;
      writeFileSync(
        path.join(work, file),
        `import createClient from 'openapi-fetch';\nimport type { paths } from './api.js';\nimport type { Payload } from './receiver.js';\nconst c = createClient<paths>({ baseUrl: 'http://x' });\nexport async function f() {\n  ${line}\n}\nvoid c; export type P = Payload<'conversion'>;\n`,
      );
      return file;
    });
    // One compiler run for all of them; each file must have an error of its own on its one line.
    const r = tsc(['--noEmit', ...files]);
    expect(r.code).not.toBe(0);
    for (const [i, [line, why]] of cases.entries()) {
      const errors = r.out.split('\n').filter((l) => l.startsWith(`${files[i]}(6,`));
      expect(errors.length, line).toBeGreaterThan(0);
      expect(errors.join('\n'), line).toMatch(why);
    }
  });

  it('calls every path of a live server with realistic parameters and reads typed answers', async () => {
    const emailSha256 = createHash('sha256').update('grace@example.com').digest('hex');
    // Asynchronously: the receiver the deliveries go to runs in this process.
    const r = await runNode(['out/main.js', JSON.stringify([keys, { base: svc.url, site, segmentId, receiver: rx.url, emailSha256 }])]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    const ids = [out.profile.id, out.byHash.id].sort();
    expect(out.profile).toMatchObject({ status: 200, email: 'ada@example.com', pii: true, segment: segmentId, events: 1 });
    expect(out.byHash).toEqual({ status: 200, id: expect.stringMatching(/^prf_/), email: null });
    expect(out.byHash.id).not.toBe(out.profile.id);
    expect(out.missing).toEqual({ status: 404, code: 'not_found' });
    expect(out.members).toEqual({ status: 200, first: [ids[0]], second: [ids[1]], last: null });
    expect(out.query).toEqual({ status: 200, ids, next: null, at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });
    expect(out.created).toEqual({ status: 201, events: ['conversion'], hasSecret: true, description: 'generated client' });
    expect(out.listed).toEqual({ status: 200, ids: [out.webhookId] });
    expect(out.read).toEqual({ status: 200, url: `${rx.url}/svc` });
    expect(out.deliveries).toEqual({ status: 200, log: [{ event: 'conversion', ok: true, status: 204, kind: 'attempt' }] });
    expect(out.rotated).toEqual({ status: 200, whsec: true, graceUntil: 'string' });
    expect(out.updated).toEqual({ status: 200, events: ['all'], enabled: false });
    expect(out.removed).toEqual({ status: 204 });
    expect(out.gone).toEqual({ status: 404, code: 'not_found' });
    expect(out.document).toEqual({ status: 200, openapi: '3.1.0' });

    // The typed receiver handles the delivery svc really sent.
    const [delivery] = await rx.waitFor(1);
    const { summarize } = (await import(path.join(work, 'out/receiver.js'))) as { summarize: (h: Record<string, string>, p: unknown) => string };
    const headers = { 'X-SVC-Delivery': String(delivery!.headers['x-svc-delivery']), 'X-SVC-Signature': String(delivery!.headers['x-svc-signature']) };
    expect(summarize(headers, JSON.parse(delivery!.body))).toMatch(new RegExp(`^dlv_\\S+ cnv_\\S+ 42 USD $`));
    expect(delivery!.headers['x-svc-event']).toBe('conversion');
  });
});

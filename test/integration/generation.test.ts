import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/client';
import { cleanup, cli, createSite, startSvc, tempDir, type Svc } from '../helpers/svc.js';
import { startReceiver } from '../helpers/receiver.js';
import { execute, query } from '../helpers/db.js';
import { callErr, callOk, mcpClient, mintToken, until } from '../helpers/mcp-client.js';
import { validatePayload } from '../../src/webhooks/catalogue.js';

const PRIVATE = ['--allow-private-destinations'];

let svc: Svc;
let dataDir: string;
let siteId: string;
let client: Client;
let rx: Awaited<ReturnType<typeof startReceiver>>;
let segmentId: string;

function seedPage() {
  const ins = (sql: string, ...p: unknown[]) => execute(dataDir, sql, ...p);
  ins("INSERT INTO pages (id, site_id, name, match_type, pattern, source, created_at, updated_at) VALUES ('page_pricing', ?, 'Pricing', 'exact', '/pricing', 'manual', 1, 1)", siteId);
  ins("INSERT INTO zones (id, site_id, page_id, name, selector, created_at, updated_at) VALUES ('zone_hero', ?, 'page_pricing', 'hero', '#hero', 1, 1)", siteId);
  ins("INSERT INTO zones (id, site_id, page_id, name, selector, created_at, updated_at) VALUES ('zone_cta', ?, 'page_pricing', 'cta', '#cta', 1, 1)", siteId);
  ins("INSERT INTO content_blocks (id, site_id, name, kind, body, created_at, updated_at) VALUES ('cnt_gold', ?, 'Gold offer', 'html', '<p>Gold members save 20%</p>', 1, 1)", siteId);
  ins("INSERT INTO content_blocks (id, site_id, name, kind, body, created_at, updated_at) VALUES ('cnt_hero', ?, 'hero image', 'html', '<p>Hero for gold</p>', 1, 1)", siteId);
}

beforeAll(async () => {
  rx = await startReceiver();
  dataDir = tempDir();
  siteId = createSite(dataDir);
  const add = cli(['webhooks', 'add', '--site', siteId, '--url', `${rx.url}/hooks`, '--events', 'all', '--data', dataDir, ...PRIVATE, '--json']);
  expect(add.code, add.stderr).toBe(0);
  seedPage();
  svc = await startSvc({ dataDir, args: PRIVATE, env: { SVC_WEBHOOK_POLL_MS: '50' } });
  client = await mcpClient(svc.url, mintToken(dataDir, siteId, ['--scope', 'write']));
  const admin = await mcpClient(svc.url, mintToken(dataDir, siteId, ['--scope', 'admin']));
  segmentId = (await callOk(admin, 'segments_create', { name: 'Gold buyers', rule: { all: [{ trait: 'plan', op: 'eq', value: 'gold' }, { trait: 'email', op: 'eq', value: 'x@example.com' }] } })).id;
  await admin.close();
});

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await svc?.stop();
  await rx?.close();
  cleanup(dataDir);
});

const finished = (id: string) =>
  until(
    () => callOk(client, 'generation_status', { generation_id: id }),
    (s) => s.state === 'finished' || s.state === 'failed',
  );

const events = () => rx.received.filter((r) => r.headers['x-svc-event'] === 'generation.finished').map((r) => JSON.parse(r.body) as Record<string, any>);

describe('page generation through MCP', () => {
  let rev1: any;
  let rev2: any;

  it('generates a revision in the background and lands it as content blocks and draft variants', async () => {
    const job = await callOk(client, 'generation_start', { page_id: 'page_pricing', segment_id: segmentId, seed: 'a' });
    expect(job).toMatchObject({ state: 'queued', kind: 'generate', generator: 'builtin-v1', segment_id: segmentId, revision_id: null });
    const s = await finished(job.generation_id);
    expect(s).toMatchObject({ state: 'finished', error: null, sections_generated: 2, sections_unchanged: 0, attempts: 1 });
    const { revisions } = await callOk(client, 'generation_revisions', { page_id: 'page_pricing', segment_id: segmentId, include_bodies: true });
    expect(revisions).toHaveLength(1);
    rev1 = revisions[0];
    expect(rev1).toMatchObject({ revision_id: s.revision_id, number: 1, generation_id: job.generation_id, restored_from: null, segment_id: segmentId });
    expect(rev1.sections.map((x: any) => x.zone_name)).toEqual(['cta', 'hero']);
    const hero = rev1.sections.find((x: any) => x.zone_name === 'hero');
    expect(hero.body).toContain('<p>Hero for gold</p>');
    expect(hero.body).toContain('plan: gold');
    // Personal-data traits of the rule never reach generated content.
    expect(JSON.stringify(rev1)).not.toContain('x@example.com');
    const variants = query<{ id: string; status: string; segment_id: string; content_id: string; zone_id: string }>(
      dataDir,
      'SELECT id, status, segment_id, content_id, zone_id FROM variants WHERE site_id = ? ORDER BY zone_id',
      siteId,
    );
    expect(variants.map((v) => [v.zone_id, v.status, v.segment_id])).toEqual([
      ['zone_cta', 'draft', segmentId],
      ['zone_hero', 'draft', segmentId],
    ]);
    expect(variants.map((v) => v.id).sort()).toEqual(rev1.sections.map((x: any) => x.variant_id).sort());
    const block = query<{ kind: string; body: string }>(dataDir, 'SELECT kind, body FROM content_blocks WHERE id = ?', hero.content_id)[0]!;
    expect(block).toEqual({ kind: 'html', body: hero.body });
    // Everyone has no revision yet.
    expect((await callOk(client, 'generation_revisions', { page_id: 'page_pricing' })).revisions).toEqual([]);
  });

  it('lands only changed sections, sanitized, and diffs two revisions zone by zone', async () => {
    const job = await callOk(client, 'generation_start', {
      page_id: 'page_pricing',
      segment_id: segmentId,
      seed: 'a',
      // Only the hero template changes (a headline would change every zone's default section).
      template: { sections: { hero: '<h1 onclick="steal()">Gold, for you</h1>\n<script>alert(1)</script>{{content.Gold offer}}' } },
    });
    const s = await finished(job.generation_id);
    expect(s).toMatchObject({ state: 'finished', sections_generated: 1, sections_unchanged: 1 });
    const { revisions } = await callOk(client, 'generation_revisions', { page_id: 'page_pricing', segment_id: segmentId, include_bodies: true });
    expect(revisions.map((r: any) => r.number)).toEqual([2, 1]);
    rev2 = revisions[0];
    const hero = rev2.sections.find((x: any) => x.zone_name === 'hero');
    expect(hero.body).toBe('<h1>Gold, for you</h1>\n<p>Gold members save 20%</p>');
    const cta2 = rev2.sections.find((x: any) => x.zone_name === 'cta');
    const cta1 = rev1.sections.find((x: any) => x.zone_name === 'cta');
    expect(cta2.variant_id).toBe(cta1.variant_id);
    expect(query(dataDir, 'SELECT count(*) AS n FROM variants WHERE site_id = ?', siteId)).toEqual([{ n: 3 }]);

    const diff = await callOk(client, 'generation_diff', { from_revision_id: rev1.revision_id });
    expect(diff.to_revision_id).toBe(rev2.revision_id);
    expect(diff.summary).toEqual({ added: 0, removed: 0, changed: 1, unchanged: 1 });
    const heroDiff = diff.zones.find((z: any) => z.zone_name === 'hero');
    expect(heroDiff.change).toBe('changed');
    expect(heroDiff.lines.filter((l: any) => l.op === 'add').map((l: any) => l.text)).toEqual(['<h1>Gold, for you</h1>', '<p>Gold members save 20%</p>']);
    expect(heroDiff.lines.filter((l: any) => l.op === 'remove').map((l: any) => l.text).join('\n')).toBe(rev1.sections.find((x: any) => x.zone_name === 'hero').body);
    expect(diff.zones.find((z: any) => z.zone_name === 'cta')).toMatchObject({ change: 'unchanged', lines: [] });
  });

  it('restores an old revision as the newest, and regenerates deterministically', async () => {
    const r = await callOk(client, 'generation_restore', { revision_id: rev1.revision_id });
    expect(r.generation).toMatchObject({ kind: 'restore', state: 'finished', sections_generated: 1, sections_unchanged: 1 });
    expect(r.revision).toMatchObject({ number: 3, restored_from: rev1.revision_id });
    const same = await callOk(client, 'generation_diff', { from_revision_id: rev1.revision_id, to_revision_id: r.revision.revision_id });
    expect(same.summary).toEqual({ added: 0, removed: 0, changed: 0, unchanged: 2 });
    // The same input as the first job gives the same sections: nothing new to land.
    const again = await callOk(client, 'generation_start', { page_id: 'page_pricing', segment_id: segmentId, seed: 'a' });
    expect(await finished(again.generation_id)).toMatchObject({ state: 'finished', sections_generated: 0, sections_unchanged: 2 });
    // Generation never approves or publishes.
    expect(query(dataDir, "SELECT count(*) AS n FROM variants WHERE site_id = ? AND status <> 'draft'", siteId)).toEqual([{ n: 0 }]);

    await until(async () => events().length, (n) => n >= 4);
    const evs = events();
    for (const e of evs) expect(validatePayload('generation.finished', e).success, JSON.stringify(e)).toBe(true);
    expect(evs.map((e) => [e.sections_generated, e.sections_unchanged])).toEqual([
      [2, 0],
      [1, 1],
      [1, 1],
      [0, 2],
    ]);
    expect(evs[0]).toMatchObject({ site_id: siteId, page_id: 'page_pricing', segment_id: segmentId, revision_id: rev1.revision_id, previous_revision_id: null });
    expect(evs[1]).toMatchObject({ revision_id: rev2.revision_id, previous_revision_id: rev1.revision_id });
    expect(evs[2]).toMatchObject({ generation_id: r.generation.generation_id, revision_id: r.revision.revision_id, previous_revision_id: rev2.revision_id });
  });

  it('refuses bad requests with tool errors and queues nothing', async () => {
    const before = query(dataDir, 'SELECT count(*) AS n FROM generation_jobs');
    expect((await callErr(client, 'generation_start', { page_id: 'page_nope' })).code).toBe('not_found');
    expect((await callErr(client, 'generation_start', { page_id: 'page_pricing', segment_id: 'seg_nope' })).code).toBe('not_found');
    expect(await callErr(client, 'generation_start', { page_id: 'page_pricing', template: { sections: { hero: '{{oops}}' } } })).toMatchObject({
      code: 'validation_failed',
      message: 'template.sections.hero: unknown placeholder {{oops}}',
    });
    expect((await callErr(client, 'generation_start', { page_id: 'page_pricing', template: { sections: { footer: 'x' } } })).code).toBe('validation_failed');
    expect((await callErr(client, 'generation_start', { page_id: 'page_pricing', template: { default_section: '{{content.No such block}}' } })).code).toBe('validation_failed');
    expect((await callErr(client, 'generation_diff', { from_revision_id: 'rev_nope' })).code).toBe('not_found');
    expect((await callErr(client, 'generation_restore', { revision_id: 'rev_nope' })).code).toBe('not_found');
    expect((await callErr(client, 'generation_status', { generation_id: 'gen_nope' })).code).toBe('not_found');
    expect(query(dataDir, 'SELECT count(*) AS n FROM generation_jobs')).toEqual(before);
  });

  it('fails a job whose section is over the size cap, with the reason, landing nothing', async () => {
    execute(dataDir, "INSERT INTO content_blocks (id, site_id, name, kind, body, created_at, updated_at) VALUES ('cnt_big', ?, 'big', 'html', ?, 1, 1)", siteId, `<p>${'x'.repeat(30_000)}</p>`);
    const revisionsBefore = query(dataDir, 'SELECT count(*) AS n FROM page_revisions');
    const job = await callOk(client, 'generation_start', { page_id: 'page_pricing', template: { sections: { hero: '{{content.big}}{{content.big}}{{content.big}}{{content.big}}' }, zones: ['hero'] } });
    const s = await finished(job.generation_id);
    expect(s).toMatchObject({ state: 'failed', revision_id: null });
    expect(s.error).toMatch(/section hero is \d+ bytes, over the 65536-byte content cap/);
    expect(query(dataDir, 'SELECT count(*) AS n FROM page_revisions')).toEqual(revisionsBefore);
  });

  it('picks up a job left running by a crash when svc starts again', async () => {
    await client.close();
    await svc.kill();
    execute(
      dataDir,
      `INSERT INTO generation_jobs (id, site_id, page_id, segment_id, kind, generator, template, seed, state, attempts, lease_until, requested_by, created_at, started_at)
       VALUES ('gen_crashed', ?, 'page_pricing', NULL, 'generate', 'builtin-v1', '{"sections":{}}', 'z', 'running', 1, ?, 'token:x', ?, ?)`,
      siteId,
      Date.now() - 1000,
      Date.now() - 5000,
      Date.now() - 5000,
    );
    svc = await startSvc({ dataDir, args: PRIVATE, env: { SVC_WEBHOOK_POLL_MS: '50' } });
    client = await mcpClient(svc.url, mintToken(dataDir, siteId, ['--scope', 'write']));
    const s = await finished('gen_crashed');
    expect(s).toMatchObject({ state: 'finished', attempts: 2, sections_generated: 2 });
    expect((await callOk(client, 'generation_revisions', { page_id: 'page_pricing' })).revisions.map((r: any) => r.generation_id)).toEqual(['gen_crashed']);
  });
});

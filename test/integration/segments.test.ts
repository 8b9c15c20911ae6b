import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, cli, cliJson, createSite, post, startSvc, tempDir, type Svc } from '../helpers/svc.js';
import { query } from '../helpers/db.js';

/**
 * Segments through the running server: memberships and the primary segment
 * follow events, scores and conversions as they are ingested, and every change
 * of primary segment is one segment.changed row in the outbox.
 */

let svc: Svc;
let dataDir: string;
let site: string;
const seg: Record<'browsers' | 'engaged' | 'buyers' | 'prospects', string> = { browsers: '', engaged: '', buyers: '', prospects: '' };

const create = (name: string, priority: number, rule: unknown) =>
  cliJson<{ id: string; members: number }>(['segment', 'create', '--site', site, '--name', name, '--priority', String(priority), '--rule', JSON.stringify(rule), '--data', dataDir, '--json']);

function changes(profileId: string): { previous_segment: string | null; segment: string | null }[] {
  return query<{ payload: string }>(dataDir, "SELECT payload FROM outbox WHERE event_type = 'segment.changed' ORDER BY id")
    .map((r) => JSON.parse(r.payload) as { profile_id: string; previous_segment: string | null; segment: string | null })
    .filter((p) => p.profile_id === profileId)
    .map(({ previous_segment, segment }) => ({ previous_segment, segment }));
}

function primaryOf(profileId: string): string | null {
  return query<{ primary_segment: string | null }>(dataDir, 'SELECT primary_segment FROM profiles WHERE id = ?', profileId)[0]!.primary_segment;
}

beforeAll(async () => {
  dataDir = tempDir();
  site = createSite(dataDir);
  seg.browsers = create('Browsers', 1, { event: 'pageview', where: [{ property: 'path', op: 'starts_with', value: '/products' }], count: { op: 'gte', value: 2 }, within_days: 7 }).id;
  seg.engaged = create('Engaged', 3, { score: { agg: 'latest', op: 'gte', value: 50 } }).id;
  seg.buyers = create('Buyers', 5, { conversions: { metric: 'revenue', op: 'gte', value: 100 } }).id;
  seg.prospects = create('Prospects', 2, { all: [{ segment: seg.engaged }, { not: { segment: seg.buyers } }] }).id;
  svc = await startSvc({ dataDir });
});

afterAll(async () => {
  await svc.stop();
  cleanup(dataDir);
});

describe('segments follow ingestion', () => {
  it('moves the primary segment with events, scores and conversions, writing segment.changed each time', async () => {
    const ev = (path: string) => post(`${svc.url}/api/events`, { site_id: site, session_id: 'a-1', type: 'pageview', path });
    const first = await ev('/products/1');
    expect(first.status).toBe(201);
    const profile = (first.body as { profile_id: string }).profile_id;
    expect(primaryOf(profile)).toBeNull();
    await ev('/about'); // filtered out by `where`
    expect(primaryOf(profile)).toBeNull();
    await ev('/products/2');
    expect(primaryOf(profile)).toBe(seg.browsers);

    await post(`${svc.url}/api/score`, { site_id: site, session_id: 'a-1', score: 40 });
    expect(primaryOf(profile)).toBe(seg.browsers);
    await post(`${svc.url}/api/score`, { site_id: site, session_id: 'a-1', score: 75 });
    // Engaged (3) beats Prospects (2, which depends on Engaged) and Browsers (1)
    expect(primaryOf(profile)).toBe(seg.engaged);
    const members = query<{ segment_id: string }>(dataDir, 'SELECT segment_id FROM segment_members WHERE profile_id = ? ORDER BY segment_id', profile).map((r) => r.segment_id);
    expect(members).toEqual([seg.browsers, seg.engaged, seg.prospects].sort());

    await post(`${svc.url}/api/convert`, { site_id: site, session_id: 'a-1', revenue: 60 });
    expect(primaryOf(profile)).toBe(seg.engaged);
    await post(`${svc.url}/api/convert`, { site_id: site, session_id: 'a-1', revenue: 45.5 });
    expect(primaryOf(profile)).toBe(seg.buyers);
    const after = query<{ segment_id: string }>(dataDir, 'SELECT segment_id FROM segment_members WHERE profile_id = ? ORDER BY segment_id', profile).map((r) => r.segment_id);
    expect(after).toEqual([seg.browsers, seg.buyers, seg.engaged].sort()); // no longer a prospect

    await post(`${svc.url}/api/score`, { site_id: site, session_id: 'a-1', score: 10 });
    expect(primaryOf(profile)).toBe(seg.buyers); // still a buyer; Engaged left quietly

    expect(changes(profile)).toEqual([
      { previous_segment: null, segment: seg.browsers },
      { previous_segment: seg.browsers, segment: seg.engaged },
      { previous_segment: seg.engaged, segment: seg.buyers },
    ]);
  });

  it('shows the new membership in the profile snapshot', async () => {
    const key = cliJson<{ key: string }>(['key', 'mint', '--site', site, '--scopes', 'profile:read', '--data', dataDir, '--json']).key;
    const profile = query<{ id: string }>(dataDir, 'SELECT id FROM profiles WHERE primary_segment = ?', seg.buyers)[0]!.id;
    const res = await fetch(`${svc.url}/api/pulse/v1/profile?profile_id=${profile}`, { headers: { authorization: `Bearer ${key}` } });
    const body = (await res.json()) as { segments: { primary: string; member_of: { id: string; name: string }[] } };
    expect(body.segments.primary).toBe(seg.buyers);
    expect(body.segments.member_of.map((m) => m.name).sort()).toEqual(['Browsers', 'Buyers']);
  });
});

describe('svc segment', () => {
  it('lists segments with member counts and shows one with its rule', () => {
    const list = cliJson<{ id: string; name: string; members: number; priority: number }[]>(['segment', 'list', '--site', site, '--data', dataDir, '--json']);
    expect(list.map((s) => [s.name, s.priority, s.members])).toEqual([
      ['Buyers', 5, 1],
      ['Engaged', 3, 0],
      ['Prospects', 2, 0],
      ['Browsers', 1, 1],
    ]);
    const shown = cliJson<{ rule: unknown }>(['segment', 'show', seg.prospects, '--data', dataDir, '--json']);
    expect(shown.rule).toEqual({ all: [{ segment: seg.engaged }, { not: { segment: seg.buyers } }] });
  });

  it('refuses bad rules with the node path, unknown references, duplicates, and deleting a segment in use', () => {
    const bad = cli(['segment', 'create', '--site', site, '--name', 'Bad', '--rule', '{"any":[{"trait":"plan","op":"eq","value":"a"},{"score":{"agg":"median","op":"gt","value":1}}]}', '--data', dataDir]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('$.any[1].score.agg');
    expect(bad.stderr).not.toMatch(/\n\s+at /);
    const unknown = cli(['segment', 'create', '--site', site, '--name', 'Ref', '--rule', '{"segment":"seg_nope"}', '--data', dataDir]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no segment seg_nope');
    const dup = cli(['segment', 'create', '--site', site, '--name', 'Buyers', '--rule', '{"trait":"a","op":"exists"}', '--data', dataDir]);
    expect(dup.code).toBe(1);
    const inUse = cli(['segment', 'delete', seg.buyers, '--data', dataDir]);
    expect(inUse.code).toBe(1);
    expect(inUse.stderr).toContain(seg.prospects);
    expect(query(dataDir, 'SELECT id FROM segments WHERE name = ?', 'Bad')).toEqual([]);
  });

  it('deletes a segment and recomputes its former members', async () => {
    const out = cliJson<{ removed: string; members: number }>(['segment', 'delete', seg.prospects, '--data', dataDir, '--json']);
    expect(out).toEqual({ removed: seg.prospects, members: 0 });
    const gone = cliJson<{ removed: string; members: number }>(['segment', 'delete', seg.buyers, '--data', dataDir, '--json']);
    expect(gone.members).toBe(1);
    const profile = query<{ profile_id: string }>(dataDir, 'SELECT profile_id FROM segment_members WHERE segment_id = ?', seg.browsers)[0]!.profile_id;
    expect(primaryOf(profile)).toBe(seg.browsers);
    expect(changes(profile).at(-1)).toEqual({ previous_segment: seg.buyers, segment: seg.browsers });
  });
});

describe('windowed segments follow the clock', () => {
  it('drops a profile whose only qualifying event leaves the window, with no new data', async () => {
    const dir = tempDir();
    const siteId = createSite(dir);
    const recent = cliJson<{ id: string }>(['segment', 'create', '--site', siteId, '--name', 'Viewed in the last hour', '--rule', '{"event":"view","within_hours":1}', '--data', dir, '--json']).id;
    const server = await startSvc({ dataDir: dir, env: { SVC_SEGMENT_REFRESH_MS: '250' } });
    try {
      // 3 s inside the window when it is written
      const at = new Date(Date.now() - 3_600_000 + 3_000).toISOString();
      const r = await post(`${server.url}/api/events`, { site_id: siteId, session_id: 'w-1', type: 'view', timestamp: at });
      const profile = (r.body as { profile_id: string }).profile_id;
      const primary = () => query<{ primary_segment: string | null }>(dir, 'SELECT primary_segment FROM profiles WHERE id = ?', profile)[0]!.primary_segment;
      expect(primary()).toBe(recent);
      const deadline = Date.now() + 15_000;
      while (primary() !== null && Date.now() < deadline) await new Promise((res) => setTimeout(res, 200));
      expect(primary()).toBeNull();
      expect(query(dir, 'SELECT 1 FROM segment_members WHERE profile_id = ?', profile)).toEqual([]);
      const changed = query<{ payload: string }>(dir, "SELECT payload FROM outbox WHERE event_type = 'segment.changed' ORDER BY id").map((x) => JSON.parse(x.payload) as { previous_segment: string | null; segment: string | null });
      expect(changed.map((c) => [c.previous_segment, c.segment])).toEqual([
        [null, recent],
        [recent, null],
      ]);
    } finally {
      await server.stop();
      cleanup(dir);
    }
  });
});

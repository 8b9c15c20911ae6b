import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, cli, cliJson, createSite, startSvc, stats, tempDir, type Svc } from '../helpers/svc.js';
import { query } from '../helpers/db.js';
import { PG_BASE_URL } from '../helpers/backend.js';

interface SeedOut {
  site_id: string;
  seed: number;
  until: string;
  profiles: number;
  known: number;
  identities: number;
  identity_hashes: number;
  sessions: number;
  events: number;
  conversions: number;
  scores: number;
  seconds: number;
}

const N = 2000;
const sha = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');
const dirs: string[] = [];
let dataDir: string;
let site: string;
let seeded: SeedOut;
let seedStderr: string;

function seed(dir: string, siteId: string, extra: string[] = []) {
  return cli(['seed', '--site', siteId, '--profiles', String(N), '--seed', '7', '--data', dir, '--json', ...extra]);
}

/** Every seeded row of a data dir, with the (random) site id replaced so two data dirs compare. */
function dump(dir: string, siteId: string): string {
  const tables = [
    'SELECT id, site_id, known, traits, primary_segment, merged_into, created_at, updated_at FROM profiles ORDER BY id',
    'SELECT * FROM identities ORDER BY kind, value',
    'SELECT * FROM identity_hashes ORDER BY kind, hash',
    'SELECT * FROM sessions ORDER BY id',
    'SELECT * FROM events ORDER BY id',
    'SELECT * FROM conversions ORDER BY id',
    'SELECT * FROM scores ORDER BY id',
  ];
  return tables.map((sql) => JSON.stringify(query(dir, sql))).join('\n').split(siteId).join('SITE');
}

beforeAll(() => {
  dataDir = tempDir();
  dirs.push(dataDir);
  site = createSite(dataDir);
  const r = seed(dataDir, site);
  expect(r.code, r.stderr).toBe(0);
  seeded = JSON.parse(r.stdout) as SeedOut;
  seedStderr = r.stderr;
});

afterAll(() => {
  for (const d of dirs) cleanup(d);
});

describe('svc seed', () => {
  it('reports what it stored, and svc stats agrees exactly', () => {
    expect(seeded.site_id).toBe(site);
    expect(seeded.seed).toBe(7);
    expect(seeded.until).toBe('2026-01-01T00:00:00.000Z');
    expect(seeded.profiles).toBe(N);
    expect(seeded.sessions).toBe(N);
    expect(seeded.events).toBe(3 * N);
    expect(seeded.known).toBeGreaterThan(N * 0.4);
    expect(seeded.known).toBeLessThan(N * 0.6);
    expect(seeded.identities).toBe(N + 2 * seeded.known);
    expect(seeded.conversions).toBeGreaterThan(0);
    expect(seeded.scores).toBeGreaterThan(0);
    expect(typeof seeded.seconds).toBe('number');
    expect(seedStderr).toMatch(/svc seed: 2,000\/2,000 profiles \(100%\)/);
    expect(stats(dataDir, site)).toEqual({
      site_id: site,
      profiles: N,
      sessions: N,
      events: 3 * N,
      scores: seeded.scores,
      conversions: seeded.conversions,
      leads: 0,
      outbox_pending: 0,
      outbox_done: 0,
    });
  });

  it('stores identities, hashes and rows shaped like live ones', () => {
    const count = (sql: string, ...p: unknown[]) => query<{ n: number }>(dataDir, sql, ...p)[0]!.n;
    expect(count('SELECT count(*) AS n FROM profiles WHERE known = 1')).toBe(seeded.known);
    expect(count("SELECT count(*) AS n FROM identities WHERE kind = 'visitor'")).toBe(N);
    expect(count("SELECT count(*) AS n FROM identities WHERE kind = 'email'")).toBe(seeded.known);
    expect(count("SELECT count(*) AS n FROM identities WHERE kind = 'external_id'")).toBe(seeded.known);
    expect(count("SELECT count(*) AS n FROM identity_hashes WHERE kind = 'email_sha256'")).toBe(seeded.known);
    const phones = count("SELECT count(*) AS n FROM profiles WHERE json_extract(traits, '$.phone') IS NOT NULL");
    expect(phones).toBeGreaterThan(seeded.known * 0.5);
    expect(count("SELECT count(*) AS n FROM identity_hashes WHERE kind = 'phone_sha256'")).toBe(phones);
    expect(seeded.identity_hashes).toBe(seeded.known + phones);
    expect(count('SELECT count(*) AS n FROM outbox')).toBe(0);
    expect(count('SELECT count(*) AS n FROM segment_members')).toBe(0);
    expect(count('SELECT count(*) AS n FROM events e LEFT JOIN sessions s ON s.id = e.session_id WHERE s.profile_id IS DISTINCT FROM e.profile_id')).toBe(0);

    const profiles = query<{ id: string; known: number; traits: string; created_at: number }>(dataDir, 'SELECT id, known, traits, created_at FROM profiles');
    const plans = new Map<string, number>();
    for (const p of profiles) {
      expect(p.id).toMatch(/^prf_[0-9a-z]{9}[0-9a-f]{16}$/);
      expect(parseInt(p.id.slice(4, 13), 36)).toBe(p.created_at);
      const t = JSON.parse(p.traits) as Record<string, string>;
      expect(['gold', 'silver', 'free']).toContain(t.plan);
      plans.set(t.plan!, (plans.get(t.plan!) ?? 0) + 1);
      expect(t.n).toMatch(/^\d{1,3}$/);
      expect(t.country).toMatch(/^[A-Z]{2}$/);
      expect(t.email !== undefined).toBe(p.known === 1);
      if (p.known === 1) {
        expect(t.name).toBeTruthy();
        expect(t.email).toBe(t.email!.trim().toLowerCase());
      }
    }
    for (const n of plans.values()) expect(n).toBeGreaterThan(N / 3 - 150);

    // Hashes are computed exactly as ingestion does: normalized email, phone as E.164 digits without '+'.
    const hashes = query<{ kind: string; hash: string; profile_id: string; traits: string }>(
      dataDir,
      'SELECT h.kind, h.hash, h.profile_id, p.traits FROM identity_hashes h JOIN profiles p ON p.id = h.profile_id',
    );
    for (const h of hashes) {
      const t = JSON.parse(h.traits) as Record<string, string>;
      expect(h.hash).toBe(h.kind === 'email_sha256' ? sha(t.email!) : sha(t.phone!.replace(/\D/g, '')));
    }
    const conv = query<{ id: string; created_at: number; currency: string; line_items: string; revenue: number }>(dataDir, 'SELECT * FROM conversions LIMIT 50');
    for (const c of conv) {
      expect(c.id).toMatch(/^cnv_[0-9a-z]{9}[0-9a-f]{16}$/);
      expect(c.currency).toBe('USD');
      const items = JSON.parse(c.line_items) as { qty: number; price: number }[];
      expect(c.revenue).toBeCloseTo(items.reduce((s, i) => s + i.qty * i.price, 0), 2);
    }
    const types = query<{ type: string }>(dataDir, 'SELECT DISTINCT type FROM events ORDER BY type').map((r) => r.type);
    expect(types).toEqual(['add_to_cart', 'click', 'pageview']);
    const cart = query<{ body: string }>(dataDir, "SELECT body FROM events WHERE type = 'add_to_cart' LIMIT 1")[0]!;
    expect(JSON.parse(cart.body)).toMatchObject({ site_id: site, type: 'add_to_cart', sku: expect.any(String), qty: expect.any(Number) });
  });

  it('gives identical data for the same --seed, and never collides when seeding again', () => {
    const other = tempDir();
    dirs.push(other);
    const otherSite = createSite(other, 'Other');
    const r = seed(other, otherSite);
    expect(r.code, r.stderr).toBe(0);
    expect({ ...(JSON.parse(r.stdout) as SeedOut), site_id: 'x', seconds: 0 }).toEqual({ ...seeded, site_id: 'x', seconds: 0 });
    expect(dump(other, otherSite)).toBe(dump(dataDir, site));

    const different = cli(['seed', '--site', otherSite, '--profiles', '50', '--seed', '8', '--data', other, '--json']);
    expect(different.code, different.stderr).toBe(0);
    const again = seed(other, otherSite);
    expect(again.code, again.stderr).toBe(0);
    expect(stats(other, otherSite).profiles).toBe(2 * N + 50);
    const firstIds = new Set(query<{ id: string }>(dataDir, 'SELECT id FROM profiles').map((x) => x.id));
    const added = query<{ id: string }>(other, 'SELECT id FROM profiles').filter((x) => !firstIds.has(x.id));
    expect(added).toHaveLength(N + 50);
  }, PG_BASE_URL === undefined ? 60_000 : 180_000); // PostgreSQL: three seeds and full-table reads, each a round trip

  it('documents its trade-offs in --help', () => {
    const r = cli(['seed', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('synchronous=OFF');
    expect(r.stdout).toContain('No outbox rows: seeded history is not announced to webhooks.');
    expect(r.stdout).toContain('`svc segment create`');
  });

  it('refuses an unknown site (exit 1) and bad numbers (exit 2) with a one-line error', () => {
    const missing = cli(['seed', '--site', 'site_nope', '--profiles', '10', '--data', dataDir]);
    expect(missing.code).toBe(1);
    expect(missing.stderr.trim()).toBe('svc: no site site_nope');
    for (const bad of [
      ['--profiles', '0'],
      ['--profiles', 'abc'],
      ['--profiles', '1.5'],
      ['--profiles', '-3'],
      ['--profiles', '100000001'],
      ['--profiles', '10', '--events-per-profile', '101'],
      ['--profiles', '10', '--events-per-profile', 'x'],
      ['--profiles', '10', '--batch', '0'],
      ['--profiles', '10', '--seed', '-1'],
      ['--profiles', '10', '--seed', 'x1'],
      ['--profiles', '10', '--until', 'yesterday'],
    ]) {
      const r = cli(['seed', '--site', site, ...bad, '--data', dataDir]);
      expect(r.code, bad.join(' ')).toBe(2);
      expect(r.stderr.trim().split('\n'), bad.join(' ')).toHaveLength(1);
      expect(r.stderr).toMatch(/^svc: --(profiles|events-per-profile|batch|seed|until) /);
    }
    expect(cli(['seed', '--site', site, '--data', dataDir]).code).toBe(2);
    expect(stats(dataDir, site).profiles).toBe(N);
  });
});

describe('seeded profiles through the running server', () => {
  let svc: Svc;
  let key: string;
  let gold: { id: string; members: number };

  beforeAll(async () => {
    gold = cliJson<{ id: string; members: number }>([
      'segment', 'create', '--site', site, '--name', 'Gold', '--rule', '{"trait":"plan","op":"eq","value":"gold"}', '--data', dataDir,
    ]);
    key = cliJson<{ key: string }>(['key', 'mint', '--site', site, '--scopes', 'profile:read,segment:read', '--data', dataDir]).key;
    svc = await startSvc({ dataDir });
  });

  afterAll(async () => {
    await svc?.stop();
  });

  async function lookup(params: Record<string, string>) {
    const res = await fetch(`${svc.url}/api/pulse/v1/profile?${new URLSearchParams(params).toString()}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    return { status: res.status, body: (await res.json()) as any };
  }

  it('finds a seeded profile by every identifier type', async () => {
    const rows = query<{ id: string; traits: string }>(
      dataDir,
      "SELECT id, traits FROM profiles WHERE known = 1 AND json_extract(traits, '$.phone') IS NOT NULL ORDER BY id LIMIT 5",
    );
    expect(rows).toHaveLength(5);
    for (const row of rows) {
      const t = JSON.parse(row.traits) as Record<string, string>;
      const visitor = query<{ value: string }>(dataDir, "SELECT value FROM identities WHERE kind = 'visitor' AND profile_id = ?", row.id)[0]!.value;
      const lookups: Record<string, string>[] = [
        { profile_id: row.id },
        { visitor_id: visitor },
        { email: `  ${t.email!.toUpperCase()} ` },
        { external_id: t.external_id! },
        { email_sha256: sha(t.email!) },
        { phone_sha256: sha(t.phone!.replace(/\D/g, '')) },
      ];
      for (const params of lookups) {
        const r = await lookup(params);
        expect(r.status, JSON.stringify(params)).toBe(200);
        expect(r.body.profile_id).toBe(row.id);
        expect(r.body.identity.known).toBe(true);
        expect(r.body.identity.visitor_ids).toEqual([visitor]);
        expect(r.body.identity.external_ids).toEqual([t.external_id]);
        expect(r.body.identity.email_sha256).toEqual([sha(t.email!)]);
        expect(r.body.activity.sessions).toBe(1);
        expect(r.body.activity.events).toBe(3);
        expect(r.body.identity.email).toBeUndefined();
      }
    }
    const anonymous = query<{ id: string }>(dataDir, 'SELECT id FROM profiles WHERE known = 0 LIMIT 1')[0]!;
    const visitor = query<{ value: string }>(dataDir, 'SELECT value FROM identities WHERE profile_id = ?', anonymous.id);
    expect(visitor).toHaveLength(1);
    const r = await lookup({ visitor_id: visitor[0]!.value });
    expect(r.status).toBe(200);
    expect(r.body.identity.known).toBe(false);
    expect((await lookup({ email: 'nobody@example.com' })).status).toBe(404);
  });

  it('backfills a segment created after seeding', async () => {
    const expected = query<{ id: string }>(dataDir, "SELECT id FROM profiles WHERE json_extract(traits, '$.plan') = 'gold' ORDER BY id").map((r) => r.id);
    expect(gold.members).toBe(expected.length);
    const ids: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 100; page++) {
      const qs: string = `limit=1000${cursor ? `&cursor=${cursor}` : ''}`;
      const res = await fetch(`${svc.url}/api/pulse/v1/segment/${gold.id}/members?${qs}`, { headers: { authorization: `Bearer ${key}` } });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { profile_ids: string[]; next_cursor: string | null };
      ids.push(...body.profile_ids);
      cursor = body.next_cursor;
      if (!cursor) break;
    }
    expect(ids).toEqual(expected);
    const primary = query<{ n: number }>(dataDir, 'SELECT count(*) AS n FROM profiles WHERE primary_segment = ?', gold.id)[0]!.n;
    expect(primary).toBe(expected.length);
    const changed = query<{ n: number }>(dataDir, "SELECT count(*) AS n FROM outbox WHERE event_type = 'segment.changed'")[0]!.n;
    expect(changed).toBe(expected.length);
  });
});

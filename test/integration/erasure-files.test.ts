import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { cleanup, createSite, post, startSvc, tempDir, type Svc } from '../helpers/svc.js';
import { callOk, McpClients, mintToken } from '../helpers/mcp-client.js';
import { PG_BASE_URL, pgSync, schemaFor } from '../helpers/backend.js';

/** How often `needle` occurs in the raw bytes of the store's files (svc.db and its WAL). */
function occurrences(dataDir: string, needle: string): number {
  let n = 0;
  for (const f of ['svc.db', 'svc.db-wal']) {
    const file = path.join(dataDir, f);
    if (!existsSync(file)) continue;
    const bytes = readFileSync(file);
    for (let i = bytes.indexOf(needle); i !== -1; i = bytes.indexOf(needle, i + 1)) n++;
  }
  return n;
}

describe('profiles_erase leaves nothing of the person in the store', () => {
  let dataDir: string;
  let site: string;
  let svc: Svc;
  const mcp = new McpClients(() => svc.url);
  const email = 'erase.me.7731@example.com';
  const phone = '+44 20 7946 7731';

  beforeAll(async () => {
    dataDir = tempDir();
    site = createSite(dataDir);
    svc = await startSvc({ dataDir });
  });
  afterAll(async () => {
    await mcp.closeAll();
    await svc.stop();
    cleanup(dataDir);
  });

  it('erases the rows and, on SQLite, every copy of the email and phone in svc.db and its WAL; on PostgreSQL vacuums the erased tables', async () => {
    const ident = await post(`${svc.url}/api/identify`, { site_id: site, session_id: 'e-1', visitor_id: 'e-v', traits: { email, phone, name: 'Erin Erase' } });
    expect(ident.status).toBe(200);
    const profileId = ident.body.profile_id as string;
    expect((await post(`${svc.url}/api/lead/capture`, { site_id: site, visitor_id: 'e-v', email, phone, name: 'Erin Erase' })).status).toBe(201);
    expect((await post(`${svc.url}/api/events`, { site_id: site, session_id: 'e-1', visitor_id: 'e-v', type: 'pageview', note: email })).status).toBe(201);
    // Someone else stays: their rows share the pages the erased rows were on.
    expect((await post(`${svc.url}/api/identify`, { site_id: site, session_id: 'k-1', traits: { email: 'keep.me@example.com' } })).status).toBe(200);
    if (PG_BASE_URL === undefined) expect(occurrences(dataDir, email)).toBeGreaterThan(0);

    const admin = await mcp.connect(mintToken(dataDir, site));
    const gone = await callOk(admin, 'profiles_erase', { by: 'profile_id', value: profileId });
    expect(gone.removed).toMatchObject({ profiles: 1, leads: 1 });

    if (PG_BASE_URL === undefined) {
      expect(occurrences(dataDir, email)).toBe(0);
      expect(occurrences(dataDir, phone)).toBe(0);
      expect(occurrences(dataDir, 'Erin Erase')).toBe(0);
      expect(occurrences(dataDir, 'keep.me@example.com')).toBeGreaterThan(0);
    } else {
      const schema = schemaFor(dataDir);
      // A partitioned table (events, outbox: PostgreSQL migration 15) has no storage of its own: VACUUM of it
      // vacuums its partitions, and counts here under the table's name.
      const vacuumed = () =>
        pgSync<{ relname: string }>(
          PG_BASE_URL!,
          `SELECT DISTINCT coalesce(p.relname, s.relname) AS relname FROM pg_stat_user_tables s
             LEFT JOIN pg_inherits i ON i.inhrelid = s.relid LEFT JOIN pg_class p ON p.oid = i.inhparent
            WHERE s.schemaname = $1 AND s.last_vacuum IS NOT NULL`,
          [schema],
        ).map((r) => r.relname);
      for (let i = 0; i < 100 && !['profiles', 'identities', 'leads', 'events'].every((t) => vacuumed().includes(t)); i++) {
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(vacuumed()).toEqual(expect.arrayContaining(['profiles', 'identities', 'leads', 'events', 'sessions', 'outbox']));
    }
  });
});

import { copyFileSync, existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cleanup, cli, cliAsync, cliJson, createSite, post, startSvc, tempDir } from '../helpers/svc.js';
import { PG_BASE_URL } from '../helpers/backend.js';
import { query } from '../helpers/db.js';
import { takeRestoreLock } from '../../src/store/serve-lock.js';
import { MIGRATIONS } from '../../src/store/migrations.js';

const LATEST = MIGRATIONS[MIGRATIONS.length - 1]!.version;

/** Events sent by `workers` loops until stopped (bounded in count); each acknowledged seq with the time of its acknowledgement. */
function load(url: string, site: string, workers: number, max: number) {
  const acked = new Map<number, number>();
  let running = true;
  let seq = 0;
  const loops = Array.from({ length: workers }, async () => {
    while (running && seq < max) {
      const n = seq++;
      const r = await post(`${url}/api/events`, { site_id: site, session_id: `b-${n % 40}`, type: 'pageview', seq: n });
      if (r.status !== 201) throw new Error(`event ${n}: ${r.status} ${JSON.stringify(r.body)}`);
      acked.set(n, Date.now());
    }
  });
  return {
    acked,
    stop: async () => {
      running = false;
      await Promise.all(loops);
    },
  };
}

describe.skipIf(PG_BASE_URL !== undefined)('svc backup and svc restore (embedded store)', () => {
  it('backs up under load, restores into a fresh directory, and finds every row acknowledged before the backup', async () => {
    const dir = tempDir();
    const site = createSite(dir);
    const svc = await startSvc({ dataDir: dir });
    const file = path.join(tempDir('svc-backup-'), 'svc.backup');
    const l = load(svc.url, site, 8, 20_000);
    const deadline = Date.now() + 30_000;
    while (l.acked.size < 300 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(l.acked.size).toBeGreaterThanOrEqual(300);
    const backupStarted = Date.now();
    const b = await cliAsync(['backup', '--to', file, '--data', dir, '--json']);
    const ackedDuring = l.acked.size;
    await l.stop();
    await svc.stop();
    expect(b.code, b.stderr).toBe(0);
    const view = JSON.parse(b.stdout) as { file: string; bytes: number; schema_version: number };
    expect(view).toMatchObject({ file, schema_version: LATEST });
    expect(view.bytes).toBe(statSync(file).size);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(b.stderr).toMatch(/keep the secret key/);
    // Nothing beside the backup: no partial or WAL files.
    expect(readdirSync(path.dirname(file))).toEqual(['svc.backup']);
    // The load kept going while the backup ran.
    expect(l.acked.size).toBeGreaterThan(ackedDuring - 1);

    const fresh = tempDir();
    const r = cliJson<{ schema_version: number; migrated_to: number; replaced_kept_at: string | null; secret_key: string }>([
      'restore',
      '--from',
      file,
      '--data',
      fresh,
    ]);
    expect(r).toMatchObject({ schema_version: LATEST, migrated_to: LATEST, replaced_kept_at: null, secret_key: 'no_secrets' });
    expect(statSync(path.join(fresh, 'svc.db')).mode & 0o777).toBe(0o600);
    const restored = new Set(query<{ seq: number }>(fresh, "SELECT json_extract(body, '$.seq') AS seq FROM events").map((x) => x.seq));
    const before = [...l.acked].filter(([, at]) => at < backupStarted).map(([n]) => n);
    expect(before.length).toBeGreaterThanOrEqual(300);
    for (const n of before) expect(restored.has(n), `acknowledged event ${n}`).toBe(true);
    // A point in time: every restored event was acknowledged (or in flight) by then, none invented.
    for (const n of restored) expect(n).toBeLessThan(20_000);
    // The restored store serves.
    const again = await startSvc({ dataDir: fresh });
    expect((await post(`${again.url}/api/events`, { site_id: site, session_id: 'after', type: 'pageview' })).status).toBe(201);
    expect(cliJson<{ events: number }>(['stats', '--site', site, '--data', fresh]).events).toBe(restored.size + 1);
    await again.stop();
    cleanup(dir);
    cleanup(fresh);
  });

  it('refuses to restore while svc serve holds the store, and a server does not start while a restore runs', async () => {
    const dir = tempDir();
    const site = createSite(dir);
    const file = path.join(tempDir('svc-backup-'), 'b.db');
    expect(cli(['backup', '--to', file, '--data', dir]).code).toBe(0);
    // No overwrite by accident.
    const twice = cli(['backup', '--to', file, '--data', dir]);
    expect(twice.code).toBe(1);
    expect(twice.stderr).toMatch(/exists; --force replaces it/);
    expect(cli(['backup', '--to', file, '--data', dir, '--force']).code).toBe(0);

    const svc = await startSvc({ dataDir: dir });
    const refused = cli(['restore', '--from', file, '--data', dir, '--force']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/an svc serve holds .* stop it first/);
    expect((await post(`${svc.url}/api/events`, { site_id: site, session_id: 's', type: 'pageview' })).status).toBe(201);
    await svc.stop();

    // A store is there: --force is needed, and the replaced store is kept.
    const noForce = cli(['restore', '--from', file, '--data', dir]);
    expect(noForce.code).toBe(1);
    expect(noForce.stderr).toMatch(/already holds a store; --force replaces it/);
    const done = cliJson<{ replaced_kept_at: string }>(['restore', '--from', file, '--data', dir, '--force']);
    expect(existsSync(done.replaced_kept_at)).toBe(true);
    // The event sent after the backup is in the kept store, not in the restored one.
    expect(cliJson<{ events: number }>(['stats', '--site', site, '--data', dir]).events).toBe(0);

    const lock = takeRestoreLock(dir);
    expect(lock).not.toBeNull();
    try {
      const r = cli(['serve', '--port', '0', '--data', dir]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/a restore is running in/);
    } finally {
      lock!.release();
    }
    cleanup(dir);
  });

  it('says when the secret key of the data directory cannot open the backup secrets', () => {
    const dir = tempDir();
    const site = createSite(dir);
    expect(
      cli(['webhooks', 'add', '--site', site, '--url', 'http://127.0.0.1:9/x', '--allow-private-destinations', '--secret', 'whsec-backup-test', '--events', 'all', '--data', dir]).code,
    ).toBe(0);
    const file = path.join(tempDir('svc-backup-'), 'b.db');
    expect(cli(['backup', '--to', file, '--data', dir]).code).toBe(0);
    const fresh = tempDir();
    const r = cli(['restore', '--from', file, '--data', fresh, '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).secret_key).toBe('missing');
    expect(r.stderr).toMatch(/no secret key: put the secret.key of the backed-up installation here/);
    copyFileSync(path.join(dir, 'secret.key'), path.join(fresh, 'secret.key'));
    const again = cliJson<{ secret_key: string }>(['restore', '--from', file, '--data', fresh, '--force']);
    expect(again.secret_key).toBe('opens_secrets');
    const other = tempDir();
    createSite(other, 'Other'); // makes a store and a key of its own
    const wrong = cli(['restore', '--from', file, '--data', other, '--force', '--json']);
    expect(JSON.parse(wrong.stdout).secret_key).toBe('does_not_open');
    for (const d of [dir, fresh, other]) cleanup(d);
  });

  it('refuses what is not a backup with a usage error', () => {
    const dir = tempDir();
    const junk = path.join(dir, 'junk.db');
    copyFileSync(new URL('../../package.json', import.meta.url), junk);
    const r = cli(['restore', '--from', junk, '--data', tempDir()]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/not a SQLite database|cannot be opened/);
    const missing = cli(['restore', '--from', path.join(dir, 'nope.db'), '--data', tempDir()]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no backup file/);
    cleanup(dir);
  });
});

describe('svc backup and svc restore on PostgreSQL', () => {
  it('are usage errors that point to pg_dump and pg_restore', () => {
    const url = 'postgres://svc@127.0.0.1:5432/svc';
    const b = cli(['backup', '--to', path.join(tempDir(), 'x'), '--database-url', url]);
    expect(b.code).toBe(2);
    expect(b.stderr).toMatch(/svc backup is for the embedded SQLite store; on PostgreSQL use pg_dump/);
    const r = cli(['restore', '--from', path.join(tempDir(), 'x'), '--database-url', url]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/on PostgreSQL use pg_restore/);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { cleanup, cli, createSite, post, startSvc, tempDir } from '../helpers/svc.js';
import { PG_BASE_URL } from '../helpers/backend.js';

/** Every entry under `dir`, relative, with its permission bits. */
function modes(dir: string, rel = ''): [string, number][] {
  const out: [string, number][] = [[rel || '.', statSync(path.join(dir, rel)).mode & 0o777]];
  for (const name of readdirSync(path.join(dir, rel))) {
    const p = path.join(rel, name);
    if (statSync(path.join(dir, p)).isDirectory()) out.push(...modes(dir, p));
    else out.push([p, statSync(path.join(dir, p)).mode & 0o777]);
  }
  return out;
}

describe('file modes of the data directory under umask 022', () => {
  let parent: string;
  let oldUmask: number;
  beforeAll(() => {
    oldUmask = process.umask(0o022); // inherited by every svc process below
    parent = tempDir();
  });
  afterAll(() => {
    process.umask(oldUmask);
    cleanup(parent);
  });

  it('keeps the directory 0700 and every file in it 0600, the store, its WAL, the key, the lock and a backup included', async () => {
    const dataDir = path.join(parent, 'data'); // created by svc, not by the test
    try {
      const site = createSite(dataDir);
      const svc = await startSvc({ dataDir, args: ['--allow-private-destinations'] });
      try {
        expect((await post(`${svc.url}/api/identify`, { site_id: site, session_id: 'm-1', traits: { email: 'modes@example.com' } })).status).toBe(200);
        const add = cli(['webhooks', 'add', '--site', site, '--url', 'http://127.0.0.1:9/h', '--events', 'pageview', '--secret', 'modes-secret-1234567890', '--data', dataDir, '--allow-private-destinations', '--json']);
        expect(add.code, add.stderr).toBe(0);
        if (PG_BASE_URL === undefined) {
          const b = cli(['backup', '--to', path.join(dataDir, 'backup.db'), '--data', dataDir]);
          expect(b.code, b.stderr).toBe(0);
        }
        const running = new Map(modes(dataDir));
        const expected = PG_BASE_URL === undefined ? ['svc.db', 'svc.db-wal', 'svc.db-shm', 'svc.lock', 'secret.key', 'backup.db'] : ['secret.key'];
        for (const f of expected) expect(running.get(f), f).toBe(0o600);
        expect([...running.keys()].some((f) => f.startsWith('holders/'))).toBe(true);
        for (const [f, mode] of running) expect(mode, f).toBe(statSync(path.join(dataDir, f)).isDirectory() ? 0o700 : 0o600);
      } finally {
        expect(await svc.stop()).toBe(0);
      }
      for (const [f, mode] of modes(dataDir)) expect(mode, f).toBe(statSync(path.join(dataDir, f)).isDirectory() ? 0o700 : 0o600);
    } finally {
      cleanup(dataDir);
    }
  });
});

import { afterAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { cleanup, cli, tempDir } from '../helpers/svc.js';
import { PG_BASE_URL } from '../helpers/backend.js';

describe.skipIf(PG_BASE_URL !== undefined)('commands on a data directory that does not exist', () => {
  const parent = tempDir();
  const missing = path.join(parent, 'nothing-here');
  afterAll(() => cleanup(parent));

  it.each([
    [['stats']],
    [['site', 'list']],
    [['key', 'list', '--site', 'site_x']],
    [['token', 'list']],
    [['webhooks', 'list']],
    [['segment', 'list', '--site', 'site_x']],
    [['user', 'list', '--site', 'site_x']],
    [['recommend', '--site', 'site_x', '--sku', 'A']],
    [['key', 'mint', '--site', 'site_x', '--scopes', 'profile:read']],
  ])('svc %j says there is none, exits 1 and creates nothing', (args) => {
    const r = cli([...args, '--data', missing]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain(`there is no svc data directory at ${missing}`);
    expect(existsSync(missing)).toBe(false);
  });

  it('svc site create makes it', () => {
    const r = cli(['site', 'create', '--name', 'First', '--data', missing, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(existsSync(path.join(missing, 'svc.db'))).toBe(true);
    expect(cli(['site', 'list', '--data', missing]).code).toBe(0);
  });
});

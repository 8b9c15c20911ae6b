import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, cli, createSite, startSvc, tempDir, type Svc } from '../helpers/svc.js';
import { call, callOk, McpClients, mintToken, errorOf } from '../helpers/mcp-client.js';
import { query } from '../helpers/db.js';

describe('site currency is an ISO 4217 code', () => {
  let dataDir: string;
  let site: string;
  let svc: Svc;
  const mcp = new McpClients(() => svc.url);
  const currency = () => query<{ currency: string }>(dataDir, 'SELECT currency FROM sites WHERE id = ?', site)[0]!.currency;

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

  it('svc site create and update refuse three letters that are no currency, naming the flag', () => {
    for (const code of ['NAN', 'ABC', 'XXX']) {
      const c = cli(['site', 'create', '--name', 'X', '--currency', code, '--data', dataDir]);
      expect(c.code, code).toBe(2);
      expect(c.stderr).toMatch(/--currency: .* ISO 4217/);
      const u = cli(['site', 'update', site, '--currency', code, '--data', dataDir]);
      expect(u.code, code).toBe(2);
    }
    expect(currency()).toBe('USD');
    expect(cli(['site', 'update', site, '--currency', 'CHF', '--data', dataDir]).code).toBe(0);
    expect(currency()).toBe('CHF');
  });

  it('sites_settings_update refuses "NaN" naming currency and stores nothing; takes eur as EUR', async () => {
    const admin = await mcp.connect(mintToken(dataDir, site));
    const before = currency();
    const r = await call(admin, 'sites_settings_update', { currency: 'NaN' });
    expect(r.isError).toBe(true);
    expect(errorOf(r)).toMatchObject({ code: 'validation_failed', details: { field: 'currency' } });
    expect(currency()).toBe(before);
    expect((await callOk(admin, 'sites_settings_update', { currency: 'eur' })).currency).toBe('EUR');
    expect(currency()).toBe('EUR');
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, createSite, post, startSvc, stats, tempDir, type Svc } from '../helpers/svc.js';
import { databaseUrlFor, PG_BASE_URL } from '../helpers/backend.js';
import { relay } from '../helpers/relay.js';

describe.skipIf(PG_BASE_URL === undefined)('a database that goes away', () => {
  let dataDir: string;
  let site: string;
  let svc: Svc;
  let db: Awaited<ReturnType<typeof relay>>;

  beforeAll(async () => {
    dataDir = tempDir();
    site = createSite(dataDir);
    const direct = new URL(databaseUrlFor(dataDir));
    db = await relay({ host: direct.hostname, port: Number(direct.port || 5432) });
    const viaRelay = new URL(direct);
    viaRelay.host = `127.0.0.1:${db.port}`;
    svc = await startSvc({ dataDir, env: { SVC_DATABASE_URL: viaRelay.toString(), SVC_LOG_LEVEL: 'error' } });
  });

  afterAll(async () => {
    await svc?.stop();
    await db?.close();
    cleanup(dataDir);
  });

  it('answers 503 with Retry-After while it is gone, acknowledges nothing unstored, and recovers by itself', async () => {
    const send = (n: number) => post(`${svc.url}/api/events`, { site_id: site, session_id: `o-${n}`, type: 'pageview', n });
    let acked = 0;
    for (let i = 0; i < 5; i++) {
      expect((await send(i)).status).toBe(201);
      acked++;
    }
    await db.down();
    for (let i = 5; i < 10; i++) {
      const r = await send(i).catch((err: unknown) => {
        throw new Error(`${(err as Error).message}; svc stderr: ${svc.stderr()}`);
      });
      expect(r.status).toBe(503);
      expect(r.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(r.body.error.code).toBe('service_unavailable');
    }
    await db.up();
    // The pool reconnects on demand: the first requests after the return may still fail, then all pass.
    const deadline = Date.now() + 15_000;
    let back = false;
    for (let i = 10; Date.now() < deadline; i++) {
      const r = await send(i);
      if (r.status === 201) {
        acked++;
        back = true;
        break;
      }
      expect(r.status).toBe(503);
      await new Promise((res) => setTimeout(res, 200));
    }
    expect(back).toBe(true);
    for (let i = 100; i < 105; i++) {
      expect((await send(i)).status).toBe(201);
      acked++;
    }
    expect(stats(dataDir, site).events).toBe(acked);
    expect(svc.proc.exitCode).toBeNull();
  });
});

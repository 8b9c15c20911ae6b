import { renameSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanup, createSite, post, startSvc, tempDir, type Svc } from '../helpers/svc.js';
import { databaseUrlFor, PG_BASE_URL } from '../helpers/backend.js';
import { relay } from '../helpers/relay.js';

async function get(url: string): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await fetch(url);
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
}

/** Polls until `probe` is true (no fixed sleep before an assertion). */
async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const started: { svc: Svc; dir: string; close?: () => Promise<void> }[] = [];
afterAll(async () => {
  for (const s of started) {
    await s.svc.stop();
    await s.close?.();
    cleanup(s.dir);
  }
});

describe('GET /healthz and GET /readyz', () => {
  it('answers ready with every check, without credentials, for GET and HEAD only', async () => {
    const dir = tempDir();
    const svc = await startSvc({ dataDir: dir });
    started.push({ svc, dir });
    const r = await get(`${svc.url}/readyz`);
    expect(r.status).toBe(200);
    expect(r.headers.get('cache-control')).toBe('no-store');
    expect(r.body).toMatchObject({
      ready: true,
      failed: [],
      checks: { shutdown: { ok: true }, store: { ok: true }, migrations: { ok: true }, writer: { ok: true } },
    });
    // A just-started server may have a background write (lease, schedulers) in its group commit at that moment:
    // the check reports it, it does not make the server unready.
    expect(Number.isInteger(r.body.checks.writer.pending) && r.body.checks.writer.pending >= 0).toBe(true);
    expect(Number.isInteger(r.body.checks.writer.stalled_ms) && r.body.checks.writer.stalled_ms >= 0).toBe(true);
    expect(r.body.checks.migrations.version).toBe(r.body.checks.migrations.expected);
    expect((await fetch(`${svc.url}/readyz`, { method: 'HEAD' })).status).toBe(200);
    const post405 = await post(`${svc.url}/readyz`, {});
    expect(post405.status).toBe(405);
    expect(post405.body.error.code).toBe('method_not_allowed');
    expect((await get(`${svc.url}/healthz`)).body).toMatchObject({ ok: true });
  });

  it('turns 503 naming the store when the store goes away while /healthz stays 200, and 200 again when it is back', async () => {
    const dir = tempDir();
    const site = createSite(dir);
    let svc: Svc;
    let goAway: () => Promise<void>;
    let comeBack: () => Promise<void>;
    let closeRelay: (() => Promise<void>) | undefined;
    if (PG_BASE_URL !== undefined) {
      // PostgreSQL: the server reaches the database through a relay the test cuts.
      const direct = new URL(databaseUrlFor(dir));
      const db = await relay({ host: direct.hostname, port: Number(direct.port || 5432) });
      const viaRelay = new URL(direct);
      viaRelay.host = `127.0.0.1:${db.port}`;
      svc = await startSvc({ dataDir: dir, env: { SVC_DATABASE_URL: viaRelay.toString(), SVC_READY_TIMEOUT_MS: '1000' } });
      goAway = () => db.down();
      comeBack = () => db.up();
      closeRelay = () => db.close();
    } else {
      // SQLite: the data directory is moved away under the running server (a volume unmounted, a directory removed).
      svc = await startSvc({ dataDir: dir });
      goAway = async () => renameSync(dir, `${dir}-away`);
      comeBack = async () => renameSync(`${dir}-away`, dir);
    }
    started.push({ svc, dir, ...(closeRelay ? { close: closeRelay } : {}) });
    expect((await post(`${svc.url}/api/events`, { site_id: site, session_id: 's', type: 'pageview' })).status).toBe(201);
    expect((await get(`${svc.url}/readyz`)).status).toBe(200);

    await goAway();
    let down: Awaited<ReturnType<typeof get>> | undefined;
    await until('/readyz 503', async () => {
      down = await get(`${svc.url}/readyz`);
      return down.status === 503;
    });
    expect(down!.body.ready).toBe(false);
    expect(down!.body.failed).toContain('store');
    expect(down!.body.checks.store.ok).toBe(false);
    expect(typeof down!.body.checks.store.reason).toBe('string');
    // Nothing secret in the body: no database URL, no data directory path.
    expect(JSON.stringify(down!.body)).not.toMatch(/postgres:|svct_|\/tmp\//);
    const health = await get(`${svc.url}/healthz`);
    expect(health.status).toBe(200);

    await comeBack();
    await until('/readyz 200 again', async () => (await get(`${svc.url}/readyz`)).status === 200);
    expect((await post(`${svc.url}/api/events`, { site_id: site, session_id: 's', type: 'pageview' })).status).toBe(201);
  });

  it('on SIGTERM turns /readyz 503 first and keeps serving through the drain delay, then exits 0', async () => {
    const dir = tempDir();
    const site = createSite(dir);
    // A long drain: the test ends it with a second SIGTERM once it has seen what it must.
    const svc = await startSvc({ dataDir: dir, env: { SVC_SHUTDOWN_DRAIN_MS: '60000' } });
    expect((await get(`${svc.url}/readyz`)).status).toBe(200);
    const exited = new Promise<number | null>((resolve) => svc.proc.once('exit', resolve));
    svc.proc.kill('SIGTERM');
    let ready: Awaited<ReturnType<typeof get>> | undefined;
    await until('/readyz 503 after SIGTERM', async () => {
      ready = await get(`${svc.url}/readyz`);
      return ready.status === 503;
    });
    expect(ready!.body).toMatchObject({ ready: false, failed: ['shutdown'], checks: { shutdown: { ok: false, reason: 'shutting down' } } });
    // Still serving during the drain, and asking keep-alive clients to go elsewhere.
    const during = await post(`${svc.url}/api/events`, { site_id: site, session_id: 'drain', type: 'pageview' });
    expect(during.status).toBe(201);
    expect(during.headers.get('connection')).toBe('close');
    expect(svc.proc.exitCode).toBeNull();
    svc.proc.kill('SIGTERM');
    expect(await exited).toBe(0);
    cleanup(dir);
  });
});

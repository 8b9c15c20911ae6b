import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { cleanup, cli, createSite, post, ROOT, startSvc, tempDir, type Svc } from '../helpers/svc.js';
import { startReceiver } from '../helpers/receiver.js';
import { query } from '../helpers/db.js';

/**
 * A restart right after SIGKILL (a supervisor or a container restart policy)
 * must not wait out the killed process's leases: with a lease of ten minutes,
 * deliveries resume only if the new process recognises the dead holder.
 */
describe('lease takeover after SIGKILL and an immediate restart', () => {
  let dataDir: string;
  let site: string;
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  const started: Svc[] = [];
  const ENV = { SVC_LANE_LEASE_MS: '600000', SVC_WEBHOOK_POLL_MS: '50', SVC_RATE_LIMIT: 'off' };
  const holderOf = (hook: string) => query<{ holder: string }>(dataDir, 'SELECT holder FROM lane_leases WHERE lane = ?', `webhook:${hook}`)[0]?.holder;
  const delivered = () => rx.received.filter((r) => r.path === '/hook').length;
  const waitFor = async (cond: () => boolean) => {
    for (let i = 0; i < 1500 && !cond(); i++) await new Promise((r) => setTimeout(r, 20));
    return cond();
  };

  beforeAll(async () => {
    dataDir = tempDir();
    site = createSite(dataDir);
    rx = await startReceiver();
  });
  afterAll(async () => {
    for (const s of started) await s.stop();
    await rx.close();
    cleanup(dataDir);
  });

  it('the restarted process takes the killed one’s lanes at once, even while the killed one is an unreaped zombie', async () => {
    const add = cli(['webhooks', 'add', '--site', site, '--url', `${rx.url}/hook`, '--events', 'pageview', '--data', dataDir, '--allow-private-destinations', '--json']);
    expect(add.code, add.stderr).toBe(0);
    const hook = (JSON.parse(add.stdout) as { id: string }).id;

    const first = await startSvc({ dataDir, env: ENV, args: ['--allow-private-destinations'], unreaped: true });
    started.push(first);
    expect((await post(`${first.url}/api/events`, { site_id: site, session_id: 'l-1', type: 'pageview' })).status).toBe(201);
    expect(await waitFor(() => delivered() === 1)).toBe(true);
    expect(holderOf(hook)).toBe(first.instance);

    await first.kill(); // a zombie now: kill(pid, 0) still finds it
    const second = await startSvc({ dataDir, env: ENV, args: ['--allow-private-destinations'] });
    started.push(second);
    expect(second.instance).not.toBe(first.instance);
    for (let i = 0; i < 5; i++) {
      expect((await post(`${second.url}/api/events`, { site_id: site, session_id: `l-2-${i}`, type: 'pageview' })).status).toBe(201);
    }
    // Far inside the ten-minute lease: the new process holds the lane and sent all five.
    expect(await waitFor(() => delivered() === 6)).toBe(true);
    expect(holderOf(hook)).toBe(second.instance);
    expect(second.stderr()).not.toMatch(/could not look for leases/);
    // The killed process's holder file is gone; the running one's remains.
    expect(readdirSync(path.join(dataDir, 'holders')).filter((f) => f.endsWith('.lock'))).toHaveLength(1);
  });
});

describe('holder files of a data directory', () => {
  it('name a killed holder whatever host or PID namespace its id says, and never a live one', async () => {
    const { claimHolder } = await import('../../src/workers/holder-lock.js');
    const dir = tempDir();
    try {
      // A process of "another container": its id names a host and namespace this one cannot see into.
      const script = `import('${path.join(ROOT, 'dist/workers/holder-lock.js')}').then((m) => { m.claimHolder(process.argv[1], process.argv[2]); process.kill(process.pid, 'SIGKILL'); })`;
      const r = spawnSync(process.execPath, ['-e', script, dir, 'inst_gone@elsewhere#pid:[1]:7'], { timeout: 30_000 });
      expect(r.signal).toBe('SIGKILL');
      const live = claimHolder(dir, 'inst_live@here#pid:[2]:8');
      expect(live.dead).toEqual(['inst_gone@elsewhere#pid:[1]:7']);
      // A second claim while the first is held does not name the live holder.
      const other = claimHolder(dir, 'inst_other@here#pid:[2]:9');
      expect(other.dead).toEqual([]);
      other.release();
      live.release();
      expect(readdirSync(path.join(dir, 'holders'))).toEqual([]);
    } finally {
      cleanup(dir);
    }
  });
});

import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/store.js';
import { INSTANCE_ID, LaneLease, isDeadLocalHolder, releaseDeadLocalLeases } from '../../src/store/lane-lease.js';
import { cleanup, tempDir } from '../helpers/svc.js';
import { openTestStore } from '../helpers/store.js';

/** Lane leases of processes that died on this host, on whichever store the project runs (SQLite, PostgreSQL). */
let store: Store;
let dir: string;

beforeAll(async () => {
  dir = tempDir();
  store = await openTestStore(dir);
});

afterAll(async () => {
  await store.close();
  cleanup(dir);
});

/** A holder id as another process of this host would write it. */
const holderFor = (pid: number) => `${INSTANCE_ID.slice(0, INSTANCE_ID.lastIndexOf(':'))}:${pid}`;

/** The pid of a process that has exited (and been reaped). */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
  const pid = child.pid!;
  await new Promise((r) => child.on('exit', r));
  return pid;
}

describe('leases of dead local holders', () => {
  it('tells a gone process of this host from a live one, another host, this process and other id forms', async () => {
    const live = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    try {
      expect(INSTANCE_ID).toMatch(/^inst_[0-9a-z]+@.+:\d+$/);
      expect(isDeadLocalHolder(holderFor(await deadPid()))).toBe(true);
      expect(isDeadLocalHolder(holderFor(live.pid!))).toBe(false);
      expect(isDeadLocalHolder(INSTANCE_ID)).toBe(false);
      expect(isDeadLocalHolder(holderFor(await deadPid()).replace('@', '@other-host-'))).toBe(false);
      expect(isDeadLocalHolder('inst_00mbx2k1a3f9c2d4e5f6a7b8')).toBe(false);
      expect(isDeadLocalHolder(`${holderFor(1).slice(0, -2)}:abc`)).toBe(false);
    } finally {
      live.kill();
    }
  });

  it('frees only the lanes of gone local holders, so a restarted server takes them at once', async () => {
    const gone = holderFor(await deadPid());
    const live = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    try {
      const alive = holderFor(live.pid!);
      const remote = gone.replace('@', '@elsewhere-');
      await store.write(async (tx) => {
        expect(await tx.leases.acquire('webhook:dst_gone', gone, 600_000)).not.toBeNull();
        expect(await tx.leases.acquire('instance:gone', gone, 600_000)).not.toBeNull();
        expect(await tx.leases.acquire('webhook:dst_alive', alive, 600_000)).not.toBeNull();
        expect(await tx.leases.acquire('webhook:dst_remote', remote, 600_000)).not.toBeNull();
      });
      // Held for ten minutes: nobody else can take them yet.
      expect(await store.write((tx) => tx.leases.acquire('webhook:dst_gone', INSTANCE_ID, 1000))).toBeNull();

      expect((await releaseDeadLocalLeases(store)).sort()).toEqual(['instance:gone', 'webhook:dst_gone']);
      expect(await store.leases.all()).toEqual([
        { lane: 'webhook:dst_alive', holder: alive },
        { lane: 'webhook:dst_remote', holder: remote },
      ]);
      expect(await store.write((tx) => tx.leases.acquire('webhook:dst_gone', INSTANCE_ID, 1000))).not.toBeNull();
      expect(await store.write((tx) => tx.leases.acquire('webhook:dst_alive', INSTANCE_ID, 1000))).toBeNull();
      expect(await releaseDeadLocalLeases(store)).toEqual([]);
    } finally {
      live.kill();
    }
  });
});

describe('lane lease renewal', () => {
  it('renews a lease that is still usable in the background: work may start at once, and the lease is extended', async () => {
    // Renewed once less than 4.5 s are left (at once), usable while at least 2.5 s are.
    const lease = new LaneLease(store, 'webhook:dst_renew', { ttlMs: 4_500, workMs: 500 });
    const taking = lease.ensure();
    expect(taking).toBeInstanceOf(Promise); // not held yet: the caller waits for the lease
    expect(await taking).toBe(true);
    await new Promise((r) => setTimeout(r, 50));
    const before = lease.remaining();
    expect(lease.ensure()).toBe(true); // held and usable: answered at once while the renewal runs
    const deadline = Date.now() + 10_000;
    while (lease.remaining() <= before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(lease.remaining()).toBeGreaterThan(before);
    expect(await store.leases.holder('webhook:dst_renew')).toBe(INSTANCE_ID);
    // A release while a renewal is under way waits for it, so the renewal cannot hold the lane again afterwards.
    expect(lease.ensure()).toBe(true);
    await lease.release();
    expect(lease.held()).toBe(false);
    expect(await store.leases.holder('webhook:dst_renew')).toBeNull();
  });
});

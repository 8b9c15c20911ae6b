import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver } from '../helpers/receiver.js';
import { cleanup, cliEnv, cliInProcess, cliInProcessAsync, cliJson, cliSpawned, cliSpawnedAsync, createSite, post, startSvc, tempDir } from '../helpers/svc.js';

/**
 * The test helpers run store set-up commands in-process (cliInProcess, test/helpers/cli-worker.mjs) instead of
 * spawning bin/svc.js: the same command line gives the same exit code, stdout and stderr both ways, including
 * usage errors, failures, warnings on stderr and a failure after another command of the same thread. The commands
 * of cliAsync (cliInProcessAsync) likewise, including those that talk to a receiver of the test's own event loop.
 */
describe('svc commands in-process and spawned', () => {
  let dataDir: string;
  let site: string;

  beforeAll(() => {
    dataDir = tempDir();
    site = createSite(dataDir);
  });

  afterAll(() => cleanup(dataDir));

  const both = (args: string[]) => {
    const env = cliEnv(args);
    return { spawned: cliSpawned(args, env), inProcess: cliInProcess(args, env) };
  };

  it.each([
    ['a read (stats --json)', (s: string, d: string) => ['stats', '--site', s, '--data', d, '--json'], 0],
    ['a read (human table)', (s: string, d: string) => ['site', 'list', '--data', d], 0],
    ['a usage error', (s: string, d: string) => ['token', 'mint', '--site', s, '--scope', 'root', '--data', d], 2],
    ['an unknown site', (_s: string, d: string) => ['stats', '--site', 'site_nope', '--data', d, '--json'], 1],
    ['an unknown option', (s: string, d: string) => ['stats', '--site', s, '--nope', '--data', d], 2],
    ['a missing data directory', (s: string) => ['stats', '--site', s, '--data', '/nonexistent/svc-in-process'], 1],
  ])('%s: same exit code, stdout and stderr', (_what, argsOf, code) => {
    const { spawned, inProcess } = both(argsOf(site, dataDir));
    expect(spawned.code).toBe(code);
    expect(inProcess).toEqual(spawned);
  });

  it('a write: same output apart from the new id, and the warning on stderr', () => {
    const args = ['webhooks', 'add', '--site', site, '--url', 'http://127.0.0.1:9/h', '--events', 'pageview', '--allow-private-destinations', '--data', dataDir];
    const { spawned, inProcess } = both(args);
    expect(spawned.code).toBe(0);
    expect(inProcess.code).toBe(0);
    expect(spawned.stderr).toMatch(/^svc: warning: no --secret set/);
    expect(inProcess.stderr).toBe(spawned.stderr);
    const id = /\bdst_\w+/;
    expect(inProcess.stdout.replace(id, 'ID')).toBe(spawned.stdout.replace(id, 'ID'));
    expect(inProcess.stdout.match(id)?.[0]).not.toBe(spawned.stdout.match(id)?.[0]);
    // A failure's exit code does not stick to the thread: the next command succeeds with 0.
    const failed = ['webhooks', 'remove', 'nope', '--data', dataDir];
    expect(cliInProcess(failed, cliEnv(failed)).code).not.toBe(0);
    const list = ['webhooks', 'list', '--site', site, '--data', dataDir, '--json'];
    expect(cliInProcess(list, cliEnv(list)).code).toBe(0);
  });
});

describe('cliAsync commands in-process and spawned', () => {
  const PRIVATE = '--allow-private-destinations';
  /**
   * Latencies differ from one run to the next (`… in 3 ms`, `… 12ms`), and so does the order of a bulk replay's
   * lines (deliveries in flight together print as they end): the lines are compared sorted.
   */
  const timing = (text: string) => text.replace(/\b\d+ ?ms\b/g, 'N ms').split('\n').sort().join('\n');
  let dataDir: string;
  let site: string;
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  let dest: string;

  beforeAll(async () => {
    dataDir = tempDir();
    site = createSite(dataDir);
    rx = await startReceiver((r) => (r.path === '/fail' ? { status: 503 } : { status: 200 }));
    dest = cliJson<{ id: string }>(['webhooks', 'add', '--site', site, '--url', `${rx.url}/ok`, '--events', 'click', '--secret', 'whsec_async_test', '--data', dataDir, PRIVATE]).id;
    // Two deliveries for the replays.
    const svc = await startSvc({ dataDir, args: [PRIVATE], env: { SVC_WEBHOOK_POLL_MS: '50' } });
    for (const session of ['a', 'b']) await post(`${svc.url}/api/events`, { site_id: site, session_id: session, type: 'click' });
    await rx.waitFor(2);
    await svc.stop();
  });

  afterAll(async () => {
    await rx.close();
    cleanup(dataDir);
  });

  const both = async (args: string[]) => {
    const env = cliEnv(args);
    const spawned = await cliSpawnedAsync(args, env);
    const inProcess = await cliInProcessAsync(args, env);
    return { spawned, inProcess };
  };

  it('webhooks test to a receiver of this process: same exit code and output, one signed request each', async () => {
    const before = rx.received.length;
    const { spawned, inProcess } = await both(['webhooks', 'test', dest, '--event', 'click', '--data', dataDir, PRIVATE]);
    expect(spawned).toMatchObject({ code: 0, stderr: '', stdout: expect.stringMatching(/^ok: receiver answered 200 in \d+ ms\n$/) });
    expect({ ...inProcess, stdout: timing(inProcess.stdout) }).toEqual({ ...spawned, stdout: timing(spawned.stdout) });
    expect(rx.received.slice(before).map((r) => [r.path, r.headers['x-svc-event']])).toEqual([
      ['/ok', 'click'],
      ['/ok', 'click'],
    ]);
  });

  it('a bulk replay, piped (a line a delivery), and a failed one: same exit codes and output', async () => {
    const args = ['webhooks', 'replay', '--destination', dest, '--data', dataDir, PRIVATE];
    const ok = await both(args);
    expect(ok.spawned).toMatchObject({ code: 0, stderr: '', stdout: expect.stringMatching(/ click ok 200 \d+ms\n(.*\n)*replayed 2: 2 ok, 0 failed\n$/) });
    expect({ ...ok.inProcess, stdout: timing(ok.inProcess.stdout) }).toEqual({ ...ok.spawned, stdout: timing(ok.spawned.stdout) });
    cli503(dest);
    const failed = await both(args);
    expect(failed.spawned.code).toBe(1);
    expect(failed.spawned.stdout).toMatch(/replayed 2: 0 ok, 2 failed\n$/);
    expect({ ...failed.inProcess, stdout: timing(failed.inProcess.stdout) }).toEqual({ ...failed.spawned, stdout: timing(failed.spawned.stdout) });
  });

  /** Points the destination at the receiver's failing path. */
  function cli503(id: string) {
    cliJson(['webhooks', 'update', id, '--url', `${rx.url}/fail`, '--data', dataDir, PRIVATE]);
  }

  it('commands asked at once run one at a time, each with its own output and exit code', async () => {
    const asked = [
      ['webhooks', 'replay', 'dlv_nosuch', '--data', dataDir],
      ['webhooks', 'list', '--site', site, '--data', dataDir, '--json'],
      ['webhooks', 'replay', '--destination', dest, '--since', '1', '--data', dataDir],
    ];
    const got = await Promise.all(asked.map((args) => cliInProcessAsync(args, cliEnv(args))));
    expect(got[0]).toEqual({ code: 1, stdout: '', stderr: 'svc: no delivery dlv_nosuch\n' });
    expect(got[1]!.code).toBe(0);
    expect((JSON.parse(got[1]!.stdout) as { id: string }[]).map((d) => d.id)).toEqual([dest]);
    expect(got[2]!.code).toBe(2);
    expect(got[2]!.stderr).toMatch(/^svc: --since: "1" is not an ISO 8601 date/);
  });
});

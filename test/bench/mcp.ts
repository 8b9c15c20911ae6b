/**
 * MCP tool server benchmark (never part of the pass/fail suite):
 *
 *   npm run bench:mcp [-- --seconds 8 --connections 16 --warmup 2 --max-requests 200000]
 *   npm run bench:mcp -- --cpu-prof DIR    (svc writes a V8 CPU profile into DIR when it stops)
 *
 * Starts the built svc (rate limits off) on a temporary data directory with
 * one site, 300 profiles, an admin token (its tools/list shows every tool)
 * and a read-only read token. The official MCP SDK v2 client connects once
 * through a recording fetch, lists the tools and calls profiles_get, whoami;
 * the exact HTTP requests it sent (headers and body) are then replayed over
 * keep-alive undici connections, one request in flight each, so the load
 * costs the generator almost nothing and every target gets the same bytes:
 *
 *   tools/list  svc                      against bare-bytes: a bare node:http
 *               server answering svc's own tools/list response bytes
 *   tools/call  svc profiles_get (a read: policy, validation, the profile
 *               snapshot and the audit row), svc whoami (policy, audit row)
 *               against bare-mcp: createMcpHandler of the SDK line svc uses
 *               (@modelcontextprotocol/server v2) behind node:http, one
 *               trivial tool, called with the same SDK client's request shape
 *
 * Targets run one after the other in the same run, each bounded by warm-up +
 * --seconds and by --max-requests. Prints req/s, p50/p99, server CPU and the
 * ratio to the baseline of the same scenario (targets: tools/list ≥ 0.5x
 * bare-bytes, a read tools/call ≥ 0.5x bare-mcp; issue 22).
 * Exit status: 0 whatever the figures; 1 when a server fails to start or a
 * response is not a success; 2 on bad flags.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { closedLoop } from './lib/closed-loop.js';
import { ChildRegistry, runCommand, spawnServer, stopChild, type SpawnedServer } from './lib/child.js';
import { type HistogramSummary } from './lib/histogram.js';
import { REPO_ROOT, removeTree } from './lib/targets.js';
import { UsageError, intFlag } from './lib/args.js';
import { TOOLS } from '../../src/mcp/tools/index.js';

const SVC_BIN = path.join(REPO_ROOT, 'bin', 'svc.js');
const REGISTER = path.join(REPO_ROOT, 'test', 'bench', 'register.mjs');
const BARE_BYTES = path.join(REPO_ROOT, 'test', 'bench', 'lib', 'bare-bytes-server.ts');
const BARE_MCP = path.join(REPO_ROOT, 'test', 'bench', 'lib', 'bare-mcp-server.ts');
const PROFILES = 300;

const HELP = `usage: npm run bench:mcp -- [options]
  --seconds N        measured window per target (default 8, max 300)
  --warmup N         warm-up before the window, seconds (default 2, max 60)
  --connections N    keep-alive connections, one request in flight each (default 16, max 256)
  --max-requests N   stop a target's run after N requests (default 200000)
  --cpu-prof DIR     run svc with --cpu-prof, writing its profile into DIR
  --only list|call   run only the tools/list or the tools/call scenario (a profile of one)
  --keep             keep the data directory
  -h, --help         this text`;

function parse(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    options: {
      seconds: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string' },
      'max-requests': { type: 'string' },
      'cpu-prof': { type: 'string' },
      only: { type: 'string' },
      keep: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  return {
    help: values.help,
    seconds: intFlag('seconds', values.seconds, 8, 1, 300),
    warmup: intFlag('warmup', values.warmup, 2, 0, 60),
    connections: intFlag('connections', values.connections, 16, 1, 256),
    maxRequests: intFlag('max-requests', values['max-requests'], 200_000, 1, 100_000_000),
    cpuProf: values['cpu-prof'],
    only: onlyFlag(values.only),
    keep: values.keep,
  };
}
type Opts = ReturnType<typeof parse>;

function onlyFlag(raw: string | undefined): 'list' | 'call' | null {
  if (raw === undefined) return null;
  if (raw !== 'list' && raw !== 'call') throw new UsageError(`--only takes list or call, got ${JSON.stringify(raw)}`);
  return raw;
}

/** One HTTP request as the SDK client sent it, replayed as is. */
interface Recorded {
  path: string;
  headers: Record<string, string>;
  body: string;
}

/** Sends `ops` through the real SDK client and returns the last request of each JSON-RPC method it sent (by `method`, or `method name` for tools/call). */
async function record(url: string, token: string | null, ops: (c: Client) => Promise<void>): Promise<Map<string, Recorded>> {
  const seen = new Map<string, Recorded>();
  const recordingFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const req = new Request(input, init);
    const body = req.method === 'POST' ? await req.clone().text() : '';
    if (body.startsWith('{')) {
      const msg = JSON.parse(body) as { method?: string; params?: { name?: string } };
      if (msg.method) {
        const headers: Record<string, string> = {};
        req.headers.forEach((v, k) => (headers[k] = v));
        const u = new URL(req.url);
        seen.set(msg.method === 'tools/call' ? `tools/call ${msg.params?.name}` : msg.method, { path: u.pathname + u.search, headers, body });
      }
    }
    return fetch(req);
  };
  const client = new Client({ name: 'svc-bench-mcp', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), { fetch: recordingFetch, ...(token ? { requestInit: { headers: { authorization: `Bearer ${token}` } } } : {}) }),
  );
  try {
    await ops(client);
  } finally {
    await client.close();
  }
  return seen;
}

interface LoadResult {
  seconds: number;
  requests: number;
  rps: number;
  latency: HistogramSummary;
  failures: number;
  firstProblem: string | null;
  serverCpuPercent: number | null;
}

/** Replays `req` on `connections` keep-alive connections; bounded by warm-up + seconds and by maxRequests. A 2xx whose body holds `"isError":true` or a JSON-RPC error counts as a failure. */
async function load(origin: string, req: Recorded, opts: Opts, pid: number | undefined): Promise<LoadResult> {
  const pool = new Pool(origin, { connections: opts.connections, pipelining: 1, keepAliveTimeout: 60_000 });
  const r = await closedLoop(
    { connections: opts.connections, warmupSeconds: opts.warmup, seconds: opts.seconds, maxRequests: opts.maxRequests, pid },
    async (i) => {
      const res = await pool.request({ method: 'POST', path: req.path, headers: req.headers, body: req.body });
      // Checking every 100th body keeps the generator cheap; the status is checked on every response.
      const text = i % 100 === 0 || res.statusCode !== 200 ? await res.body.text() : (await res.body.dump(), null);
      if (res.statusCode !== 200 || (text !== null && (text.includes('"isError":true') || text.includes('"error":{')))) {
        return `${res.statusCode} ${text ?? ''}`;
      }
      return null;
    },
  );
  await pool.close();
  return {
    seconds: r.seconds,
    requests: r.requests,
    rps: r.rps,
    latency: r.latency,
    failures: r.wrong + r.errors,
    firstProblem: r.firstProblem,
    serverCpuPercent: r.serverCpuPercent,
  };
}

function withoutAuth(r: Recorded): Recorded {
  const { authorization: _token, ...headers } = r.headers;
  return { ...r, path: '/api/mcp', headers };
}

async function main(): Promise<number> {
  let opts: Opts;
  try {
    opts = parse(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`bench:mcp: ${(err as Error).message}\n${HELP}\n`);
    return 2;
  }
  if (opts.help) {
    process.stdout.write(`${HELP}\n`);
    return 0;
  }
  const log = (line: string) => process.stdout.write(`${line}\n`);
  const registry = new ChildRegistry();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-bench-mcp-'));
  process.once('exit', () => {
    registry.killAll('SIGKILL');
    if (!opts.keep) removeTree(dir);
  });
  log(`bench:mcp  node ${process.version}, ${os.cpus().length} CPU(s) (${os.cpus()[0]?.model.trim() ?? '?'}), ${os.platform()} ${os.release()}`);
  log(`${opts.connections} connections, warm-up ${opts.warmup} s, window ${opts.seconds} s, max ${opts.maxRequests} requests per target`);
  const env: NodeJS.ProcessEnv = { ...process.env, SVC_RATE_LIMIT: 'off', SVC_LOG_LEVEL: 'error' };
  delete env.SVC_DATABASE_URL;
  const cli = async <T>(args: string[]): Promise<T> => {
    const r = await runCommand(registry, process.execPath, [SVC_BIN, ...args, '--data', dir, '--json'], { env, cwd: REPO_ROOT, timeoutMs: 60_000 });
    if (r.code !== 0) throw new Error(`svc ${args.join(' ')}: ${r.stderr}`);
    return JSON.parse(r.stdout) as T;
  };
  const site = (await cli<{ site_id: string }>(['site', 'create', '--name', 'bench'])).site_id;
  const admin = (await cli<{ token: string }>(['token', 'mint', '--site', site, '--scope', 'admin'])).token;
  const read = (await cli<{ token: string }>(['token', 'mint', '--site', site, '--scope', 'read', '--read-only'])).token;

  const rows: { scenario: string; name: string; r: LoadResult; baseline: string }[] = [];
  let failed = false;
  const servers: SpawnedServer[] = [];
  try {
    const svc = await spawnServer(registry, {
      name: 'svc',
      command: process.execPath,
      args: [...(opts.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProf}`] : []), SVC_BIN, 'serve', '--host', '127.0.0.1', '--port', '0', '--data', dir],
      env,
      cwd: REPO_ROOT,
      ready: /svc listening on (http:\/\/\S+)/,
    });
    servers.push(svc);
    for (let i = 0; i < PROFILES; i++) {
      const body = { site_id: site, session_id: `b-s${i}`, visitor_id: `b-v${i}`, traits: { external_id: `crm-${i}`, plan: i % 2 ? 'gold' : 'silver' } };
      const r = await fetch(`${svc.url}/api/identify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      if (!r.ok) throw new Error(`seeding failed: ${r.status}`);
    }
    const listed = await record(`${svc.url}/api/mcp`, admin, async (c) => {
      const n = (await c.listTools()).tools.length;
      if (n !== TOOLS.length) throw new Error(`svc listed ${n} tools to an admin token, the registry has ${TOOLS.length}`);
    });
    const called = await record(`${svc.url}/api/mcp`, read, async (c) => {
      for (const name of ['profiles_get', 'whoami']) {
        const r = await c.callTool({ name, arguments: name === 'whoami' ? {} : { by: 'external_id', value: 'crm-7' } });
        if (r.isError) throw new Error(`${name}: ${JSON.stringify(r.content)}`);
      }
    });
    const list = listed.get('tools/list')!;
    // The listing bytes svc answers (and their type) for the bare server to answer in turn.
    const sample = await fetch(`${svc.url}${list.path}`, { method: 'POST', headers: list.headers, body: list.body });
    const listingBytes = Buffer.from(await sample.arrayBuffer());
    const bodyFile = path.join(dir, 'listing.body');
    writeFileSync(bodyFile, listingBytes);
    log(`tools/list: ${TOOLS.length} tools, ${listingBytes.length} response bytes (${sample.headers.get('content-type')}), request ${list.headers['mcp-protocol-version'] ?? 'no MCP-Protocol-Version'}`);

    if (opts.only !== 'call') {
      const bareBytes = await spawnServer(registry, {
        name: 'bare-bytes',
        command: process.execPath,
        args: ['--import', REGISTER, BARE_BYTES, '--port', '0', '--file', bodyFile, '--content-type', sample.headers.get('content-type') ?? 'application/json'],
        cwd: REPO_ROOT,
        ready: /^bare-bytes listening on (http:\/\/127\.0\.0\.1:\d+)$/,
      });
      servers.push(bareBytes);
      rows.push({ scenario: 'tools/list', name: 'bare-bytes', r: await load(bareBytes.url, list, opts, bareBytes.child.pid), baseline: 'bare-bytes' });
      await stopChild(bareBytes.child, 5_000);
      rows.push({ scenario: 'tools/list', name: 'svc', r: await load(svc.url, list, opts, svc.child.pid), baseline: 'bare-bytes' });
    }
    if (opts.only !== 'list') {
      const bareMcp = await spawnServer(registry, {
        name: 'bare-mcp',
        command: process.execPath,
        args: ['--import', REGISTER, BARE_MCP, '--port', '0'],
        cwd: REPO_ROOT,
        ready: /^bare-mcp listening on (http:\/\/127\.0\.0\.1:\d+)$/,
      });
      servers.push(bareMcp);
      const echo = (await record(`${bareMcp.url}/api/mcp`, null, async (c) => {
        const r = await c.callTool({ name: 'echo', arguments: { text: 'hello' } });
        if (r.isError) throw new Error(`echo: ${JSON.stringify(r.content)}`);
      })).get('tools/call echo')!;
      rows.push({ scenario: 'tools/call', name: 'bare-mcp echo', r: await load(bareMcp.url, withoutAuth(echo), opts, bareMcp.child.pid), baseline: 'bare-mcp echo' });
      await stopChild(bareMcp.child, 5_000);
      for (const name of ['profiles_get', 'whoami']) {
        rows.push({ scenario: 'tools/call', name: `svc ${name}`, r: await load(svc.url, called.get(`tools/call ${name}`)!, opts, svc.child.pid), baseline: 'bare-mcp echo' });
      }
    }
    await stopChild(svc.child, 15_000);
  } catch (err) {
    failed = true;
    log(`FAILED ${(err as Error).message}`);
  } finally {
    for (const s of servers) await stopChild(s.child, 5_000);
  }

  const header = ['scenario', 'target', 'req/s', 'p50 ms', 'p99 ms', 'vs baseline', 'p99 vs baseline', 'server CPU', 'failures'];
  const lines = [header];
  for (const { scenario, name, r, baseline } of rows) {
    const base = rows.find((x) => x.name === baseline)!.r;
    if (r.failures > 0) failed = true;
    lines.push([
      scenario,
      name,
      Math.round(r.rps).toLocaleString('en-US'),
      (r.latency.p50Us / 1000).toFixed(2),
      (r.latency.p99Us / 1000).toFixed(2),
      name === baseline ? '-' : `${(r.rps / base.rps).toFixed(2)}x`,
      name === baseline ? '-' : `${(r.latency.p99Us / base.latency.p99Us).toFixed(2)}x`,
      r.serverCpuPercent === null ? '-' : `${Math.round(r.serverCpuPercent)}%`,
      String(r.failures),
    ]);
  }
  const widths = header.map((_, i) => Math.max(...lines.map((l) => l[i]!.length)));
  for (const l of lines) log(l.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  '));
  for (const { name, r } of rows) if (r.firstProblem) log(`${name}: first problem: ${r.firstProblem}`);
  if (opts.cpuProf) log(`svc CPU profile written to ${opts.cpuProf}`);
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bench:mcp: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);

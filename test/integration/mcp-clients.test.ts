import { spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Http } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport as V1Stdio } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Client as V2Client, StreamableHTTPClientTransport as V2Http } from '@modelcontextprotocol/client';
import { StdioClientTransport as V2Stdio } from '@modelcontextprotocol/client/stdio';
import { backendEnv } from '../helpers/backend.js';
import { query } from '../helpers/db.js';
import { errorOf, mintTokenRecord } from '../helpers/mcp-client.js';
import { BIN, cleanup, createSite, ROOT, startSvc, tempDir, type Svc } from '../helpers/svc.js';
import { policyFacts } from '../../src/mcp/call.js';
import { TOOLS } from '../../src/mcp/tools/index.js';
import type { ToolDef } from '../../src/mcp/tool.js';

/** What this file needs of a client, the 1.x SDK's or the v2 one's. */
interface AnyClient {
  listTools(params?: { cursor?: string }): Promise<{ tools: { name: string }[]; nextCursor?: string | undefined }>;
  callTool(params: { name: string; arguments: Record<string, unknown> }): Promise<unknown>;
  getServerCapabilities(): Record<string, any> | undefined;
  close(): Promise<void>;
}

let svc: Svc;
let dataDir: string;
let site: string;
const tok = { read: '', admin: '', adminId: '', area: '' };
/** The one area the `area` token is limited to (no tool made to fail with that token belongs to it). */
const AREA = 'leads';
const opened: AnyClient[] = [];

function childEnv(token: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== 'SVC_DATABASE_URL') env[k] = v;
  return { ...env, SVC_LOG_LEVEL: 'warn', ...backendEnv(dataDir), SVC_MCP_TOKEN: token };
}

type Line = 'v1' | 'v2';
type Carrier = 'http' | 'stdio';

/** A client of one SDK line over HTTP (/api/mcp) or stdio (`svc plugin run` on the same store). */
async function connect(line: Line, carrier: Carrier, token: string): Promise<AnyClient> {
  const url = new URL(`${svc.url}/api/mcp`);
  const headers = { authorization: `Bearer ${token}` };
  const stdio = { command: process.execPath, args: [BIN, 'plugin', 'run', '--data', dataDir], env: childEnv(token), cwd: ROOT, stderr: 'ignore' as const };
  let client: AnyClient;
  if (line === 'v1') {
    const c = new V1Client({ name: 'svc-v1-test', version: '1.0.0' });
    await c.connect(carrier === 'http' ? new V1Http(url, { requestInit: { headers } }) : new V1Stdio(stdio));
    client = c as unknown as AnyClient;
  } else {
    const c = new V2Client({ name: 'svc-v2-test', version: '1.0.0' });
    await c.connect(carrier === 'http' ? new V2Http(url, { requestInit: { headers } }) : new V2Stdio(stdio));
    client = c as unknown as AnyClient;
  }
  opened.push(client);
  return client;
}

async function listAll(client: AnyClient): Promise<string[]> {
  const names: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    names.push(...page.tools.map((t) => t.name));
    cursor = page.nextCursor;
  } while (cursor);
  return names;
}

/** Values of every JSON type; one of them is the wrong type for any field. */
const WRONG = [{ nested: true }, 'not-this', 12345, true, ['x']];

/** Arguments the tool's own schema refuses: none at all when a field is required, else one field of the wrong type. */
function invalidArgs(tool: ToolDef): Record<string, unknown> | null {
  if (!tool.input.safeParse({}).success) return {};
  for (const key of Object.keys(tool.input.shape)) {
    for (const v of WRONG) if (!tool.input.safeParse({ [key]: v }).success) return { [key]: v };
  }
  return null;
}

/** Read tools whose unknown id must answer not_found (a sample: an id field alone, in a form that validates). */
const UNKNOWN_ID: Record<string, Record<string, unknown>> = {
  segments_get: { id: 'seg_doesnotexist' },
  campaigns_get: { id: 'cmp_doesnotexist' },
  tools_describe: { name: 'nope_nope' },
  accounts_get: { account: 'nobody.example.org' },
};

/** How each tool is made to fail: which token, which arguments, which code. */
interface Failure {
  token: 'read' | 'admin' | 'area';
  args: Record<string, unknown>;
  code: string;
}

function failureOf(tool: ToolDef): Failure {
  if (policyFacts(tool).changesData) return { token: 'read', args: {}, code: 'insufficient_scope' };
  const unknown = UNKNOWN_ID[tool.name];
  if (unknown) return { token: 'admin', args: unknown, code: 'not_found' };
  const invalid = invalidArgs(tool);
  if (invalid) return { token: 'admin', args: invalid, code: 'validation_failed' };
  // A read tool without arguments: refused to a token limited to another area.
  return { token: 'area', args: {}, code: 'insufficient_scope' };
}

beforeAll(async () => {
  dataDir = tempDir();
  site = createSite(dataDir);
  tok.read = mintTokenRecord(dataDir, site, ['--scope', 'read', '--read-only']).token;
  tok.area = mintTokenRecord(dataDir, site, ['--scope', 'admin', '--areas', AREA]).token;
  const admin = mintTokenRecord(dataDir, site, ['--scope', 'admin']);
  tok.admin = admin.token;
  tok.adminId = admin.id;
  // Each client calls every tool with one token, faster than the per-token budget refills (burst 120, 10 a
  // second) on a quick host; what is checked here is each tool's error, not the rate limit (tested elsewhere).
  svc = await startSvc({ dataDir, env: { SVC_RATE_LIMIT: 'off' } });
}, 60_000);

afterAll(async () => {
  for (const c of opened.splice(0)) await c.close().catch(() => undefined);
  await svc?.stop();
  cleanup(dataDir);
});

const CASES: [Line, Carrier][] = [
  ['v1', 'http'],
  ['v1', 'stdio'],
  ['v2', 'http'],
  ['v2', 'stdio'],
];

describe('every tool error is readable by the official clients', () => {
  for (const [line, carrier] of CASES) {
    it(`${line} client over ${carrier}: lists every tool, and each failing call is a result with isError and our code`, async () => {
      const clients = { read: await connect(line, carrier, tok.read), admin: await connect(line, carrier, tok.admin), area: await connect(line, carrier, tok.area) };
      const caps = clients.admin.getServerCapabilities();
      expect(caps?.tools).toBeDefined();
      expect(caps?.tools?.listChanged).not.toBe(true);
      if (caps?.prompts) expect(caps.prompts.listChanged).not.toBe(true);
      if (caps?.resources) expect(caps.resources.listChanged).not.toBe(true);
      const listed = await listAll(clients.admin);
      expect(listed.sort()).toEqual(TOOLS.map((t) => t.name).sort());
      const wrong: string[] = [];
      for (const tool of TOOLS) {
        const f = failureOf(tool);
        let result: unknown;
        try {
          result = await clients[f.token].callTool({ name: tool.name, arguments: f.args });
        } catch (err) {
          wrong.push(`${tool.name}: threw ${(err as Error).message}`);
          continue;
        }
        const r = result as { isError?: boolean };
        if (r.isError !== true) {
          wrong.push(`${tool.name}: no isError in ${JSON.stringify(result).slice(0, 200)}`);
          continue;
        }
        const e = errorOf(result);
        if (e.code !== f.code) wrong.push(`${tool.name}: ${e.code} (${e.message}), expected ${f.code}`);
        if (f.code === 'validation_failed' && Object.keys(f.args).length === 1 && e.details?.field !== Object.keys(f.args)[0]) {
          wrong.push(`${tool.name}: validation names ${String(e.details?.field)}, expected ${Object.keys(f.args)[0]}`);
        }
      }
      expect(wrong).toEqual([]);
    }, 240_000);
  }
});

/** POSTs a raw JSON-RPC body to /api/mcp with the admin token. */
async function post(body: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${svc.url}/api/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tok.admin}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body,
  });
  return { status: res.status, body: (await res.json().catch(() => null)) as any };
}

const auditCount = () => Number(query<{ n: number }>(dataDir, 'SELECT count(*) AS n FROM mcp_audit')[0]!.n);
const whoami = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'whoami', arguments: {} } });

describe('JSON-RPC batches are refused before anything runs', () => {
  it('over HTTP: 400 with -32600, with or without MCP-Protocol-Version, and no call runs', async () => {
    const before = auditCount();
    const batch = JSON.stringify([whoami(1), whoami(2)]);
    const variants: Record<string, string>[] = [{}, { 'mcp-protocol-version': '2025-06-18' }, { 'mcp-protocol-version': '2025-03-26' }];
    for (const headers of variants) {
      const r = await post(`  \n${batch}`, headers);
      expect(r.status, JSON.stringify(headers)).toBe(400);
      expect(r.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600, data: { code: 'bad_request', reason: 'batch' } } });
      expect(r.body.error.message).toMatch(/batches are not supported/);
    }
    expect((await post('[]')).body.error.code).toBe(-32600);
    expect(auditCount()).toBe(before);
    // A single message still runs.
    const one = await post(JSON.stringify(whoami(3)), { 'mcp-protocol-version': '2025-06-18' });
    expect(one.status).toBe(200);
    expect(auditCount()).toBe(before + 1);
  });

  it('over stdio: an error response -32600 for the batch line, and the session goes on', async () => {
    const child = spawn(process.execPath, [BIN, 'plugin', 'run', '--data', dataDir], { cwd: ROOT, env: childEnv(tok.admin), stdio: ['pipe', 'pipe', 'ignore'] });
    const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
    const next = async () => JSON.parse(String((await lines.next()).value)) as any;
    try {
      const before = auditCount();
      child.stdin!.write(`${JSON.stringify([whoami(1), whoami(2)])}\n`);
      expect(await next()).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600 } });
      expect(auditCount()).toBe(before);
      child.stdin!.write(`${JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } })}\n`);
      const init = await next();
      expect(init.id).toBe(7);
      expect(init.result.capabilities.tools.listChanged).not.toBe(true);
      child.stdin!.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
      child.stdin!.write(`${JSON.stringify(whoami(8))}\n`);
      const who = await next();
      expect(who.id).toBe(8);
      expect(who.result.structuredContent).toMatchObject({ site_id: site, scope: 'admin' });
      expect(auditCount()).toBe(before + 1);
    } finally {
      child.stdin!.end();
      await new Promise((r) => child.once('exit', r));
    }
  }, 60_000);
});

describe('unknown tool names', () => {
  it('answer a JSON-RPC error and leave an audit row', async () => {
    const client = await connect('v1', 'http', tok.admin);
    const name = `nope_${'x'.repeat(200)}`;
    await expect(client.callTool({ name, arguments: { secret: 'zz-marker' } })).rejects.toThrow(/-32602|not found/i);
    const row = query<any>(dataDir, 'SELECT * FROM mcp_audit ORDER BY id DESC LIMIT 1')[0];
    expect(row).toMatchObject({ site_id: site, token_id: tok.adminId, tool: name.slice(0, 128), outcome: 'invalid', error_code: 'not_found' });
    expect(JSON.stringify(query(dataDir, 'SELECT * FROM mcp_audit'))).not.toContain('zz-marker');
  });
});

/** The MCP Inspector's CLI (2.x, what `npx @modelcontextprotocol/inspector --cli` runs), as a user runs it. */
const INSPECTOR = path.join(ROOT, 'node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js');

interface InspectorRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the Inspector CLI with `args` (after --cli); its catalog and home in a directory of this test. */
function inspector(args: string[], opts: { timeoutMs?: number } = {}): Promise<InspectorRun> {
  return new Promise((resolve, reject) => {
    const home = path.join(dataDir, 'inspector-home');
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== 'SVC_DATABASE_URL') env[k] = v;
    const child = spawn(process.execPath, [INSPECTOR, '--cli', ...args], {
      cwd: ROOT,
      env: { ...env, HOME: home, MCP_CATALOG_PATH: path.join(home, 'mcp.json') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60_000);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const overHttp = (token: string) => [`${svc.url}/api/mcp`, '--transport', 'http', '--header', `Authorization: Bearer ${token}`];
const overStdio = (token: string) => [
  ...Object.entries({ ...backendEnv(dataDir), SVC_MCP_TOKEN: token, SVC_LOG_LEVEL: 'warn' }).flatMap(([k, v]) => ['-e', `${k}=${v}`]),
  process.execPath,
  BIN,
  'plugin',
  'run',
  '--data',
  dataDir,
];

describe('the MCP Inspector CLI', () => {
  it('over HTTP: lists every tool with no schema portability warning (--strict), and reads a call and a tool error', async () => {
    const list = await inspector([...overHttp(tok.admin), '--method', 'tools/list', '--strict']);
    expect({ code: list.code, stderr: list.stderr }).toEqual({ code: 0, stderr: '' });
    const names = (JSON.parse(list.stdout) as { tools: { name: string }[] }).tools.map((t) => t.name);
    expect(names.sort()).toEqual(TOOLS.map((t) => t.name).sort());

    const who = await inspector([...overHttp(tok.read), '--method', 'tools/call', '--tool-name', 'whoami']);
    expect(who.code).toBe(0);
    expect(JSON.parse(who.stdout).structuredContent).toMatchObject({ site_id: site, scope: 'read' });

    // A tool error: the Inspector prints the result (isError, our code in the text) and exits 5.
    const missing = await inspector([...overHttp(tok.admin), '--method', 'tools/call', '--tool-name', 'segments_get', '--tool-arg', 'id=seg_doesnotexist']);
    expect(missing.code).toBe(5);
    const result = JSON.parse(missing.stdout) as { isError?: boolean; content: { type: string; text: string }[] };
    expect(result.isError).toBe(true);
    expect(JSON.parse(result.content[0]!.text)).toMatchObject({ error: { code: 'not_found', message: 'no segment seg_doesnotexist' } });
    expect(JSON.parse(missing.stderr)).toMatchObject({ error: { code: 'tool_is_error' } });

    // An invalid rule: refused by our validation, naming the node, readable the same way.
    const invalid = await inspector([...overHttp(tok.admin), '--method', 'tools/call', '--tool-name', 'segments_create', '--tool-arg', 'name=x', 'rule={"trait":"plan","op":"bogus","value":1}']);
    expect(invalid, JSON.stringify(invalid)).toMatchObject({ code: 5 });
    const err = JSON.parse((JSON.parse(invalid.stdout) as { content: { text: string }[] }).content[0]!.text) as { error: { code: string; details: { field: string } } };
    expect(err.error).toMatchObject({ code: 'validation_failed', details: { field: 'rule.op' } });
  }, 120_000);

  it('over stdio (svc plugin run): lists the same tools and the seller skills as prompts, and calls a tool', async () => {
    const list = await inspector([...overStdio(tok.admin), '--method', 'tools/list', '--strict']);
    expect({ code: list.code, stderr: list.stderr }).toEqual({ code: 0, stderr: '' });
    expect((JSON.parse(list.stdout) as { tools: { name: string }[] }).tools.map((t) => t.name).sort()).toEqual(TOOLS.map((t) => t.name).sort());
    const prompts = await inspector([...overStdio(tok.admin), '--method', 'prompts/list']);
    expect(prompts.code).toBe(0);
    expect((JSON.parse(prompts.stdout) as { prompts: { name: string }[] }).prompts.map((p) => p.name)).toContain('draft-segment-page');
    const who = await inspector([...overStdio(tok.admin), '--method', 'tools/call', '--tool-name', 'whoami']);
    expect(who.code).toBe(0);
    expect(JSON.parse(who.stdout).structuredContent).toMatchObject({ site_id: site, scope: 'admin' });
  }, 120_000);
});

import { spawn } from 'node:child_process';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { SkillsClient } from '@modelcontextprotocol/client/ext/skills';
import { backendEnv } from '../helpers/backend.js';
import { errorOf } from '../helpers/mcp-client.js';
import { BIN, cleanup, cli, cliJson, createSite, ROOT, startSvc, tempDir, type Svc } from '../helpers/svc.js';
import { skillBody } from '../../src/plugin/skills.js';
import { SELLER_SKILLS } from '../../src/plugin/validate.js';
import { policyFacts } from '../../src/mcp/call.js';
import { TOOLS } from '../../src/mcp/tools/index.js';

let svc: Svc;
let dataDir: string;
let site: string;
const tok = { readRO: '', write: '', revoked: '', revokedId: '' };
const clients: Client[] = [];

function mint(args: string[]): { token: string; id: string } {
  return cliJson<{ token: string; id: string }>(['token', 'mint', '--site', site, ...args, '--data', dataDir]);
}

function childEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== 'SVC_MCP_TOKEN' && k !== 'SVC_DATABASE_URL') env[k] = v;
  return { ...env, SVC_LOG_LEVEL: 'warn', ...backendEnv(dataDir), ...extra };
}

async function stdioClient(args: string[], token: string, mode: 'legacy' | 'auto' = 'legacy'): Promise<{ client: Client; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'plugin', 'run', ...args],
    env: childEnv({ SVC_MCP_TOKEN: token }),
    cwd: ROOT,
    stderr: 'pipe',
  });
  let err = '';
  transport.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  const client = new Client({ name: 'svc-plugin-test', version: '1.0.0' }, { versionNegotiation: { mode } });
  await client.connect(transport);
  clients.push(client);
  return { client, stderr: () => err };
}

async function httpClient(token: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${svc.url}/api/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
  const client = new Client({ name: 'svc-plugin-test', version: '1.0.0' }, { versionNegotiation: { mode: 'legacy' } });
  await client.connect(transport);
  clients.push(client);
  return client;
}

async function allTools(client: Client) {
  const tools = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  return tools;
}

const GOLD = { trait: 'plan', op: 'eq', value: 'gold' };
const REGISTRY = TOOLS.map(policyFacts);

const skillText = (name: string) => readFileSync(path.join(ROOT, 'skills', name, 'SKILL.md'), 'utf8');

beforeAll(async () => {
  dataDir = tempDir();
  site = createSite(dataDir);
  tok.readRO = mint(['--scope', 'read', '--read-only']).token;
  tok.write = mint(['--scope', 'write', '--propose-only', '--block-destructive']).token;
  const r = mint(['--scope', 'read', '--read-only']);
  tok.revoked = r.token;
  tok.revokedId = r.id;
  svc = await startSvc({ dataDir });
});

afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await svc?.stop();
  cleanup(dataDir);
});

describe('svc plugin run (local store, stdio)', () => {
  it('initializes, and lists the same tools as /api/mcp for the same token', async () => {
    const { client } = await stdioClient(['--data', dataDir], tok.readRO);
    expect(client.getServerVersion()?.name).toBe('svc');
    const overStdio = await allTools(client);
    const overHttp = await allTools(await httpClient(tok.readRO));
    expect(overStdio.length).toBeGreaterThan(10);
    expect(overStdio).toEqual(overHttp);
  });

  it('serves the four skills as prompts whose text is the SKILL.md body', async () => {
    const { client } = await stdioClient(['--data', dataDir], tok.readRO);
    const { prompts } = await client.listPrompts();
    expect(prompts.map((p) => p.name)).toEqual([...SELLER_SKILLS]);
    for (const p of prompts) expect(p.description!.length).toBeGreaterThan(20);
    for (const name of SELLER_SKILLS) {
      const got = await client.getPrompt({ name, arguments: {} });
      const msg = got.messages[0]!;
      expect(msg.role).toBe('user');
      expect(msg.content).toEqual({ type: 'text', text: skillBody(skillText(name)) });
      expect(skillBody(skillText(name))).toContain('`whoami`');
    }
    const withRequest = await client.getPrompt({ name: 'pre-call-brief', arguments: { request: 'jane@acme.example' } });
    const text = (withRequest.messages[0]!.content as { text: string }).text;
    expect(text.startsWith(skillBody(skillText('pre-call-brief')))).toBe(true);
    expect(text).toContain('## Request\n\njane@acme.example');
  });

  it('serves the skills through the MCP skills extension too', async () => {
    const { client } = await stdioClient(['--data', dataDir], tok.readRO);
    const skills = new SkillsClient(client);
    expect(skills.supported).toBe(true);
    const listing = await skills.list();
    expect(listing.invalid).toEqual([]);
    expect(listing.skills.map((s) => s.frontmatter.name).sort()).toEqual([...SELLER_SKILLS]);
    const brief = listing.skills.find((s) => s.frontmatter.name === 'pre-call-brief')!;
    const file = await skills.read(brief);
    expect(file.verified).toBe(true);
    expect(file.text).toBe(skillText('pre-call-brief'));
  });

  it('runs a read tool, and refuses a mutating tool to a read-only token with insufficient_scope', async () => {
    const { client } = await stdioClient(['--data', dataDir], tok.readRO);
    const me = (await client.callTool({ name: 'whoami', arguments: {} })) as any;
    expect(me.isError).toBeFalsy();
    expect(me.structuredContent).toMatchObject({ site_id: site, scope: 'read', restrictions: { read_only: true }, personal_data: false });
    const refused = (await client.callTool({ name: 'segments_create', arguments: { name: 'x', rule: GOLD } })) as any;
    expect(refused.isError).toBe(true);
    expect(errorOf(refused).code).toBe('insufficient_scope');
    expect(errorOf(refused).details.reason).toBe('scope');
    const segments = cliJson<unknown[]>(['segment', 'list', '--site', site, '--data', dataDir]);
    expect(segments).toEqual([]);
  });

  it('applies the draft-segment-page token exactly as over HTTP: it drafts, and every approve, publish or destructive tool is refused', async () => {
    const { client } = await stdioClient(['--data', dataDir], tok.write);
    const me = (await client.callTool({ name: 'whoami', arguments: {} })) as any;
    expect(me.structuredContent).toMatchObject({ scope: 'write', restrictions: { propose_only: true, block_destructive: true, read_only: false } });
    const created = (await client.callTool({ name: 'segments_create', arguments: { name: 'Gold (draft-segment-page)', rule: GOLD } })) as any;
    expect(created.isError).toBeFalsy();
    expect(created.structuredContent).toMatchObject({ name: 'Gold (draft-segment-page)', rule: GOLD });
    const http = await httpClient(tok.write);
    const refusedTools = REGISTRY.filter((t) => t.approvesOrPublishes || t.destructive);
    expect(refusedTools.map((t) => t.name)).toEqual(expect.arrayContaining(['variants_approve', 'variants_publish', 'overrides_publish', 'segments_delete']));
    for (const t of refusedTools) {
      const overStdio = (await client.callTool({ name: t.name, arguments: {} })) as any;
      expect(overStdio.isError, t.name).toBe(true);
      expect(errorOf(overStdio).code, t.name).toBe('insufficient_scope');
      const overHttp = (await http.callTool({ name: t.name, arguments: {} })) as any;
      expect(errorOf(overStdio), t.name).toEqual(errorOf(overHttp));
    }
    const segments = cliJson<{ id: string }[]>(['segment', 'list', '--site', site, '--data', dataDir]);
    expect(segments.map((s: any) => s.name)).toEqual(['Gold (draft-segment-page)']);
  });

  it('checks the token before every request: a token revoked mid-session is refused from then on', async () => {
    const { client } = await stdioClient(['--data', dataDir], tok.revoked);
    expect(((await client.callTool({ name: 'whoami', arguments: {} })) as any).isError).toBeFalsy();
    expect(cli(['token', 'revoke', tok.revokedId, '--data', dataDir]).code).toBe(0);
    await expect(client.callTool({ name: 'whoami', arguments: {} })).rejects.toThrow(/revoked/);
  });

  it('refuses to start without a valid token, writing nothing on stdout', () => {
    const none = cli(['plugin', 'run', '--data', dataDir], { env: { SVC_MCP_TOKEN: '' } });
    expect(none.code).toBe(2);
    expect(none.stdout).toBe('');
    expect(none.stderr).toMatch(/needs an MCP token/);
    const bad = cli(['plugin', 'run', '--data', dataDir, '--token', 'mcpt_unknown'], { input: '' });
    expect(bad.code).not.toBe(0);
    expect(bad.stdout).toBe('');
    expect(bad.stderr).toMatch(/unknown token/);
  });

  it.each([
    ['local', () => ['--data', dataDir], /serving local tools over stdio/],
    ['proxy', () => ['--url', svc.url], /proxying tools over stdio/],
  ] as const)('%s: writes only protocol messages on stdout, logs on stderr, and exits 0 when stdin closes', async (_mode, args, started) => {
    const proc = spawn(process.execPath, [BIN, 'plugin', 'run', ...args()], {
      cwd: ROOT,
      env: childEnv({ SVC_MCP_TOKEN: tok.readRO, SVC_LOG_LEVEL: 'info' }),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    proc.stdout.on('data', (c: Buffer) => (out += c.toString()));
    proc.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
    const send = (m: unknown) => proc.stdin.write(`${JSON.stringify(m)}\n`);
    const answered = (id: number) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no answer to ${id}: ${out} ${err}`)), 20_000);
        const look = () => {
          if (out.split('\n').some((l) => l.includes(`"id":${id},`) || l.includes(`"id":${id}}`))) {
            clearTimeout(timer);
            resolve();
          } else setTimeout(look, 25);
        };
        look();
      });
    send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    await answered(1);
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'whoami', arguments: {} } });
    send({ jsonrpc: '2.0', id: 4, method: 'prompts/get', params: { name: 'hot-accounts', arguments: {} } });
    for (const id of [2, 3, 4]) await answered(id);
    proc.stdin.end();
    expect(await exited).toBe(0);
    const lines = out.split('\n').filter((l) => l !== '');
    expect(lines.length).toBe(4);
    for (const l of lines) expect(JSON.parse(l)).toMatchObject({ jsonrpc: '2.0' });
    const byId = new Map(lines.map((l) => JSON.parse(l)).map((m: any) => [m.id, m]));
    expect(byId.get(3).result.structuredContent.site_id).toBe(site);
    expect(byId.get(4).result.messages[0].content.text).toBe(skillBody(skillText('hot-accounts')));
    expect(err).toMatch(started);
    expect(err).toMatch(/stdin closed/);
    expect(err).not.toContain(tok.readRO);
  });
});

describe('svc plugin run --url (proxy to a running svc serve)', () => {
  it('forwards tools/list and tools/call with the token, and serves the skills locally', async () => {
    const { client } = await stdioClient(['--url', svc.url], tok.readRO);
    const overProxy = await allTools(client);
    const overHttp = await allTools(await httpClient(tok.readRO));
    expect(overProxy.map((t) => t.name)).toEqual(overHttp.map((t) => t.name));
    expect(overProxy).toEqual(overHttp);
    const me = (await client.callTool({ name: 'whoami', arguments: {} })) as any;
    expect(me.structuredContent).toMatchObject({ site_id: site, scope: 'read' });
    const refused = (await client.callTool({ name: 'segments_create', arguments: { name: 'x', rule: GOLD } })) as any;
    expect(refused.isError).toBe(true);
    expect(errorOf(refused).code).toBe('insufficient_scope');
    const { prompts } = await client.listPrompts();
    expect(prompts.map((p) => p.name)).toEqual([...SELLER_SKILLS]);
  });

  it('serves a client of the 2026-07-28 revision too, locally and as a proxy', async () => {
    for (const args of [['--data', dataDir], ['--url', svc.url]]) {
      const { client } = await stdioClient(args, tok.readRO, 'auto');
      expect(client.getNegotiatedProtocolVersion(), args[0]).toBe('2026-07-28');
      const me = (await client.callTool({ name: 'whoami', arguments: {} })) as any;
      expect(me.structuredContent, args[0]).toMatchObject({ site_id: site, scope: 'read' });
      expect((await client.listPrompts()).prompts.map((p) => p.name), args[0]).toEqual([...SELLER_SKILLS]);
    }
  });

  it('refuses to start when the remote server refuses the token', () => {
    const r = cli(['plugin', 'run', '--url', svc.url, '--token', 'mcpt_nope'], { input: '' });
    expect(r.code).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/could not open an MCP session/);
  });
});

describe('svc plugin validate and svc mcp config', () => {
  it('mcp config --local prints a Claude Desktop entry that runs this installation, and the entry works as printed', async () => {
    for (const where of [['--data', dataDir], ['--url', svc.url]]) {
      const r = cli(['mcp', 'config', '--client', 'claude-desktop', '--local', '--token', tok.readRO, ...where]);
      expect(r.code, where[0]).toBe(0);
      const entry = JSON.parse(r.stdout).mcpServers.svc as { command: string; args: string[]; env: Record<string, string> };
      expect(entry, where[0]).toEqual({
        command: process.execPath,
        args: [BIN, 'plugin', 'run', where[0], where[0] === '--data' ? path.resolve(dataDir) : svc.url],
        env: { SVC_MCP_TOKEN: tok.readRO },
      });
      const transport = new StdioClientTransport({ command: entry.command, args: entry.args, env: { ...childEnv(), ...entry.env }, cwd: ROOT, stderr: 'pipe' });
      const client = new Client({ name: 'claude-desktop-like', version: '1.0.0' }, { versionNegotiation: { mode: 'legacy' } });
      await client.connect(transport);
      clients.push(client);
      const me = (await client.callTool({ name: 'whoami', arguments: {} })) as any;
      expect(me.structuredContent, where[0]).toMatchObject({ site_id: site, scope: 'read', restrictions: { read_only: true } });
      expect((await client.listPrompts()).prompts.map((p) => p.name), where[0]).toEqual([...SELLER_SKILLS]);
    }
  });


  it('validate exits 1 with one clear line per problem', () => {
    const root = tempDir('svc-plugin-root-');
    try {
      for (const p of ['package.json', 'skills', 'plugin', '.claude-plugin']) cpSync(path.join(ROOT, p), path.join(root, p), { recursive: true });
      const mf = path.join(root, 'plugin/.claude-plugin/plugin.json');
      writeFileSync(mf, JSON.stringify({ ...JSON.parse(readFileSync(mf, 'utf8')), name: 'other' }));
      const r = cli(['plugin', 'validate', '--root', root]);
      expect(r.code).toBe(1);
      expect(r.stdout.split('\n')).toContain('error: plugin/.claude-plugin/plugin.json: name must be "svc-seller-skills" (the skills\' allowed-tools use it)');
      const j = cli(['plugin', 'validate', '--root', root, '--json']);
      expect(j.code).toBe(1);
      expect(JSON.parse(j.stdout)).toMatchObject({ ok: false, skills: [...SELLER_SKILLS] });
    } finally {
      cleanup(root);
    }
  });

  it('mcp config prints a ready entry', () => {
    const r = cli(['mcp', 'config', '--client', 'claude-code', '--url', 'https://svc.example.com/', '--token', 'mcpt_t']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ mcpServers: { svc: { type: 'http', url: 'https://svc.example.com/api/mcp', headers: { Authorization: 'Bearer mcpt_t' } } } });
    const d = cli(['mcp', 'config', '--client', 'claude-desktop', '--stdio', '--token', 'mcpt_t', '--data', dataDir]);
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    expect(pkg.name).toBe('@svc-hq/svc'); // the bare name svc on the registry is an unrelated package
    const spec = `${pkg.name}@${pkg.version}`;
    expect(JSON.parse(d.stdout).mcpServers.svc).toEqual({ command: 'npx', args: ['-y', spec, 'plugin', 'run', '--data', path.resolve(dataDir)], env: { SVC_MCP_TOKEN: 'mcpt_t' } });
    const cursor = cli(['mcp', 'config', '--client', 'cursor', '--stdio', '--url', svc.url]);
    expect(JSON.parse(cursor.stdout).mcpServers.svc).toEqual({ command: 'npx', args: ['-y', spec, 'plugin', 'run', '--url', svc.url], env: { SVC_MCP_TOKEN: '${env:SVC_MCP_TOKEN}' } });
    const bad = cli(['mcp', 'config', '--client', 'vscode']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/not one of claude-desktop, claude-code, cursor/);
  });
});

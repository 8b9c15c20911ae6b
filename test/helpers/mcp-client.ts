import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { cliJson } from './svc.js';

/** Mints an MCP token for a site with the CLI. */
export function mintToken(dataDir: string, siteId: string, args: string[] = ['--scope', 'admin']): string {
  return mintTokenRecord(dataDir, siteId, args).token;
}

/** Mints an MCP token for a site with the CLI; returns the token and its id (for revoking it). */
export function mintTokenRecord(dataDir: string, siteId: string, args: string[] = ['--scope', 'admin']): { token: string; id: string } {
  return cliJson<{ token: string; id: string }>(['token', 'mint', '--site', siteId, ...args, '--data', dataDir]);
}

export interface McpClientOptions {
  /** Where the token goes: an `Authorization: Bearer` header (the default) or the `api_key` query parameter. */
  carrier?: 'header' | 'query';
  /** More query parameters of the endpoint URL. */
  query?: Record<string, string>;
  /** More request headers. */
  headers?: Record<string, string>;
  /** The SDK's protocol version negotiation; `legacy` (the SDK's default) unless told. */
  mode?: 'legacy' | 'auto';
}

/** An MCP SDK client connected to svc's endpoint with a token. */
export async function mcpClient(svcUrl: string, token: string, opts: McpClientOptions = {}): Promise<Client> {
  const url = new URL(`${svcUrl}/api/mcp`);
  for (const [k, v] of Object.entries(opts.query ?? {})) url.searchParams.set(k, v);
  if (opts.carrier === 'query') url.searchParams.set('api_key', token);
  const headers = opts.carrier === 'query' ? opts.headers : { authorization: `Bearer ${token}`, ...opts.headers };
  const transport = new StreamableHTTPClientTransport(url, headers ? { requestInit: { headers } } : {});
  const client = new Client({ name: 'svc-test', version: '1.0.0' }, { versionNegotiation: { mode: opts.mode ?? 'legacy' } });
  await client.connect(transport);
  return client;
}

/**
 * The MCP clients of one test file: `connect` opens one to the svc that `url()`
 * names (read at connect time, so it may be started later), `closeAll` closes
 * every one opened, for afterAll.
 */
export class McpClients {
  private readonly opened: Client[] = [];

  constructor(private readonly url: () => string) {}

  async connect(token: string, opts: McpClientOptions = {}): Promise<Client> {
    const client = await mcpClient(this.url(), token, opts);
    this.opened.push(client);
    return client;
  }

  async closeAll(): Promise<void> {
    for (const c of this.opened.splice(0)) await c.close().catch(() => undefined);
  }
}

/** Calls a tool; returns the raw result, error or not. */
export async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<any> {
  return client.callTool({ name, arguments: args });
}

/** Calls a tool; throws with the tool error when it fails, else returns its structured content. */
export async function callOk(client: Client, name: string, args: Record<string, unknown> = {}): Promise<any> {
  const r = await call(client, name, args);
  if (r.isError) throw new Error(`${name} failed: ${JSON.stringify(r.structuredContent ?? r.content)}`);
  return r.structuredContent;
}

/**
 * The error of a failed tool result ({ code, message, details }): the JSON of
 * its text content. A failed result carries no structuredContent (the tool's
 * outputSchema would reject it); either is a test failure here.
 */
export function errorOf(r: any): { code: string; message: string; details: any } {
  if (!r?.isError) throw new Error(`expected a failed tool result, got ${JSON.stringify(r?.structuredContent ?? r)}`);
  if (r.structuredContent !== undefined) throw new Error(`a failed tool result carries structuredContent: ${JSON.stringify(r.structuredContent)}`);
  const text = r.content?.[0]?.type === 'text' ? (r.content[0].text as string) : '';
  return (JSON.parse(text) as { error: { code: string; message: string; details: any } }).error;
}

/** Calls a tool that must fail; returns its error ({ code, message, details }). */
export async function callErr(client: Client, name: string, args: Record<string, unknown> = {}): Promise<{ code: string; message: string; details: any }> {
  const r = await call(client, name, args);
  if (!r.isError) throw new Error(`${name} unexpectedly succeeded: ${JSON.stringify(r.structuredContent)}`);
  return errorOf(r);
}

/** Polls `fn` until `done` holds (or throws after `timeoutMs`). */
export async function until<T>(fn: () => Promise<T>, done: (v: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (done(v)) return v;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

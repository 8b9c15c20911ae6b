import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { cliJson } from './svc.js';

/** Mints an MCP token for a site with the CLI. */
export function mintToken(dataDir: string, siteId: string, args: string[] = ['--scope', 'admin']): string {
  return cliJson<{ token: string }>(['token', 'mint', '--site', siteId, ...args, '--data', dataDir]).token;
}

/** An MCP SDK client connected to svc's endpoint with a bearer token. */
export async function mcpClient(svcUrl: string, token: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${svcUrl}/api/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
  const client = new Client({ name: 'svc-test', version: '1.0.0' }, { versionNegotiation: { mode: 'legacy' } });
  await client.connect(transport);
  return client;
}

/** Calls a tool; throws with the tool error when it fails, else returns its structured content. */
export async function callOk(client: Client, name: string, args: Record<string, unknown> = {}): Promise<any> {
  const r = await client.callTool({ name, arguments: args });
  if (r.isError) throw new Error(`${name} failed: ${JSON.stringify(r.structuredContent ?? r.content)}`);
  return r.structuredContent;
}

/** Calls a tool that must fail; returns its error ({ code, message, details }). */
export async function callErr(client: Client, name: string, args: Record<string, unknown> = {}): Promise<{ code: string; message: string; details: any }> {
  const r = await client.callTool({ name, arguments: args });
  if (!r.isError) throw new Error(`${name} unexpectedly succeeded: ${JSON.stringify(r.structuredContent)}`);
  return (r.structuredContent as { error: { code: string; message: string; details: any } }).error;
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

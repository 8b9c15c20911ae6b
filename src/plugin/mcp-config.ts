import path from 'node:path';
import { AppError } from '../errors/app-error.js';

export const MCP_CLIENTS = ['claude-desktop', 'claude-code', 'cursor'] as const;
export type McpClient = (typeof MCP_CLIENTS)[number];

export interface McpConfigOptions {
  client: McpClient;
  /** A local stdio server (`svc plugin run`) instead of the HTTP endpoint. */
  stdio: boolean;
  /** The svc server's address; with --stdio the local server proxies to it. */
  url?: string;
  token?: string;
  /** Local stdio mode: the data directory, or a PostgreSQL URL. */
  data?: string;
  databaseUrl?: string;
  /** The package spec `npx -y` fetches and runs: `@svc-hq/svc@<version>` (the package's own name and version). */
  package: string;
  /**
   * Run this installation (`<node> <bin/svc.js>`) instead of `npx -y <package>`:
   * for a clone or a global install, where the pinned version is not on the registry.
   */
  local?: { node: string; bin: string };
}

/** How each client spells a reference to an environment variable in its config file (null: it does not expand them). */
const ENV_REF: Record<McpClient, ((name: string) => string) | null> = {
  'claude-code': (n) => `\${${n}}`,
  cursor: (n) => `\${env:${n}}`,
  'claude-desktop': null,
};

function base(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new AppError('bad_request', `--url: ${JSON.stringify(url)} is not a URL`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new AppError('bad_request', '--url must be an http(s) URL');
  return `${u.origin}${u.pathname.replace(/\/+$/, '').replace(/\/api\/mcp$/, '')}`;
}

/**
 * A ready `mcpServers` entry for a client's config file. Claude Desktop reads
 * only local (stdio) servers from its config file, so it always gets `svc
 * plugin run` (a proxy when --url is given) and needs the token itself;
 * Claude Code and Cursor get the HTTP endpoint unless --stdio, and a variable
 * reference where no token is given.
 */
export function mcpConfigEntry(o: McpConfigOptions): { mcpServers: Record<string, Record<string, unknown>> } {
  const ref = ENV_REF[o.client];
  const token = o.token ?? (ref ? ref('SVC_MCP_TOKEN') : undefined);
  if (token === undefined) throw new AppError('bad_request', `${o.client} does not expand environment variables in its config: pass --token (or set SVC_MCP_TOKEN)`);
  const stdio = o.stdio || o.client === 'claude-desktop';
  if (!stdio) {
    const url = `${o.url !== undefined ? base(o.url) : ref!('SVC_URL')}/api/mcp`;
    const headers = { Authorization: `Bearer ${token}` };
    return { mcpServers: { svc: o.client === 'cursor' ? { url, headers } : { type: 'http', url, headers } } };
  }
  const args = o.local ? [o.local.bin, 'plugin', 'run'] : ['-y', o.package, 'plugin', 'run'];
  if (o.url !== undefined) args.push('--url', base(o.url));
  else if (o.databaseUrl !== undefined) args.push('--database-url', o.databaseUrl);
  else args.push('--data', path.resolve(o.data ?? process.env.SVC_DATA_DIR ?? './.svc'));
  const entry: Record<string, unknown> = { command: o.local ? o.local.node : 'npx', args, env: { SVC_MCP_TOKEN: token } };
  return { mcpServers: { svc: o.client === 'claude-code' ? { type: 'stdio', ...entry } : entry } };
}

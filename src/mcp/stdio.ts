import { z } from 'zod';
import type { Logger } from 'pino';
import {
  isJSONRPCRequest,
  McpServer,
  type JSONRPCMessage,
  type MessageExtraInfo,
  type Transport,
  type TransportSendOptions,
} from '@modelcontextprotocol/server';
import { serveStdio, StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { loadSkills as loadSkillCatalog } from '@modelcontextprotocol/server/ext/skills/node';
import { AppError } from '../errors/app-error.js';
import type { Store } from '../store/store.js';
import { SegmentMembership } from '../domain/segments/membership.js';
import { VERSION } from '../version.js';
import { grantForToken } from './auth.js';
import type { Grant } from '../domain/access/grant.js';
import { batchRefusal, BatchGate } from './batch.js';
import { rpcErrorMessage } from './rpc-error.js';
import { advertiseStaticLists, createMcpServer } from './server.js';

/**
 * The skills the stdio server serves as prompts and through the skills
 * extension: their folder and the parsed SKILL.md files. The wiring (`svc
 * plugin run`) loads them with the plugin builder's reader and passes them in,
 * so this surface does not import the plugin surface.
 */
export interface StdioSkills {
  root: string;
  docs: readonly { dir: string; frontmatter: Record<string, unknown>; body: string }[];
}

function promptTitle(name: string): string {
  const words = name.split('-').join(' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/**
 * Every skill as an MCP prompt: prompts/get returns the SKILL.md body (the
 * instructions), followed by the caller's request when one is given.
 */
export function registerSkillPrompts(server: McpServer, skills: StdioSkills['docs']): void {
  for (const s of skills) {
    const description = String(s.frontmatter.description);
    const hint = typeof s.frontmatter['argument-hint'] === 'string' ? ` (${s.frontmatter['argument-hint']})` : '';
    server.registerPrompt(
      s.dir,
      {
        title: promptTitle(s.dir),
        description,
        argsSchema: z.object({ request: z.string().max(2000).optional().describe(`What to run the skill on${hint}.`) }),
      },
      ({ request }) => ({
        description,
        messages: [
          {
            role: 'user' as const,
            content: { type: 'text' as const, text: request ? `${s.body}\n\n## Request\n\n${request}\n` : s.body },
          },
        ],
      }),
    );
  }
}

/**
 * The process's stdio transport with the token checked again before every
 * request, as the HTTP endpoint checks it on every request: a token revoked or
 * expired while the session runs is refused from then on (JSON-RPC error
 * -32001, data.code unauthorized). Messages stay in order.
 */
class CheckedTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void;
  private queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly inner: Transport,
    private readonly check: (() => Promise<AppError | null>) | null,
    private readonly closed: () => void,
  ) {}

  async start(): Promise<void> {
    this.inner.onmessage = (message, extra) => {
      this.queue = this.queue.then(() => this.route(message, extra));
    };
    this.inner.onerror = (e) => this.onerror?.(e);
    this.inner.onclose = () => {
      this.onclose?.();
      this.closed();
    };
    await this.inner.start();
  }

  private async route(message: JSONRPCMessage, extra?: MessageExtraInfo): Promise<void> {
    if (this.check && isJSONRPCRequest(message)) {
      let refused: AppError | null;
      try {
        refused = await this.check();
      } catch (err) {
        refused = new AppError('service_unavailable', `could not check the token: ${(err as Error).message}`);
      }
      if (refused) {
        await this.inner.send(rpcErrorMessage(refused, message.id));
        return;
      }
    }
    this.onmessage?.(message, extra);
  }

  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    return this.inner.send(message, options);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

export interface StdioLocal {
  mode: 'local';
  store: Store;
  token: string;
  allowPrivateDestinations: boolean;
}

export interface StdioProxy {
  mode: 'proxy';
  /** The svc server's address; tools go to `<url>/api/mcp`. */
  url: string;
  token: string;
}

/** The MCP endpoint of a server address (`https://svc.example.com` or `.../api/mcp`). */
export function mcpEndpoint(url: string): URL {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new AppError('bad_request', `--url: ${JSON.stringify(url)} is not a URL`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new AppError('bad_request', '--url must be an http(s) URL');
  if (!/\/api\/mcp\/?$/.test(u.pathname)) u.pathname = `${u.pathname.replace(/\/+$/, '')}/api/mcp`;
  return u;
}

/**
 * `svc plugin run`: an MCP server on stdin/stdout. Local mode serves the
 * registry of /api/mcp (createMcpServer, the same policy and audit) for the
 * token's grant; proxy mode forwards tools/list and tools/call to a remote
 * svc with the token. Both serve the skills as prompts and through the
 * skills extension. Resolves when stdin closes.
 */
export async function runStdio(target: StdioLocal | StdioProxy, logger: Logger, stdioSkills: StdioSkills): Promise<void> {
  const skills = stdioSkills.docs;
  const catalog = await loadSkillCatalog(stdioSkills.root, {
    strict: true,
    onWarning: (w) => logger.warn({ path: w.path }, `skill: ${w.message}`),
  });
  let closed!: () => void;
  const done = new Promise<void>((resolve) => (closed = resolve));
  let factory: () => Promise<McpServer> | McpServer;
  let check: (() => Promise<AppError | null>) | null = null;
  let finish: () => Promise<void>;

  if (target.mode === 'local') {
    const grant: Grant = await grantForToken(target.store, target.token);
    const deps = { store: target.store, membership: new SegmentMembership(target.store), allowPrivateDestinations: target.allowPrivateDestinations, logger };
    check = async () => {
      try {
        await grantForToken(target.store, target.token);
        return null;
      } catch (err) {
        if (err instanceof AppError) return err;
        throw err;
      }
    };
    factory = () => {
      const server = createMcpServer(grant, deps);
      registerSkillPrompts(server, skills);
      catalog.attach(server);
      advertiseStaticLists(server);
      return server;
    };
    finish = async () => undefined;
    logger.info({ site: grant.siteId, scope: grant.scope, token_id: grant.tokenId }, 'svc plugin run: serving local tools over stdio');
  } else {
    const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
    const endpoint = mcpEndpoint(target.url);
    const remote = new Client({ name: 'svc-plugin-proxy', version: VERSION }, { versionNegotiation: { mode: 'legacy' } });
    try {
      await remote.connect(new StreamableHTTPClientTransport(endpoint, { requestInit: { headers: { authorization: `Bearer ${target.token}` } } }));
    } catch (err) {
      throw new AppError('unauthorized', `could not open an MCP session with ${endpoint.origin}: ${(err as Error).message}`);
    }
    factory = () => {
      const server = new McpServer({ name: 'svc', version: VERSION }, { capabilities: { tools: {} }, instructions: remote.getInstructions() });
      server.server.setRequestHandler('tools/list', (req) => remote.listTools(req.params));
      server.server.setRequestHandler('tools/call', async (req) => remote.callTool(req.params));
      registerSkillPrompts(server, skills);
      catalog.attach(server);
      advertiseStaticLists(server);
      return server;
    };
    finish = () => remote.close();
    logger.info({ remote: endpoint.origin }, 'svc plugin run: proxying tools over stdio');
  }

  // A batch line is answered -32600 (id null: a batch has no single id) and never reaches the server.
  const stdio: StdioServerTransport = new StdioServerTransport(
    process.stdin.pipe(
      new BatchGate(() => {
        stdio.send(rpcErrorMessage(batchRefusal(), null)).catch(() => undefined);
      }),
    ),
  );
  const transport = new CheckedTransport(stdio, check, () => closed());
  const handle = serveStdio(factory, {
    transport,
    onerror: (err) => logger.warn({ err: { message: err.message, name: err.name } }, 'stdio MCP error'),
  });
  process.stdin.once('end', () => closed());
  await done;
  await handle.close().catch(() => undefined);
  await finish().catch(() => undefined);
  logger.info('svc plugin run: stdin closed; exiting');
}

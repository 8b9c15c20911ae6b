import { McpServer, type CallToolResult, type ListToolsResult } from '@modelcontextprotocol/server';
import type { Logger } from 'pino';
import type { Store } from '../store/store.js';
import type { SegmentMembership } from '../domain/segments/membership.js';
import { SegmentsService } from '../domain/segments/service.js';
import { VERSION } from '../version.js';
import type { Grant } from './grant.js';
import type { ToolContext } from './tool.js';
import type { AuditOutcome } from '../store/audit.js';
import { auditUnknownTool, callTool } from './call.js';
import { cachedOutput, deferredInput } from './schema.js';
import { annotationsOf, describeTool, SERVER_INSTRUCTIONS } from './describe.js';
import { ALL_TOOLS, cachedListing, compactListed, isListed, type ListingFilter } from './listing.js';
import { TOOLS } from './tools/index.js';

export { annotationsOf, describeTool };

export interface McpDeps {
  store: Store;
  membership: SegmentMembership;
  allowPrivateDestinations: boolean;
  logger: Logger;
  /** The HTTP request's id (X-Request-Id), recorded in the audit row of each call. */
  requestId?: string | undefined;
  /** Told how each tools/call ended (for /metrics). */
  onToolCall?: ((tool: string, outcome: AuditOutcome, durationMs: number) => void) | undefined;
}

/** What every tool handler of one grant works with (an MCP request, or a report link opened). */
export function toolContext(grant: Grant, deps: McpDeps): ToolContext {
  return {
    store: deps.store,
    grant,
    pii: grant.scope === 'admin',
    segments: new SegmentsService(deps.store, deps.membership),
    membership: deps.membership,
    allowPrivateDestinations: deps.allowPrivateDestinations,
    tools: TOOLS,
    requestId: deps.requestId,
    onToolCall: deps.onToolCall,
  };
}

/** Every tool name of the registry (a tools/call naming another leaves an audit row of its own). */
const REGISTERED = new Set(TOOLS.map((t) => t.name));

const schemas = new Map<string, { input: ReturnType<typeof deferredInput>; output: ReturnType<typeof cachedOutput> }>();

/** The protected handler accessor of the SDK's protocol class (read once, to wrap tools/list). */
type HandlerAccess = { _getRequestHandler(method: string): ((request: unknown, ctx: unknown) => Promise<unknown>) | undefined };

/**
 * Advertises the tools, prompts and resources the server registered as fixed
 * lists: nothing here ever sends a list_changed notification, and the HTTP
 * endpoint has no stream to send one on (GET /api/mcp answers 405), while the
 * SDK advertises `listChanged: true` for whatever is registered. Call after
 * the last registration, before connecting.
 */
export function advertiseStaticLists(server: McpServer): void {
  const caps = server.server.getCapabilities();
  server.server.registerCapabilities({
    ...(caps.tools ? { tools: { listChanged: false } } : {}),
    ...(caps.prompts ? { prompts: { listChanged: false } } : {}),
    ...(caps.resources ? { resources: { listChanged: false, subscribe: false } } : {}),
  });
}

/**
 * A fresh MCP server for one request of one token: every tool of the registry,
 * each behind the policy. tools/list shows the tools `listing` and the token's
 * own area and read-only restrictions leave (see isListed); every tool stays
 * callable (tools_search finds the others), the policy alone decides a call.
 */
export function createMcpServer(grant: Grant, deps: McpDeps, listing: ListingFilter = ALL_TOOLS): McpServer {
  const server = new McpServer(
    { name: 'svc', version: VERSION },
    { instructions: SERVER_INSTRUCTIONS },
  );
  const ctx = toolContext(grant, deps);
  for (const tool of TOOLS) {
    let s = schemas.get(tool.name);
    if (!s) {
      s = { input: deferredInput(tool.input), output: cachedOutput(tool.output) };
      schemas.set(tool.name, s);
    }
    server.registerTool(
      tool.name,
      { title: tool.title, description: describeTool(tool), inputSchema: s.input, outputSchema: s.output, annotations: annotationsOf(tool) },
      (args) => callTool(tool, ctx, args, deps.logger),
    );
  }
  const access = server.server as unknown as HandlerAccess;
  const innerCall = access._getRequestHandler('tools/call');
  if (!innerCall) throw new Error('the MCP SDK registered no tools/call handler');
  server.server.setRequestHandler('tools/call', async (request, reqCtx) => {
    const name = request.params.name;
    if (!REGISTERED.has(name)) await auditUnknownTool(ctx, name, deps.logger);
    return (await innerCall(request, reqCtx)) as CallToolResult;
  });
  const innerList = access._getRequestHandler('tools/list');
  if (!innerList) throw new Error('the MCP SDK registered no tools/list handler');
  server.server.setRequestHandler('tools/list', (request, reqCtx) =>
    cachedListing(grant, listing, async () => {
      const all = (await innerList(request, reqCtx)) as ListToolsResult;
      const listed = new Set(TOOLS.filter((t) => isListed(t, grant, listing)).map((t) => t.name));
      const tools = all.tools.filter((t) => listed.has(t.name));
      return { ...all, tools: tools.map((t) => compactListed(t, listing.outputSchemas)) };
    }),
  );
  advertiseStaticLists(server);
  return server;
}

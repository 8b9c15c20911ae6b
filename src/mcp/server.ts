import { McpServer, type CallToolResult, type ListToolsResult, type ToolAnnotations } from '@modelcontextprotocol/server';
import type { Logger } from 'pino';
import type { Store } from '../store/store.js';
import type { SegmentMembership } from '../domain/segments/membership.js';
import { SegmentsService } from '../domain/segments/service.js';
import { VERSION } from '../version.js';
import type { Grant } from '../domain/access/grant.js';
import type { ToolContext, ToolDef } from './tool.js';
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

/** What registerTool is given for a tool: schemas converted once, description and annotations derived once, per process. */
interface Registration {
  tool: ToolDef;
  config: { title: string; description: string; inputSchema: ReturnType<typeof deferredInput>; outputSchema: ReturnType<typeof cachedOutput>; annotations: ToolAnnotations };
}

let registrations: Map<string, Registration> | null = null;

function registrationsOf(): Map<string, Registration> {
  registrations ??= new Map(
    TOOLS.map((tool) => [
      tool.name,
      {
        tool,
        config: { title: tool.title, description: describeTool(tool), inputSchema: deferredInput(tool.input), outputSchema: cachedOutput(tool.output), annotations: annotationsOf(tool) },
      },
    ]),
  );
  return registrations;
}

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
 * A fresh MCP server for one request of one token (the SDK's stateless
 * handler serves each request with its own instance): every tool of the
 * registry, each behind the policy, or only `only` when the request is known
 * to be a tools/call of that registered tool (the others would never be
 * looked at). tools/list shows the tools `listing` and the token's own area
 * and read-only restrictions leave (see isListed), from the listing cached
 * per restriction set; every tool stays callable (tools_search finds the
 * others), the policy alone decides a call.
 */
export function createMcpServer(grant: Grant, deps: McpDeps, listing: ListingFilter = ALL_TOOLS, only: string | null = null): McpServer {
  const server = new McpServer({ name: 'svc', version: VERSION }, { instructions: SERVER_INSTRUCTIONS });
  const ctx = toolContext(grant, deps);
  const regs = registrationsOf();
  const one = only === null ? undefined : regs.get(only);
  for (const { tool, config } of one ? [one] : regs.values()) {
    server.registerTool(tool.name, config, (args) => callTool(tool, ctx, args, deps.logger));
  }
  const access = server.server as unknown as HandlerAccess;
  const innerCall = access._getRequestHandler('tools/call');
  if (!innerCall) throw new Error('the MCP SDK registered no tools/call handler');
  server.server.setRequestHandler('tools/call', async (request, reqCtx) => {
    const name = request.params.name;
    if (!REGISTERED.has(name)) await auditUnknownTool(ctx, name, deps.logger);
    return (await innerCall(request, reqCtx)) as CallToolResult;
  });
  server.server.setRequestHandler('tools/list', () => listingFor(grant, listing));
  advertiseStaticLists(server);
  return server;
}

/**
 * The SDK's own tools/list of every tool (its JSON Schema conversion of the
 * same registrations), filtered for a restriction set and compacted. The
 * handlers of this server are never called.
 */
async function sdkListing(grant: Grant, listing: ListingFilter): Promise<ListToolsResult> {
  const server = new McpServer({ name: 'svc', version: VERSION });
  for (const { tool, config } of registrationsOf().values()) server.registerTool(tool.name, config, () => ({ content: [] }));
  const innerList = (server.server as unknown as HandlerAccess)._getRequestHandler('tools/list');
  if (!innerList) throw new Error('the MCP SDK registered no tools/list handler');
  const all = (await innerList({ method: 'tools/list', params: {} }, {})) as ListToolsResult;
  const listed = new Set(TOOLS.filter((t) => isListed(t, grant, listing)).map((t) => t.name));
  return { ...all, tools: all.tools.filter((t) => listed.has(t.name)).map((t) => compactListed(t, listing.outputSchemas)) };
}

/**
 * The tools/list result of a grant and listing filter: computed once per
 * restriction set (the token's areas and read-only flag, the connection's
 * filter) and cached; the registry does not change while the process runs.
 */
export function listingFor(grant: Grant, listing: ListingFilter = ALL_TOOLS): Promise<ListToolsResult> {
  return cachedListing(grant, listing, () => sdkListing(grant, listing));
}

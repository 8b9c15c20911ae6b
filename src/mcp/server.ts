import { McpServer, type ToolAnnotations } from '@modelcontextprotocol/server';
import type { Logger } from 'pino';
import type { Store } from '../store/store.js';
import type { SegmentMembership } from '../domain/segments/membership.js';
import { SegmentsService } from '../domain/segments/service.js';
import { VERSION } from '../version.js';
import type { Grant } from './grant.js';
import { callTool } from './call.js';
import { cachedOutput, deferredInput } from './schema.js';
import type { ToolDef } from './tool.js';
import { TOOLS } from './tools/index.js';

export interface McpDeps {
  store: Store;
  membership: SegmentMembership;
  allowPrivateDestinations: boolean;
  logger: Logger;
}

/** tools/list annotations, derived from the tool's flags. */
export function annotationsOf(tool: ToolDef): ToolAnnotations {
  return {
    title: tool.title,
    readOnlyHint: !tool.flags.changesData,
    destructiveHint: tool.flags.changesData && tool.flags.destructive === true,
    idempotentHint: tool.flags.idempotent === true,
    openWorldHint: tool.flags.openWorld === true,
  };
}

/** The description shown in tools/list: what the tool does and what a token needs to call it. */
export function describeTool(tool: ToolDef): string {
  const needs = [`Requires the ${tool.scope} scope`];
  if (tool.flags.changesData) needs.push('refused to read-only tokens');
  if (tool.flags.destructive) needs.push('refused when destructive tools are blocked');
  if (tool.flags.issuesCredentials) needs.push('only for tokens minted with credential issuance allowed');
  if (tool.flags.approvesOrPublishes) needs.push('refused to propose-only tokens');
  return `${tool.description} ${needs.join('; ')}. Area: ${tool.area}.`;
}

const schemas = new Map<string, { input: ReturnType<typeof deferredInput>; output: ReturnType<typeof cachedOutput> }>();

/** A fresh MCP server for one request of one token: every tool of the registry, each behind the policy. */
export function createMcpServer(grant: Grant, deps: McpDeps): McpServer {
  const server = new McpServer(
    { name: 'svc', version: VERSION },
    { instructions: 'svc tools: profiles, segments, leads, conversions, events, analytics, webhooks, recommendations, ad platforms and access of one site. Each tool states the scope it needs.' },
  );
  const ctx = {
    store: deps.store,
    grant,
    pii: grant.scope === 'admin',
    segments: new SegmentsService(deps.store, deps.membership),
    membership: deps.membership,
    allowPrivateDestinations: deps.allowPrivateDestinations,
  };
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
  return server;
}

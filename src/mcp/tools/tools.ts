import { z } from 'zod';
import { AppError } from '../../errors/app-error.js';
import { policyFacts } from '../call.js';
import { describeTool } from '../describe.js';
import { MCP_SCOPES } from '../../domain/access/grant.js';
import { decide } from '../../domain/access/policy.js';
import { defineTool, type ToolContext, type ToolDef } from '../tool.js';

const area = 'tools';

/** Lower-case words of a text: letters and digits; tool names split at underscores. */
export function words(text: string): string[] {
  return text.toLowerCase().split(/[^a-z0-9]+/).filter((w) => w.length > 0);
}

/**
 * Relevance of a tool to query words: per word, 6 for a whole word of the
 * name, 3 for part of the name, 2 for the title, 1 for the description; 0 when
 * no word matches anything.
 */
export function relevance(tool: ToolDef, query: readonly string[]): number {
  const nameWords = words(tool.name);
  const name = tool.name.toLowerCase();
  const title = tool.title.toLowerCase();
  const desc = tool.description.toLowerCase();
  let score = 0;
  for (const w of query) {
    if (nameWords.includes(w)) score += 6;
    else if (name.includes(w)) score += 3;
    if (title.includes(w)) score += 2;
    if (desc.includes(w)) score += 1;
  }
  return score;
}

const flagsView = z.object({
  read_only: z.boolean().describe('Changes nothing.'),
  destructive: z.boolean(),
  issues_credentials: z.boolean(),
  approves_or_publishes: z.boolean(),
  idempotent: z.boolean(),
  open_world: z.boolean(),
});

function flagsOf(t: ToolDef): z.input<typeof flagsView> {
  return {
    read_only: !t.flags.changesData,
    destructive: t.flags.destructive === true,
    issues_credentials: t.flags.issuesCredentials === true,
    approves_or_publishes: t.flags.approvesOrPublishes === true,
    idempotent: t.flags.idempotent === true,
    open_world: t.flags.openWorld === true,
  };
}

function allowed(ctx: ToolContext, t: ToolDef): { allowed: boolean; refusal: string | null } {
  const d = decide(ctx.grant, policyFacts(t));
  return d.allowed ? { allowed: true, refusal: null } : { allowed: false, refusal: d.message };
}

export const toolsSearch = defineTool({
  name: 'tools_search',
  title: 'Search the tools',
  description:
    'Finds tools by words in their names, titles and descriptions, best match first (a whole word of the name counts most), with area, scope, flags and whether this token may call each. Start here instead of listing every tool; then tools_describe for one tool\'s schemas.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({
    query: z.string().min(1).max(200).describe('Words to look for, e.g. "hot accounts" or "publish variant".'),
    area: z.string().min(1).max(64).optional().describe('Only tools of this product area.'),
    read_only: z.boolean().default(false).describe('Only tools that change nothing.'),
    limit: z.number().int().min(1).max(50).default(10).describe('How many, 1 to 50 (default 10).'),
  }),
  output: z.object({
    total_tools: z.number().int().describe('Tools on this server.'),
    tools: z.array(
      z.object({
        name: z.string(),
        title: z.string(),
        description: z.string(),
        area: z.string(),
        scope: z.enum(MCP_SCOPES),
        flags: flagsView,
        allowed: z.boolean().describe('Whether the policy lets this token call it.'),
        score: z.number().describe('Relevance; higher is better.'),
      }),
    ),
  }),
  handler: (ctx, input) => {
    const q = words(input.query);
    if (q.length === 0) throw new AppError('validation_failed', 'query: no letters or digits to search for', { field: 'query' });
    const hits = ctx.tools
      .filter((t) => (input.area === undefined || t.area === input.area) && (!input.read_only || !t.flags.changesData))
      .map((t) => ({ t, score: relevance(t, q) }))
      .filter((h) => h.score > 0)
      .sort((a, b) => b.score - a.score || a.t.name.localeCompare(b.t.name))
      .slice(0, input.limit);
    return {
      total_tools: ctx.tools.length,
      tools: hits.map(({ t, score }) => ({
        name: t.name,
        title: t.title,
        description: describeTool(t),
        area: t.area,
        scope: t.scope,
        flags: flagsOf(t),
        allowed: allowed(ctx, t).allowed,
        score,
      })),
    };
  },
});

export const toolsDescribe = defineTool({
  name: 'tools_describe',
  title: 'Describe one tool',
  description: "One tool's full input and output JSON Schema, its flags, area and required scope, and whether this token may call it (and if not, why).",
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ name: z.string().min(1).max(100).describe('Exact tool name, e.g. accounts_hot.') }),
  output: z.object({
    name: z.string(),
    title: z.string(),
    description: z.string(),
    area: z.string(),
    scope: z.enum(MCP_SCOPES),
    flags: flagsView,
    allowed: z.boolean(),
    refusal: z.string().nullable().describe('Why this token may not call it; null when allowed.'),
    input_schema: z.record(z.string(), z.unknown()).describe('JSON Schema (draft 2020-12) of the arguments.'),
    output_schema: z.record(z.string(), z.unknown()).describe('JSON Schema (draft 2020-12) of the structured result.'),
  }),
  handler: (ctx, input) => {
    const t = ctx.tools.find((x) => x.name === input.name);
    if (!t) throw new AppError('not_found', `no tool ${input.name}; find one with tools_search`, { field: 'name' });
    return {
      name: t.name,
      title: t.title,
      description: describeTool(t),
      area: t.area,
      scope: t.scope,
      flags: flagsOf(t),
      ...allowed(ctx, t),
      input_schema: z.toJSONSchema(t.input, { io: 'input', target: 'draft-2020-12' }) as Record<string, unknown>,
      output_schema: z.toJSONSchema(t.output, { io: 'output', target: 'draft-2020-12' }) as Record<string, unknown>,
    };
  },
});

import type { ToolAnnotations } from '@modelcontextprotocol/server';
import type { ToolDef } from './tool.js';

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

const SCOPE_NOTE = /\bScope: (read|write|admin)\./;

/** The scope a description names ("Scope: read."), or null when it names none. */
export function scopeNamedIn(description: string): string | null {
  return SCOPE_NOTE.exec(description)?.[1] ?? null;
}

/**
 * The description shown in tools/list and by tools_search: what the tool does,
 * "Scope: <scope>." (appended here unless the tool's own text already says it;
 * the registry refuses a text naming another scope), and what else a token needs.
 */
export function describeTool(tool: ToolDef): string {
  const needs = [`Requires the ${tool.scope} scope`];
  if (tool.flags.changesData) needs.push('refused to read-only tokens');
  if (tool.flags.destructive) needs.push('refused when destructive tools are blocked');
  if (tool.flags.issuesCredentials) needs.push('only for tokens minted with credential issuance allowed');
  if (tool.flags.approvesOrPublishes) needs.push('refused to propose-only tokens');
  if (tool.flags.changesExposure) needs.push('for propose-only tokens, changes to who sees what are filed as drafts awaiting approval');
  const scope = scopeNamedIn(tool.description) === null ? ` Scope: ${tool.scope}.` : '';
  return `${tool.description}${scope} ${needs.join('; ')}. Area: ${tool.area}.`;
}

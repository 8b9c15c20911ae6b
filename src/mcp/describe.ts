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
 * The server's instructions (sent once, in the initialize result): what every
 * tool description would otherwise repeat. Which tools a read-only token or a
 * token blocking destructive tools is refused follows from the annotations.
 */
export const SERVER_INSTRUCTIONS =
  'svc tools: profiles, segments, leads, conversions, events, analytics, webhooks, recommendations, ad platforms and access of one site. ' +
  'Each tool states the scope it needs ("Scope: read.", "write" or "admin"); a tool\'s area is the first word of its name unless its description names another. ' +
  'A read-only token is refused every tool whose readOnlyHint is false, and a token that blocks destructive tools every tool whose destructiveHint is true.';

/**
 * The description shown in tools/list and by tools_search: what the tool does,
 * "Scope: <scope>." (appended here unless the tool's own text already says it;
 * the registry refuses a text naming another scope), what else a token needs
 * that the annotations do not show (credential issuance, propose-only), and
 * "Area: <area>." only when the name does not start with `<area>_`. What
 * read-only and destructive-blocking tokens are refused is said once, in
 * SERVER_INSTRUCTIONS, from the readOnlyHint and destructiveHint annotations.
 */
export function describeTool(tool: ToolDef): string {
  const needs: string[] = [];
  if (tool.flags.issuesCredentials) needs.push('Only for tokens minted with credential issuance allowed.');
  if (tool.flags.approvesOrPublishes) needs.push('Refused to propose-only tokens.');
  if (tool.flags.changesExposure) needs.push('Propose-only tokens: filed as drafts awaiting approval (inbox item; inbox_approve).');
  const scope = scopeNamedIn(tool.description) === null ? ` Scope: ${tool.scope}.` : '';
  const area = tool.name.startsWith(`${tool.area}_`) ? '' : ` Area: ${tool.area}.`;
  return [`${tool.description}${scope}`, ...needs].join(' ') + area;
}

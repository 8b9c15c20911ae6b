import { scopeRank, type McpScope, type Restrictions } from './grant.js';

/** The facts about a tool the policy reads: its area, the scope it needs and what it does. */
export interface ToolPolicyFacts {
  name: string;
  area: string;
  scope: McpScope;
  changesData: boolean;
  destructive: boolean;
  issuesCredentials: boolean;
  approvesOrPublishes: boolean;
  /** Changes who sees what (segments, placements, zone defaults, running tests, overrides). */
  changesExposure: boolean;
}

export type RefusalReason = 'scope' | 'read_only' | 'block_destructive' | 'area' | 'credential_issuance' | 'propose_only';

/**
 * `draft`: the call runs, but whatever in it would change who sees what is
 * filed as a draft awaiting a person's approval instead of applied.
 */
export type Decision =
  | { allowed: true; draft?: true }
  | { allowed: false; reason: RefusalReason; missing: string; message: string };

/**
 * The one decision of every tools/call, made from the token and the tool's
 * data before any argument is looked at. Pure: no I/O, no clock.
 *
 * Order: product area, scope, read-only, block-destructive, credential
 * issuance, propose-only. A tool that changes data is never allowed to a read
 * scope, whatever the tool's declared scope says. Under propose-only, approve
 * and publish tools are refused, and tools that change who sees what are
 * allowed as drafts (their changes wait for a person's approval).
 */
export function decide(token: { scope: McpScope; restrictions: Restrictions }, tool: ToolPolicyFacts): Decision {
  const r = token.restrictions;
  if (r.areas.length > 0 && !r.areas.includes(tool.area)) {
    return refuse('area', `area:${tool.area}`, `${tool.name} belongs to area ${tool.area}; this token is limited to ${r.areas.join(', ')}`);
  }
  const needed: McpScope = tool.changesData && scopeRank(tool.scope) < scopeRank('write') ? 'write' : tool.scope;
  if (scopeRank(token.scope) < scopeRank(needed)) {
    return refuse('scope', `scope:${needed}`, `${tool.name} requires the ${needed} scope; this token has ${token.scope}`);
  }
  if (r.read_only && tool.changesData) {
    return refuse('read_only', 'restriction:not read-only', `${tool.name} changes data; this token is read-only`);
  }
  if (r.block_destructive && tool.destructive) {
    return refuse('block_destructive', 'restriction:destructive tools allowed', `${tool.name} is destructive; this token blocks destructive tools`);
  }
  if (tool.issuesCredentials && !r.allow_credential_issuance) {
    return refuse('credential_issuance', 'restriction:allow credential issuance', `${tool.name} hands out access; this token was not minted with credential issuance allowed`);
  }
  if (r.propose_only && tool.approvesOrPublishes) {
    return refuse('propose_only', 'restriction:not propose-only', `${tool.name} approves or publishes; this token may only propose`);
  }
  if (r.propose_only && tool.changesExposure) return { allowed: true, draft: true };
  return { allowed: true };
}

function refuse(reason: RefusalReason, missing: string, message: string): Decision {
  return { allowed: false, reason, missing, message };
}

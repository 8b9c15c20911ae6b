import type { z } from 'zod';
import type { Store } from '../store/store.js';
import type { SegmentsService } from '../domain/segments/service.js';
import type { SegmentMembership } from '../domain/segments/membership.js';
import type { Grant, McpScope } from '../domain/access/grant.js';

/** What a tool handler works with: the store, the caller's grant and the shared domain services. */
export interface ToolContext {
  store: Store;
  grant: Grant;
  /** Whether plaintext personal data (email, phone, name, trait values) may appear in output: admin scope only. */
  pii: boolean;
  segments: SegmentsService;
  membership: SegmentMembership;
  allowPrivateDestinations: boolean;
  /** Every tool of the server (tools_search and tools_describe read it). */
  tools: readonly ToolDef[];
  /** The HTTP request's id, for the audit row (none over stdio). */
  requestId?: string | undefined;
  /** Told how each call ended (for /metrics). */
  onToolCall?: ((tool: string, outcome: 'ok' | 'error' | 'refused' | 'invalid', durationMs: number) => void) | undefined;
  /**
   * Set by the policy for a propose-only token calling a tool that changes who
   * sees what: the handler files those changes as drafts awaiting approval.
   */
  drafts?: boolean;
}

export interface ToolFlags {
  /** Writes anything (never allowed to a read scope or a read-only token). */
  changesData: boolean;
  /** Deletes, merges, erases or revokes. */
  destructive?: boolean;
  /** Hands out access (link tokens, invites). */
  issuesCredentials?: boolean;
  /** Approves or publishes something a human proposed (refused to propose-only tokens). */
  approvesOrPublishes?: boolean;
  /** Changes who sees what: segments, placements, zone defaults, running tests, overrides (filed as drafts for propose-only tokens). */
  changesExposure?: boolean;
  /** Calling again with the same arguments has no further effect. */
  idempotent?: boolean;
  /** Talks to systems outside svc (webhook destinations). */
  openWorld?: boolean;
}

/** A tool as data: the registry, the policy and tools/list read these fields; the handler runs only after both said yes. */
export interface ToolDef<I extends z.ZodObject = z.ZodObject, O extends z.ZodObject = z.ZodObject> {
  name: string;
  title: string;
  description: string;
  area: string;
  scope: McpScope;
  flags: ToolFlags;
  input: I;
  output: O;
  handler: (ctx: ToolContext, input: z.output<I>) => z.input<O> | Promise<z.input<O>>;
}

/** Declares a tool; keeps the handler's input and output types tied to the schemas. */
export function defineTool<I extends z.ZodObject, O extends z.ZodObject>(def: ToolDef<I, O>): ToolDef {
  return def as unknown as ToolDef;
}

import type { CallToolResult } from '@modelcontextprotocol/server';
import type { Logger } from 'pino';
import { AppError, toAppError } from '../errors/app-error.js';
import { nulError, validationError } from '../errors/validation.js';
import type { AuditOutcome } from '../store/audit.js';
import { decide } from '../domain/access/policy.js';
import type { ToolContext, ToolDef } from './tool.js';

/** The policy facts of a tool (defaults of the optional flags made explicit). */
export function policyFacts(tool: ToolDef) {
  return {
    name: tool.name,
    area: tool.area,
    scope: tool.scope,
    changesData: tool.flags.changesData,
    destructive: tool.flags.destructive === true,
    issuesCredentials: tool.flags.issuesCredentials === true,
    approvesOrPublishes: tool.flags.approvesOrPublishes === true,
    changesExposure: tool.flags.changesExposure === true,
  };
}

/** The error of a failed tool call, as its result's text carries it. */
export interface ToolError {
  code: string;
  message: string;
  details: Record<string, unknown>;
}

/**
 * A failed call's result: `isError` with the HTTP error body's JSON
 * (`{"error":{code,message,details}}`) as its text, and no structuredContent,
 * which the tool's outputSchema would reject (1.x clients and the Inspector
 * validate it even on errors and would throw away our code and message).
 */
function toolError(e: AppError): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(e.toBody()) }] };
}

/** The error a failed result carries (null for a result that did not fail, or one that is not ours). */
export function toolErrorOf(result: CallToolResult): ToolError | null {
  if (!result.isError) return null;
  const first = result.content[0];
  if (first?.type !== 'text') return null;
  try {
    const parsed = JSON.parse(first.text) as { error?: ToolError };
    return parsed.error && typeof parsed.error.code === 'string' ? parsed.error : null;
  } catch {
    return null;
  }
}

/**
 * Runs one tools/call: the policy first (before the arguments are looked at),
 * then validation with the tool's zod schema, then the handler. Every outcome
 * is a tool result; every call leaves one audit row (never argument values).
 */
export async function callTool(tool: ToolDef, ctx: ToolContext, args: unknown, logger: Logger): Promise<CallToolResult> {
  const started = performance.now();
  let outcome: AuditOutcome = 'ok';
  let errorCode: string | null = null;
  let result: CallToolResult;
  const decision = decide(ctx.grant, policyFacts(tool));
  if (!decision.allowed) {
    outcome = 'refused';
    errorCode = 'insufficient_scope';
    result = toolError(new AppError('insufficient_scope', decision.message, { missing: decision.missing, reason: decision.reason, tool: tool.name }));
  } else {
    const nul = nulError(args);
    const parsed = nul ? null : tool.input.safeParse(args ?? {});
    if (!parsed?.success) {
      const e = nul ?? validationError(parsed!.error);
      outcome = 'invalid';
      errorCode = e.code;
      result = toolError(e);
    } else {
      try {
        const raw = await tool.handler(decision.draft ? { ...ctx, drafts: true } : ctx, parsed.data);
        const checked = tool.output.safeParse(raw);
        if (!checked.success) throw new Error(`${tool.name} produced output outside its schema: ${checked.error.issues[0]?.message ?? ''}`);
        const out = raw as Record<string, unknown>;
        result = { content: [{ type: 'text', text: JSON.stringify(out) }], structuredContent: out };
      } catch (err) {
        if (!(err instanceof AppError)) {
          logger.error({ err: { message: (err as Error)?.message, name: (err as Error)?.name }, tool: tool.name }, 'MCP tool failed');
        }
        const e = toAppError(err);
        outcome = 'error';
        errorCode = e.code;
        result = toolError(e);
      }
    }
  }
  const durationMs = performance.now() - started;
  ctx.onToolCall?.(tool.name, outcome, durationMs);
  await recordCall(ctx, tool.name, outcome, errorCode, durationMs, logger);
  return result;
}

/** Longest tool name an audit row keeps of a call naming a tool that does not exist. */
const UNKNOWN_NAME_MAX = 128;

/**
 * The audit row of a tools/call naming no tool of the registry (probing is
 * what an audit log is for): outcome `invalid`, error code `not_found`, the
 * name as given (cut to 128 characters). The caller still gets the SDK's
 * JSON-RPC error -32602. Not counted in /metrics, whose labels are tool names.
 */
export async function auditUnknownTool(ctx: ToolContext, name: unknown, logger: Logger): Promise<void> {
  const given = typeof name === 'string' ? name : JSON.stringify(name ?? null);
  await recordCall(ctx, given.slice(0, UNKNOWN_NAME_MAX), 'invalid', 'not_found', 0, logger);
}

/** One audit row (never argument values); a failed audit write is logged, never the caller's error. */
async function recordCall(ctx: ToolContext, tool: string, outcome: AuditOutcome, errorCode: string | null, durationMs: number, logger: Logger): Promise<void> {
  try {
    await ctx.store.write((tx) =>
      tx.audit.record({
        siteId: ctx.grant.siteId,
        tokenId: ctx.grant.tokenId,
        tool,
        outcome,
        errorCode,
        durationMs,
        at: Date.now(),
        requestId: ctx.requestId ?? null,
      }),
    );
  } catch (err) {
    logger.error({ err: { message: (err as Error)?.message }, tool }, 'MCP audit write failed');
  }
}

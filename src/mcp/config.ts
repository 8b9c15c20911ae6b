import { z } from 'zod';
import type { RatePolicy } from '../http/rate-limit.js';
import { AppError } from '../errors/app-error.js';

const positiveInt = z.coerce.number().int().positive();

/** MCP endpoint settings from the environment: SVC_MCP_RATE requests per minute per token (default 600), burst SVC_MCP_BURST (default 120). */
export function mcpRatePolicy(env: NodeJS.ProcessEnv = process.env): RatePolicy {
  const parsed = z
    .object({
      SVC_MCP_RATE: positiveInt.max(1_000_000).default(600),
      SVC_MCP_BURST: positiveInt.max(1_000_000).default(120),
    })
    .safeParse({ SVC_MCP_RATE: env.SVC_MCP_RATE || undefined, SVC_MCP_BURST: env.SVC_MCP_BURST || undefined });
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new AppError('validation_failed', `${String(issue.path[0])}: ${issue.message}`, { field: String(issue.path[0]) });
  }
  return { name: 'mcp', rate: parsed.data.SVC_MCP_RATE, windowMs: 60_000, burst: parsed.data.SVC_MCP_BURST };
}

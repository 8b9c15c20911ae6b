import { z } from 'zod';
import { configSchema, envName, type Config } from '../config.js';
import { AppError } from '../errors/app-error.js';

/** Flags whose name is not the kebab-case of their setting. */
const FLAG_OF: Partial<Record<keyof Config, string>> = { dataDir: '--data' };

/** Settings whose value is never repeated back (a database URL may hold a password). */
const SECRET: ReadonlySet<keyof Config> = new Set(['databaseUrl']);

function flagOf(key: keyof Config): string {
  return FLAG_OF[key] ?? `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

interface JsonSchemaLike {
  type?: string;
  minimum?: number;
  exclusiveMinimum?: number;
  maximum?: number;
  enum?: unknown[];
  anyOf?: JsonSchemaLike[];
  format?: string;
}

/** What a setting accepts, in words, read from its own schema (its JSON Schema form): null for free-form strings. */
function accepts(key: keyof Config): string | null {
  const s = z.toJSONSchema(configSchema.shape[key], { io: 'input', unrepresentable: 'any' }) as JsonSchemaLike;
  const choices = [...(s.enum ?? []), ...(s.anyOf ?? []).flatMap((a) => a.enum ?? [])];
  if (choices.length > 0) return `must be one of ${choices.join(', ')}`;
  if (s.type === 'integer' || s.type === 'number') {
    const whole = s.type === 'integer';
    const what = whole ? 'a whole number' : 'a number';
    // A whole number's own range (±2^53) is not a bound worth stating.
    const bound = (v: number | undefined) => (v !== undefined && Math.abs(v) < Number.MAX_SAFE_INTEGER ? v : undefined);
    const lows = [bound(s.minimum), whole && s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : undefined].filter((v) => v !== undefined);
    const min = lows.length ? Math.max(...lows) : undefined;
    const above = min === undefined ? s.exclusiveMinimum : undefined;
    const max = bound(s.maximum);
    if (min !== undefined && max !== undefined) return `must be ${what} from ${min} to ${max}`;
    if (min !== undefined) return `must be ${what} of at least ${min}`;
    if (above !== undefined) return `must be ${what} above ${above}`;
    if (max !== undefined) return `must be ${what} of at most ${max}`;
    return `must be ${what}`;
  }
  if (s.format === 'uri') return 'must be an absolute URL';
  return null;
}

/** The words for a failed string setting: ours when the schema carries a message, else from the issue's kind. */
function stringProblem(issue: z.core.$ZodIssue): string {
  if (!/^(Invalid|Too (small|big)|Expected)\b/.test(issue.message)) return issue.message; // a message the schema gives
  if (issue.code === 'too_small' && issue.minimum === 1) return 'must not be empty';
  if (issue.code === 'invalid_format' && issue.format === 'regex') return `must match ${(issue as { pattern?: string }).pattern ?? 'its pattern'}`;
  return issue.message;
}

/**
 * A setting that failed validation as a one-line usage error in our words,
 * naming where the value came from: the flag when one was given, else its
 * SVC_* variable (`--port: "abc" must be a whole number from 0 to 65535`).
 */
export function configError(error: z.ZodError, flags: Partial<Record<keyof Config, unknown>>): AppError {
  const issue = error.issues[0];
  const key = issue?.path[0] as keyof Config | undefined;
  if (!issue || key === undefined || !(key in configSchema.shape)) return new AppError('bad_request', issue?.message ?? 'invalid settings');
  const fromFlag = flags[key] !== undefined;
  const source = fromFlag ? flagOf(key) : envName(key);
  const value = fromFlag ? flags[key] : process.env[envName(key)];
  const words = accepts(key) ?? stringProblem(issue);
  const shown = value === undefined || SECRET.has(key) ? '' : ` ${JSON.stringify(String(value))}`;
  return new AppError('bad_request', `${source}:${shown} ${words}`, { field: source });
}

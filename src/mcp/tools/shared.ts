import { z } from 'zod';
import { AppError } from '../../errors/app-error.js';
import { parseRule, type Rule } from '../../domain/segments/rules.js';
import { findProfile, type FoundProfile } from '../../domain/profiles/service.js';
import { piiTraitsOf } from '../../domain/profiles/query.js';
import type { ToolContext } from '../tool.js';

/** ISO 8601 of a millisecond timestamp (null stays null). */
export const iso = (t: number | null): string | null => (t === null ? null : new Date(t).toISOString());

export const LOOKUP_KINDS = ['profile_id', 'visitor_id', 'email', 'external_id', 'email_sha256', 'phone_sha256'] as const;

/** Input fields naming one profile by any of its identifiers. */
export const profileRef = {
  by: z.enum(LOOKUP_KINDS).describe('Which identifier `value` is. email is trimmed and lower-cased; *_sha256 are hex SHA-256 of the normalized value.'),
  value: z.string().min(1).max(320).describe('The identifier value.'),
};

/** The surviving profile named by an identifier in the caller's site, or not_found. */
export async function resolveProfile(ctx: ToolContext, by: (typeof LOOKUP_KINDS)[number], value: string): Promise<FoundProfile> {
  const row = await findProfile(ctx.store, ctx.grant.siteId, by, value);
  if (!row) throw new AppError('not_found', `no profile matches ${by}`, { field: 'value' });
  return row;
}

/** Declared a JSON object (every node of the rule language is one); checkedRule validates it node by node. */
export const ruleInput = z.unknown().meta({ type: 'object' }).describe('A rule of the segment rule language (all/any/not over trait, event, conversions, score and segment conditions), as JSON.');

/**
 * Parses a rule, naming the offending node on failure. A rule that tests
 * email, phone or name would let a caller probe personal data, so it needs the
 * same right as reading it: the admin scope.
 */
export function checkedRule(ctx: ToolContext, input: unknown): Rule {
  const parsed = parseRule(input);
  if (!parsed.ok) {
    throw new AppError('validation_failed', `rule: ${parsed.error.path}: ${parsed.error.message}`, {
      field: `rule${parsed.error.path.slice(1)}`,
      issues: parsed.error.issues,
    });
  }
  const pii = piiTraitsOf(parsed.rule);
  if (pii.length > 0 && !ctx.pii) {
    throw new AppError('insufficient_scope', `a rule testing ${pii.join(', ')} needs the admin scope`, { missing: 'scope:admin' });
  }
  return parsed.rule;
}

export const limitInput = (max: number, def: number) =>
  z.number().int().min(1).max(max).default(def).describe(`How many to return, 1 to ${max} (default ${def}).`);

export const isoInput = z.iso.datetime({ offset: true }).describe('ISO 8601 date-time, e.g. 2026-01-31T00:00:00Z.');

export function ms(isoValue: string | undefined): number | undefined {
  return isoValue === undefined ? undefined : Date.parse(isoValue);
}

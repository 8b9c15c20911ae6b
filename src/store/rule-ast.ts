/**
 * The segment rule language's syntax tree: the shapes a parsed rule takes,
 * the operators, and the value semantics shared by every evaluator. Storage
 * compiles it to SQL (rule-sql.ts); parsing and validation, with the rule
 * language's documentation, live in the domain (domain/segments/rules.ts,
 * which re-exports these).
 */

export const TRAIT_OPS = ['eq', 'neq', 'in', 'contains', 'starts_with', 'exists', 'not_exists', 'gt', 'gte', 'lt', 'lte'] as const;
export type TraitOp = (typeof TRAIT_OPS)[number];
export const COMPARE_OPS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte'] as const;
export type CompareOp = (typeof COMPARE_OPS)[number];
export const NUMERIC_OPS = new Set<TraitOp>(['gt', 'gte', 'lt', 'lte']);
export const STRING_OPS = new Set<TraitOp>(['contains', 'starts_with']);
export const PRESENCE_OPS = new Set<TraitOp>(['exists', 'not_exists']);

export type Scalar = string | number | boolean;

export interface TraitCondition {
  trait: string;
  op: TraitOp;
  value?: string | number | string[] | undefined;
}
export interface PropertyCondition {
  property: string;
  op: TraitOp;
  value?: Scalar | (string | number)[] | undefined;
}
export interface EventCondition {
  event: string;
  where?: PropertyCondition[] | undefined;
  count?: { op: CompareOp; value: number } | undefined;
  within_days?: number | undefined;
  within_hours?: number | undefined;
}
export interface ConversionsCondition {
  conversions: { metric: 'count' | 'revenue'; op: CompareOp; value: number };
  within_days?: number | undefined;
}
export interface ScoreCondition {
  score: { agg: 'latest' | 'max' | 'avg'; op: CompareOp; value: number };
  within_days?: number | undefined;
}
export interface SegmentCondition {
  segment: string;
}
export const COMPANY_OPS = ['eq', 'in', 'exists'] as const;
export type CompanyOp = (typeof COMPANY_OPS)[number];
export interface CompanyCondition {
  company: { op: CompanyOp; value?: string | string[] | undefined };
}
export type Rule =
  | { all: Rule[] }
  | { any: Rule[] }
  | { not: Rule }
  | TraitCondition
  | EventCondition
  | ConversionsCondition
  | ScoreCondition
  | SegmentCondition
  | CompanyCondition;

/**
 * A number from a value: JSON numbers as they are, strings only when they are
 * plain decimals (`42`, `-3.5`; no exponent, sign `+`, spaces or hex). The same
 * function runs inside SQLite (svc_num), so SQL and memory agree by construction.
 */
export function numericValue(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v === 'string' && v.length <= 40 && /^-?\d+(\.\d+)?$/.test(v)) return Number(v);
  return null;
}

export type RuleKind = 'all' | 'any' | 'not' | 'trait' | 'event' | 'conversions' | 'score' | 'segment' | 'company';

/** Which kind of node a (parsed) rule is. */
export function kindOf(rule: Rule): RuleKind {
  for (const k of ['all', 'any', 'not', 'trait', 'event', 'conversions', 'score', 'segment', 'company'] as const) if (k in rule) return k;
  throw new Error('not a rule');
}

/** Milliseconds a windowed condition looks back, or null for all time. */
export function windowMs(c: { within_days?: number | undefined; within_hours?: number | undefined }): number | null {
  if (c.within_days !== undefined) return c.within_days * 86_400_000;
  if (c.within_hours !== undefined) return c.within_hours * 3_600_000;
  return null;
}

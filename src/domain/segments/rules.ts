import { z } from 'zod';
import { resolveCompanyDomain } from '../accounts/domain.js';

/**
 * The segment rule language: one JSON shape for custom segments and for
 * POST /api/pulse/v1/profiles/query.
 *
 *   combinators  { "all": [rule, ...] }  { "any": [rule, ...] }  { "not": rule }
 *   trait        { "trait": "plan", "op": "eq", "value": "gold" }
 *   event        { "event": "add_to_cart", "where": [{ "property": "sku", "op": "eq", "value": "A1" }],
 *                  "count": { "op": "gte", "value": 2 }, "within_days": 7 }
 *   conversions  { "conversions": { "metric": "revenue", "op": "gte", "value": 100 }, "within_days": 30 }
 *   score        { "score": { "agg": "latest", "op": "gte", "value": 70 }, "within_days": 14 }
 *   segment      { "segment": "seg_..." }
 *   company      { "company": { "op": "in", "value": ["acme.com", "globex.co.uk"] } }   (eq: one domain; exists: any company)
 *
 * Rules are validated node by node, so an error names the offending node by
 * its JSON path (`$.all[1].op`). They compile to parameterized SQL
 * (src/store/rule-sql.ts): no value of a rule is ever spliced into SQL text.
 */

export const RULE_LIMITS = {
  /** Nesting of all/any/not. */
  depth: 8,
  /** Nodes in a whole rule, combinators included. */
  nodes: 100,
  /** Children of one all/any. */
  children: 50,
  /** Values of one `in`. */
  inValues: 100,
  /** Property filters of one event condition. */
  where: 10,
  /** Characters of a string value. */
  stringValue: 256,
} as const;

export {
  COMPANY_OPS,
  COMPARE_OPS,
  kindOf,
  NUMERIC_OPS,
  numericValue,
  PRESENCE_OPS,
  STRING_OPS,
  TRAIT_OPS,
  windowMs,
  type CompanyCondition,
  type CompanyOp,
  type CompareOp,
  type ConversionsCondition,
  type EventCondition,
  type PropertyCondition,
  type Rule,
  type RuleKind,
  type Scalar,
  type ScoreCondition,
  type SegmentCondition,
  type TraitCondition,
  type TraitOp,
} from '../../store/rule-ast.js';
import {
  COMPANY_OPS,
  COMPARE_OPS,
  NUMERIC_OPS,
  PRESENCE_OPS,
  STRING_OPS,
  TRAIT_OPS,
  windowMs,
  type CompanyCondition,
  type Rule,
  type TraitOp,
} from '../../store/rule-ast.js';

// ---- node schemas (validation and the OpenAPI description) ----

const NAME = /^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,63}$/;
const traitName = z
  .string()
  .regex(NAME, 'a trait name: 1 to 64 of A-Z a-z 0-9 _ . : - (not starting with . : -)')
  .describe('Trait name, as sent in identify traits.');
const propertyPath = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}(\.[A-Za-z0-9_-]{1,64}){0,4}$/, 'a property name, or a dotted path of up to 5 names (cart.total)')
  .describe('Event property; a dotted path reaches into nested objects (cart.total).');
const num = z.number().refine(Number.isFinite, 'must be a finite number');
const compareOp = z.enum(COMPARE_OPS);
const within = {
  within_days: z.number().int().min(1).max(3650).optional().describe('Only count activity of the last N days (from evaluation time).'),
};

function checkValue(
  op: TraitOp,
  value: unknown,
  ctx: { addIssue: (i: { code: 'custom'; message: string; path: PropertyKey[] }) => void },
  allowBoolean: boolean,
): void {
  const fail = (message: string) => ctx.addIssue({ code: 'custom', message, path: ['value'] });
  if (PRESENCE_OPS.has(op)) {
    if (value !== undefined) fail(`${op} takes no value`);
  } else if (NUMERIC_OPS.has(op)) {
    if (typeof value !== 'number' || !Number.isFinite(value)) fail(`${op} compares numbers: value must be a number`);
  } else if (STRING_OPS.has(op)) {
    if (typeof value !== 'string' || value.length === 0 || value.length > RULE_LIMITS.stringValue) {
      fail(`${op} needs a string value of 1 to ${RULE_LIMITS.stringValue} characters`);
    }
  } else if (op === 'in') {
    const scalarOk = (x: unknown) => (typeof x === 'string' && x.length <= RULE_LIMITS.stringValue) || (allowBoolean && typeof x === 'number' && Number.isFinite(x));
    if (!Array.isArray(value) || value.length === 0 || value.length > RULE_LIMITS.inValues || !value.every(scalarOk)) {
      fail(`in needs an array of 1 to ${RULE_LIMITS.inValues} ${allowBoolean ? 'strings or numbers' : 'strings'}`);
    }
  } else {
    const ok = typeof value === 'string' ? value.length <= RULE_LIMITS.stringValue : allowBoolean && (typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value)));
    if (!ok) fail(`${op} needs ${allowBoolean ? 'a string, number or boolean' : 'a string'} value`);
  }
}

export const traitConditionSchema = z
  .strictObject({
    trait: traitName,
    op: z.enum(TRAIT_OPS).describe('eq, neq, in, contains, starts_with (strings; case-sensitive); exists, not_exists; gt, gte, lt, lte (numeric strings)'),
    value: z.union([z.string().max(RULE_LIMITS.stringValue), num, z.array(z.string().max(RULE_LIMITS.stringValue))]).optional(),
  })
  .superRefine((c, ctx) => checkValue(c.op, c.value, ctx, false))
  .meta({ id: 'TraitCondition', description: 'Tests a trait of the profile. Traits are strings; gt/gte/lt/lte read them as decimal numbers and never match a non-numeric trait.' });

export const propertyConditionSchema = z
  .strictObject({
    property: propertyPath,
    op: z.enum(TRAIT_OPS),
    value: z.union([z.string().max(RULE_LIMITS.stringValue), num, z.boolean(), z.array(z.union([z.string().max(RULE_LIMITS.stringValue), num]))]).optional(),
  })
  .superRefine((c, ctx) => checkValue(c.op, c.value, ctx, true))
  .meta({ id: 'PropertyCondition', description: 'Tests a property of an event. eq/neq/in match the JSON type exactly ("5" is not 5); gt/gte/lt/lte accept numbers and decimal strings.' });

export const eventConditionSchema = z
  .strictObject({
    event: z.string().min(1).max(64).describe('Event type, as sent to /api/events.'),
    where: z.array(propertyConditionSchema).max(RULE_LIMITS.where).optional().describe('All of these must hold for an event to count.'),
    count: z
      .strictObject({ op: compareOp, value: z.number().int().min(0).max(1_000_000_000) })
      .optional()
      .describe('How many matching events; default at least one ({"op":"gte","value":1}). {"op":"eq","value":0} means "did not".'),
    ...within,
    within_hours: z.number().int().min(1).max(87_600).optional().describe('Only count events of the last N hours.'),
  })
  .superRefine((c, ctx) => {
    if (c.within_days !== undefined && c.within_hours !== undefined) {
      ctx.addIssue({ code: 'custom', message: 'give within_days or within_hours, not both', path: ['within_hours'] });
    }
  })
  .meta({ id: 'EventCondition', description: 'Counts the profile\'s events of one type (optionally filtered and windowed) and compares the count.' });

export const conversionsConditionSchema = z
  .strictObject({
    conversions: z.strictObject({
      metric: z.enum(['count', 'revenue']).describe('count of conversions, or the sum of their revenue (site currency).'),
      op: compareOp,
      value: num.min(0),
    }),
    ...within,
  })
  .meta({ id: 'ConversionsCondition', description: 'Compares the number of conversions or their revenue sum.' });

export const scoreConditionSchema = z
  .strictObject({
    score: z.strictObject({
      agg: z.enum(['latest', 'max', 'avg']).describe('The latest score, the highest, or the mean; scores without a numeric score are ignored.'),
      op: compareOp,
      value: num,
    }),
    ...within,
  })
  .meta({ id: 'ScoreCondition', description: 'Compares the profile\'s scores (from /api/score). No score never matches.' });

export const segmentConditionSchema = z
  .strictObject({ segment: z.string().regex(/^seg_[A-Za-z0-9_-]{1,64}$/, 'a segment id (seg_...)') })
  .meta({ id: 'SegmentCondition', description: 'Membership of another segment of the same site (no cycles).' });

/**
 * The registrable domain a company node value names (the key of the accounts_*
 * tools): a website URL or host is read as its registrable domain. An email
 * address is refused (a rule never holds personal data), as are free-mail
 * providers (never a company), IP addresses and names without a registrable
 * domain.
 */
function companyDomainOf(input: string): { ok: true; domain: string } | { ok: false; message: string } {
  if (input.length === 0 || input.length > RULE_LIMITS.stringValue) return { ok: false, message: `a company domain of 1 to ${RULE_LIMITS.stringValue} characters` };
  const r = resolveCompanyDomain(input);
  if (r.kind === 'email') return { ok: false, message: 'a company domain (acme.com), not an email address: rules hold no personal data' };
  if (!r.ok) return { ok: false, message: r.message };
  return { ok: true, domain: r.domain };
}

export const companyConditionSchema = z
  .strictObject({
    company: z
      .strictObject({
        op: z.enum(COMPANY_OPS).describe('eq: the company is this domain; in: one of these domains; exists: any company.'),
        value: z
          .union([z.string(), z.array(z.string())])
          .optional()
          .describe('eq: a company domain (acme.com; a website URL or host is read as its registrable domain); in: 1 to 100 of them; exists: none. Free-mail providers and email addresses are refused.'),
      })
      .transform((c, ctx): CompanyCondition['company'] => {
        const fail = (message: string, path: (string | number)[] = ['value']) => {
          ctx.addIssue({ code: 'custom', message, path, input: c.value });
          return z.NEVER;
        };
        if (c.op === 'exists') return c.value === undefined ? { op: 'exists' } : fail('exists takes no value');
        if (c.op === 'eq') {
          if (typeof c.value !== 'string') return fail('eq needs one company domain');
          const d = companyDomainOf(c.value);
          return d.ok ? { op: 'eq', value: d.domain } : fail(d.message);
        }
        if (!Array.isArray(c.value) || c.value.length === 0 || c.value.length > RULE_LIMITS.inValues) {
          return fail(`in needs an array of 1 to ${RULE_LIMITS.inValues} company domains`);
        }
        const out: string[] = [];
        let ok = true;
        c.value.forEach((v, i) => {
          const d = companyDomainOf(v);
          if (d.ok) out.push(d.domain);
          else {
            ok = false;
            fail(d.message, ['value', i]);
          }
        });
        return ok ? { op: 'in', value: [...new Set(out)] } : z.NEVER;
      }),
  })
  .meta({
    id: 'CompanyCondition',
    description:
      "Tests the profile's company: the registrable domain of its corporate email address (free mail never counts), else the company of the loaded IP range " +
      'holding the address of its most recent session that falls in one (accounts_ip_ranges_load). A domain that exactly one known person of the site has ' +
      '(one profile with an email there) is personal data, not a company: the node never matches it.',
  });

const allDoc = z.strictObject({
  get all(): z.ZodArray<typeof ruleDocSchema> {
    return z.array(ruleDocSchema).min(1).max(RULE_LIMITS.children);
  },
});
const anyDoc = z.strictObject({
  get any(): z.ZodArray<typeof ruleDocSchema> {
    return z.array(ruleDocSchema).min(1).max(RULE_LIMITS.children);
  },
});
const notDoc = z.strictObject({
  get not(): typeof ruleDocSchema {
    return ruleDocSchema;
  },
});

/** The rule language as JSON Schema (documentation only; parseRule validates). */
export const ruleDocSchema: z.ZodType = z
  .union([
    allDoc,
    anyDoc,
    notDoc,
    traitConditionSchema,
    eventConditionSchema,
    conversionsConditionSchema,
    scoreConditionSchema,
    segmentConditionSchema,
    companyConditionSchema,
  ])
  .meta({
    id: 'SegmentRule',
    description: `A segment rule: all/any/not over trait, event, conversions, score, segment and company conditions. Depth at most ${RULE_LIMITS.depth}, at most ${RULE_LIMITS.nodes} nodes.`,
  });

/** Every schema that documents the rule language (for openapi.json). */
export const RULE_DOC_SCHEMAS: z.ZodType[] = [
  ruleDocSchema,
  traitConditionSchema,
  propertyConditionSchema,
  eventConditionSchema,
  conversionsConditionSchema,
  scoreConditionSchema,
  segmentConditionSchema,
  companyConditionSchema,
];

// ---- parsing with node-precise errors ----

export interface RuleIssue {
  path: string;
  segments: (string | number)[];
  message: string;
}
export type ParseRuleResult = { ok: true; rule: Rule } | { ok: false; error: { path: string; message: string; issues: { path: string; message: string }[] } };

const LEAVES: [string, z.ZodType][] = [
  ['trait', traitConditionSchema],
  ['event', eventConditionSchema],
  ['conversions', conversionsConditionSchema],
  ['score', scoreConditionSchema],
  ['segment', segmentConditionSchema],
  ['company', companyConditionSchema],
];
const KINDS = ['all', 'any', 'not', ...LEAVES.map(([k]) => k)];

export function formatPath(segments: readonly PropertyKey[]): string {
  let out = '$';
  for (const seg of segments) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else if (typeof seg === 'string' && /^[A-Za-z_][A-Za-z0-9_]*$/.test(seg)) out += `.${seg}`;
    else out += `[${JSON.stringify(String(seg))}]`;
  }
  return out;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Validates one rule; on failure the issues name the offending nodes by JSON path. */
export function collectRuleIssues(input: unknown): { rule?: Rule; issues: RuleIssue[] } {
  const issues: RuleIssue[] = [];
  let nodes = 0;
  const add = (segments: (string | number)[], message: string) => issues.push({ path: formatPath(segments), segments, message });

  const visit = (node: unknown, at: (string | number)[], depth: number): Rule | undefined => {
    nodes += 1;
    if (nodes > RULE_LIMITS.nodes) {
      if (nodes === RULE_LIMITS.nodes + 1) add(at, `a rule has at most ${RULE_LIMITS.nodes} nodes`);
      return undefined;
    }
    if (!isPlainObject(node)) {
      add(at, `a rule node is an object with one of: ${KINDS.join(', ')}`);
      return undefined;
    }
    const kind = KINDS.find((k) => Object.hasOwn(node, k));
    if (!kind) {
      add(at, `a rule node needs one of: ${KINDS.join(', ')}`);
      return undefined;
    }
    if (kind === 'all' || kind === 'any' || kind === 'not') {
      const extra = Object.keys(node).filter((k) => k !== kind);
      if (extra.length > 0) {
        add([...at, extra[0]!], `unexpected key ${JSON.stringify(extra[0])} beside ${JSON.stringify(kind)}`);
        return undefined;
      }
      if (depth >= RULE_LIMITS.depth) {
        add(at, `rules nest at most ${RULE_LIMITS.depth} levels of all/any/not`);
        return undefined;
      }
      if (kind === 'not') {
        const inner = visit(node.not, [...at, 'not'], depth + 1);
        return inner && { not: inner };
      }
      const list = node[kind];
      if (!Array.isArray(list) || list.length === 0 || list.length > RULE_LIMITS.children) {
        add([...at, kind], `${kind} takes an array of 1 to ${RULE_LIMITS.children} rules`);
        return undefined;
      }
      const children: Rule[] = [];
      let ok = true;
      list.forEach((child, i) => {
        const r = visit(child, [...at, kind, i], depth + 1);
        if (r) children.push(r);
        else ok = false;
      });
      if (!ok) return undefined;
      return kind === 'all' ? { all: children } : { any: children };
    }
    const schema = LEAVES.find(([k]) => k === kind)![1];
    const r = schema.safeParse(node);
    if (!r.success) {
      for (const i of r.error.issues) add([...at, ...(i.path as (string | number)[])], i.message);
      return undefined;
    }
    return r.data as Rule;
  };

  const rule = visit(input, [], 0);
  return issues.length === 0 && rule ? { rule, issues } : { issues };
}

export function parseRule(input: unknown): ParseRuleResult {
  const { rule, issues } = collectRuleIssues(input);
  if (rule) return { ok: true, rule };
  const first = issues[0] ?? { path: '$', message: 'invalid rule' };
  return {
    ok: false,
    error: { path: first.path, message: first.message, issues: issues.slice(0, 20).map(({ path, message }) => ({ path, message })) },
  };
}

/**
 * The rule as a request-body field: validates with parseRule (issues keep their
 * node paths below the field) and is described in OpenAPI by SegmentRule.
 */
export const ruleSchema = z.unknown().transform((input, ctx): Rule => {
  const { rule, issues } = collectRuleIssues(input);
  if (rule) return rule;
  for (const i of issues.slice(0, 20)) ctx.addIssue({ code: 'custom', message: i.message, path: i.segments, input });
  return z.NEVER;
}).meta({ 'x-schema-ref': 'SegmentRule' });

/** Ids of the segments a rule tests membership of. */
export function referencedSegments(rule: Rule): string[] {
  const out = new Set<string>();
  const walk = (r: Rule) => {
    if ('all' in r) r.all.forEach(walk);
    else if ('any' in r) r.any.forEach(walk);
    else if ('not' in r) walk(r.not);
    else if ('segment' in r) out.add(r.segment);
  };
  walk(rule);
  return [...out];
}

export function countNodes(rule: Rule): number {
  if ('all' in rule) return 1 + rule.all.reduce((n, r) => n + countNodes(r), 0);
  if ('any' in rule) return 1 + rule.any.reduce((n, r) => n + countNodes(r), 0);
  if ('not' in rule) return 1 + countNodes(rule.not);
  return 1;
}

/** Whether a rule has a time window anywhere, so its answer can change with no new data. */
export function hasWindow(rule: Rule): boolean {
  if ('all' in rule) return rule.all.some(hasWindow);
  if ('any' in rule) return rule.any.some(hasWindow);
  if ('not' in rule) return hasWindow(rule.not);
  return windowMs(rule as { within_days?: number; within_hours?: number }) !== null;
}

/** Whether a rule tests the company anywhere (its answer then reads profile_companies). */
export function usesCompany(rule: Rule): boolean {
  if ('all' in rule) return rule.all.some(usesCompany);
  if ('any' in rule) return rule.any.some(usesCompany);
  if ('not' in rule) return usesCompany(rule.not);
  return 'company' in rule;
}


import {
  kindOf,
  type CompanyCondition,
  numericValue,
  windowMs,
  type CompareOp,
  type EventCondition,
  type PropertyCondition,
  type Rule,
  type ScoreCondition,
  type TraitCondition,
} from './rules.js';

/** Everything a rule can test about one profile, in memory. */
export interface ProfileFacts {
  traits: Record<string, unknown>;
  /** `body` is the event as received (its properties are top-level keys). */
  events: { type: string; ts: number; body: Record<string, unknown> }[];
  /** `in_site_currency`: recorded in the site's current currency (revenue rules sum only those). */
  conversions: { revenue: number | null; created_at: number; in_site_currency: boolean }[];
  /** In insertion order (the latest of equal received_at is the last). */
  scores: { score: number | null; received_at: number }[];
  segments: ReadonlySet<string>;
  /**
   * The profile's company (its profile_companies row): the domain, and how many
   * known persons of the site have it as their email's company domain (1: a
   * personal domain, never matched). null: no company.
   */
  company: { domain: string; known_persons: number } | null;
}

/** Whether a profile's company satisfies a company node: never for a domain only one known person has. */
export function companyMatches(c: CompanyCondition, company: ProfileFacts['company']): boolean {
  if (company === null || company.known_persons === 1) return false;
  switch (c.company.op) {
    case 'exists':
      return true;
    case 'eq':
      return company.domain === c.company.value;
    case 'in':
      return (c.company.value as string[]).includes(company.domain);
  }
}

export function compare(a: number, op: CompareOp, b: number): boolean {
  switch (op) {
    case 'eq':
      return a === b;
    case 'neq':
      return a !== b;
    case 'gt':
      return a > b;
    case 'gte':
      return a >= b;
    case 'lt':
      return a < b;
    case 'lte':
      return a <= b;
  }
}

function testValue(present: boolean, v: unknown, op: TraitCondition['op'], value: unknown): boolean {
  switch (op) {
    case 'exists':
      return present;
    case 'not_exists':
      return !present;
    case 'eq':
      return present && typeof v === typeof value && v === value;
    case 'neq':
      return !(present && typeof v === typeof value && v === value);
    case 'in':
      return present && (value as unknown[]).some((x) => typeof v === typeof x && v === x);
    case 'contains':
      return typeof v === 'string' && v.includes(value as string);
    case 'starts_with':
      return typeof v === 'string' && v.startsWith(value as string);
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      if (!present || (typeof v !== 'string' && typeof v !== 'number')) return false;
      const n = numericValue(v);
      return n !== null && compare(n, op, value as number);
    }
  }
}

function trait(c: TraitCondition, traits: Record<string, unknown>): boolean {
  const present = Object.hasOwn(traits, c.trait);
  return testValue(present, present ? traits[c.trait] : undefined, c.op, c.value);
}

function property(c: PropertyCondition, body: Record<string, unknown>): boolean {
  let cur: unknown = body;
  for (const seg of c.property.split('.')) {
    if (typeof cur !== 'object' || cur === null || Array.isArray(cur) || !Object.hasOwn(cur, seg)) {
      return testValue(false, undefined, c.op, c.value);
    }
    cur = (cur as Record<string, unknown>)[seg];
  }
  return testValue(true, cur, c.op, c.value);
}

function event(c: EventCondition, facts: ProfileFacts, now: number): boolean {
  const w = windowMs(c);
  const since = w === null ? -Infinity : now - w;
  let n = 0;
  for (const e of facts.events) {
    if (e.type !== c.event || e.ts < since) continue;
    if ((c.where ?? []).every((p) => property(p, e.body))) n += 1;
  }
  const count = c.count ?? { op: 'gte', value: 1 };
  return compare(n, count.op, count.value);
}

function score(c: ScoreCondition, facts: ProfileFacts, now: number): boolean {
  const w = windowMs(c);
  const since = w === null ? -Infinity : now - w;
  const rows = facts.scores.filter((s) => s.score !== null && s.received_at >= since) as { score: number; received_at: number }[];
  if (rows.length === 0) return false;
  let v: number;
  if (c.score.agg === 'max') v = Math.max(...rows.map((r) => r.score));
  else if (c.score.agg === 'avg') v = rows.reduce((a, r) => a + r.score, 0) / rows.length;
  else {
    let latest = rows[0]!;
    for (const r of rows) if (r.received_at >= latest.received_at) latest = r;
    v = latest.score;
  }
  return compare(v, c.score.op, c.score.value);
}

/**
 * Evaluates a rule against one profile in memory. The SQL compiler
 * (src/store/rule-sql.ts) must agree with this on every rule and profile;
 * test/unit/segment-rules.property.test.ts checks that they do.
 */
export function evaluateRule(rule: Rule, facts: ProfileFacts, now: number): boolean {
  switch (kindOf(rule)) {
    case 'all':
      return (rule as { all: Rule[] }).all.every((r) => evaluateRule(r, facts, now));
    case 'any':
      return (rule as { any: Rule[] }).any.some((r) => evaluateRule(r, facts, now));
    case 'not':
      return !evaluateRule((rule as { not: Rule }).not, facts, now);
    case 'trait':
      return trait(rule as TraitCondition, facts.traits);
    case 'event':
      return event(rule as EventCondition, facts, now);
    case 'conversions': {
      const c = rule as Extract<Rule, { conversions: unknown }>;
      const w = windowMs(c);
      const rows = facts.conversions.filter((x) => w === null || x.created_at >= now - w);
      const v = c.conversions.metric === 'count' ? rows.length : rows.reduce((a, x) => a + (x.in_site_currency ? (x.revenue ?? 0) : 0), 0);
      return compare(v, c.conversions.op, c.conversions.value);
    }
    case 'score':
      return score(rule as ScoreCondition, facts, now);
    case 'segment':
      return facts.segments.has((rule as { segment: string }).segment);
    case 'company':
      return companyMatches(rule as CompanyCondition, facts.company);
  }
}

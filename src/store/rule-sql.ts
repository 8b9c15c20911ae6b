import type { Db } from './db.js';
import type { Dialect } from './sql.js';
import { builtAtRunTime } from './pg/names.js';
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
  type TraitOp,
} from './rule-ast.js';

/**
 * Compiles the segment rule language to SQL, SQLite's or PostgreSQL's. Every
 * value of a rule is a bound parameter; the SQL text holds only fixed fragments
 * chosen by the operators, so a rule can never inject SQL. Every fragment
 * yields 0 or 1 (SQLite) or a boolean (PostgreSQL), never NULL, so `not` is
 * plain boolean negation. The in-memory evaluator
 * (src/domain/segments/evaluate.ts) defines the same semantics.
 */

export interface CompiledSql {
  sql: string;
  params: unknown[];
}

const SQL_OP: Record<CompareOp, string> = { eq: '=', neq: '<>', gt: '>', gte: '>=', lt: '<', lte: '<=' };

// SQLite only: PostgreSQL rules compute the same value inline (valueTestPg).
/** Registers the SQL functions compiled rules call (svc_num). Called once per connection. */
export function registerRuleFunctions(db: Db): void {
  db.function('svc_num', { deterministic: true }, (v: unknown) => numericValue(v));
}

/** JSON path of a trait name or a dotted property path, e.g. `$."cart"."total"`. */
function jsonPathOf(name: string, dotted: boolean): string {
  const parts = dotted ? name.split('.') : [name];
  return '$' + parts.map((p) => `."${p}"`).join('');
}

class Compiler {
  readonly params: unknown[] = [];
  /** The SQL for "no" where a fragment could be NULL: 0 on SQLite (0/1 values), false on PostgreSQL (booleans). */
  private readonly no: string;

  constructor(
    private readonly now: number,
    private readonly dialect: Dialect = 'sqlite',
  ) {
    this.no = dialect === 'pg' ? 'false' : '0';
  }

  private p(v: unknown): string {
    this.params.push(v);
    return '?';
  }

  /**
   * PostgreSQL form of valueTest: the JSON text column read as jsonb, the path as a text[]
   * parameter. Equality is jsonb equality with a typed value (a number never equals a string,
   * 1 equals 1.0, as on SQLite); CASE guards every cast so a value of another type is "no",
   * never an error.
   */
  private valueTestPg(column: string, parts: string[], op: TraitOp, value: unknown): string {
    const at = () => `(${column}::jsonb #> ${this.p(parts)}::text[])`;
    const text = () => `(${column}::jsonb #>> ${this.p(parts)}::text[])`;
    const eq = (v: unknown): string => {
      const cast = typeof v === 'boolean' ? 'boolean' : typeof v === 'number' ? 'numeric' : 'text';
      return `coalesce(${at()} = to_jsonb(${this.p(v)}::${cast}), false)`;
    };
    const isString = () => `jsonb_typeof(${at()}) = 'string'`;
    switch (op) {
      case 'exists':
        return `(${at()} IS NOT NULL)`;
      case 'not_exists':
        return `(${at()} IS NULL)`;
      case 'eq':
        return eq(value);
      case 'neq':
        return `(NOT ${eq(value)})`;
      case 'in':
        return `(${(value as unknown[]).map(eq).join(' OR ')})`;
      case 'contains':
        return `(CASE WHEN ${isString()} THEN strpos(${text()}, ${this.p(value)}::text) > 0 ELSE false END)`;
      case 'starts_with':
        return `(CASE WHEN ${isString()} THEN left(${text()}, ${this.p((value as string).length)}::int) = ${this.p(value)}::text ELSE false END)`;
      case 'gt':
      case 'gte':
      case 'lt':
      case 'lte': {
        // numericValue() of rules.ts: a JSON number, or a string of digits (optional sign and fraction, at most 40 chars).
        const num =
          `(CASE WHEN jsonb_typeof(${at()}) = 'number' THEN ${text()}::numeric ` +
          `WHEN ${isString()} AND length(${text()}) <= 40 AND ${text()} ~ '^-?[0-9]+([.][0-9]+)?$' THEN ${text()}::numeric END)`;
        return `coalesce(${num} ${SQL_OP[op]} ${this.p(value)}::numeric, false)`;
      }
    }
  }

  /** A test of one JSON value (`doc` at `path`) with a trait/property operator. */
  private valueTest(doc: string, path: string, op: TraitOp, value: unknown, parts?: string[]): string {
    if (this.dialect === 'pg') return this.valueTestPg(doc, parts!, op, value);
    const type = () => `json_type(${doc}, ${this.p(path)})`;
    const extract = () => `json_extract(${doc}, ${this.p(path)})`;
    const eq = (v: unknown): string => {
      if (typeof v === 'boolean') return `coalesce(${type()} = ${this.p(v ? 'true' : 'false')}, 0)`;
      if (typeof v === 'number') return `coalesce(${type()} IN ('integer','real') AND ${extract()} = ${this.p(v)}, 0)`;
      return `coalesce(${type()} = 'text' AND ${extract()} = ${this.p(v)}, 0)`;
    };
    switch (op) {
      case 'exists':
        return `(${type()} IS NOT NULL)`;
      case 'not_exists':
        return `(${type()} IS NULL)`;
      case 'eq':
        return eq(value);
      case 'neq':
        return `(NOT ${eq(value)})`;
      case 'in':
        return `(${(value as unknown[]).map(eq).join(' OR ')})`;
      case 'contains':
        return `coalesce(${type()} = 'text' AND instr(${extract()}, ${this.p(value)}) > 0, 0)`;
      case 'starts_with': {
        const t = type();
        const x = extract();
        return `coalesce(${t} = 'text' AND substr(${x}, 1, ${this.p((value as string).length)}) = ${this.p(value)}, 0)`;
      }
      case 'gt':
      case 'gte':
      case 'lt':
      case 'lte': {
        const t = type();
        const x = extract();
        return `coalesce(${t} IN ('integer','real','text') AND svc_num(${x}) ${SQL_OP[op]} ${this.p(value)}, 0)`;
      }
    }
  }

  private since(c: { within_days?: number | undefined; within_hours?: number | undefined }, column: string): string {
    const w = windowMs(c);
    return w === null ? '' : ` AND ${column} >= ${this.p(this.now - w)}`;
  }

  compile(rule: Rule): string {
    switch (kindOf(rule)) {
      case 'all':
        return `(${(rule as { all: Rule[] }).all.map((r) => this.compile(r)).join(' AND ')})`;
      case 'any':
        return `(${(rule as { any: Rule[] }).any.map((r) => this.compile(r)).join(' OR ')})`;
      case 'not':
        return `(NOT ${this.compile((rule as { not: Rule }).not)})`;
      case 'trait': {
        const c = rule as TraitCondition;
        const valueTest = this.valueTest('p.traits', jsonPathOf(c.trait, false), c.op, c.value, [c.trait]);
        return valueTest;
      }
      case 'event': {
        const c = rule as EventCondition;
        let sql = `(SELECT count(*) FROM events e WHERE e.profile_id = p.id AND e.type = ${this.p(c.event)}`;
        sql += this.since(c, 'e.ts');
        for (const w of c.where ?? []) sql += ` AND ${this.property(w)}`;
        const count = c.count ?? { op: 'gte' as const, value: 1 };
        return `(${sql}) ${SQL_OP[count.op]} ${this.p(count.value)})`;
      }
      case 'conversions': {
        const c = rule as Extract<Rule, { conversions: unknown }>;
        // Revenue in the site's currency only (conversions recorded before a currency change are not added in).
        const agg =
          c.conversions.metric === 'count'
            ? 'count(*)'
            : 'coalesce(sum(CASE WHEN c.currency = (SELECT st.currency FROM sites st WHERE st.id = p.site_id) THEN c.revenue END), 0)';
        const sql = `(SELECT ${agg} FROM conversions c WHERE c.profile_id = p.id${this.since(c, 'c.created_at')})`;
        return `(${sql} ${SQL_OP[c.conversions.op]} ${this.p(c.conversions.value)})`;
      }
      case 'score': {
        const c = rule as ScoreCondition;
        const where = `s.profile_id = p.id AND s.score IS NOT NULL${this.since(c, 's.received_at')}`;
        const value =
          c.score.agg === 'latest'
            ? `(SELECT s.score FROM scores s WHERE ${where} ORDER BY s.received_at DESC, s.id DESC LIMIT 1)`
            : `(SELECT ${c.score.agg}(s.score) FROM scores s WHERE ${where})`;
        return `coalesce(${value} ${SQL_OP[c.score.op]} ${this.p(c.score.value)}, ${this.no})`;
      }
      case 'segment':
        return `EXISTS (SELECT 1 FROM segment_members m WHERE m.segment_id = ${this.p((rule as { segment: string }).segment)} AND m.profile_id = p.id)`;
      case 'company':
        return this.company(rule as CompanyCondition);
    }
  }

  /**
   * The profile's company (its email's domain, else its IP range's) is one of the
   * values (any, for exists), and it is not a domain exactly one known person of
   * the site has (evaluate.ts: companyMatches).
   */
  private company(c: CompanyCondition): string {
    const domain = 'coalesce(pc.email_domain, pc.ip_domain)';
    let test = '';
    if (c.company.op === 'eq') test = ` AND ${domain} = ${this.p(c.company.value)}`;
    else if (c.company.op === 'in') test = ` AND ${domain} IN (${(c.company.value as string[]).map((v) => this.p(v)).join(', ')})`;
    const persons = `(SELECT count(*) FROM profile_companies k WHERE k.site_id = pc.site_id AND k.email_domain = ${domain})`;
    return `EXISTS (SELECT 1 FROM profile_companies pc WHERE pc.profile_id = p.id${test} AND ${persons} <> 1)`;
  }

  private property(c: PropertyCondition): string {
    return this.valueTest('e.body', jsonPathOf(c.property, true), c.op, c.value, c.property.split('.'));
  }
}

/** `SELECT (<rule>) AS m FROM profiles p WHERE p.id = ?`: m is 1 when the profile matches. */
export function profileMatchesSql(rule: Rule, o: { profileId: string; now: number; dialect?: Dialect }): CompiledSql {
  const c = new Compiler(o.now, o.dialect);
  const expr = c.compile(rule);
  const sql = `SELECT ${expr} AS m FROM profiles p WHERE p.id = ?`;
  if (o.dialect === 'pg') builtAtRunTime(sql);
  return { sql, params: [...c.params, o.profileId] };
}

/** One keyset page of the ids of a site's live (unmerged) profiles that match, ascending. */
export function profilesMatchingSql(
  rule: Rule,
  o: { siteId: string; now: number; afterId: string; limit: number; dialect?: Dialect },
): CompiledSql {
  const c = new Compiler(o.now, o.dialect);
  const expr = c.compile(rule);
  const sql = `SELECT p.id FROM profiles p WHERE p.site_id = ? AND p.merged_into IS NULL AND p.id > ? AND ${expr} ORDER BY p.id LIMIT ?`;
  if (o.dialect === 'pg') builtAtRunTime(sql);
  return { sql, params: [o.siteId, o.afterId, ...c.params, o.limit] };
}

import pg from 'pg';
import { eachInTurn, type Params, type RunResult, type Sql } from '../sql.js';
import { BatchPgSql } from './batch.js';
import { noteColumns } from './columns.js';
import { statementName } from './names.js';

/** int8 (counts, ms timestamps, identity ids) and numeric (sums) as JS numbers, as SQLite returns them. */
const INT8 = 20;
const NUMERIC = 1700;

const parseNumber = (v: string): number => Number(v);

/** Type parsers for every svc connection: every value a repository reads has the type it has on SQLite. */
export const PG_TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
    if (oid === INT8 || oid === NUMERIC) return parseNumber;
    return pg.types.getTypeParser(oid, format);
  }) as pg.CustomTypesConfig['getTypeParser'],
};

const converted = new Map<string, string>();

/**
 * `?` parameter marks to `$1, $2, …`, outside quoted strings and identifiers.
 * Repositories write `?` for both dialects; PostgreSQL SQL in svc never uses
 * the jsonb `?` operator (it uses jsonb_exists or `->` instead).
 */
export function toPgPlaceholders(sql: string): string {
  const hit = converted.get(sql);
  if (hit !== undefined) return hit;
  let out = '';
  let n = 0;
  let quote: string | null = null;
  for (let i = 0; i < sql.length; i++) {
    const ch = sql[i]!;
    if (quote !== null) {
      out += ch;
      if (ch === quote) quote = null;
      continue;
    }
    if (ch === "'" || ch === '"') {
      quote = ch;
      out += ch;
    } else if (ch === '?') {
      out += `$${++n}`;
    } else {
      out += ch;
    }
  }
  if (converted.size > 5000) converted.clear();
  converted.set(sql, out);
  return out;
}

type Queryable = pg.Pool | pg.PoolClient;

/** PostgreSQL executor over the pool (each call on any free connection) or over one transaction's connection. */
export class PgSql implements Sql {
  readonly dialect = 'pg' as const;

  constructor(private readonly q: Queryable) {}

  private query<T extends pg.QueryResultRow>(sql: string, params: Params): Promise<pg.QueryResult<T>> {
    const name = statementName(sql);
    const text = toPgPlaceholders(sql);
    return name === undefined
      ? this.q.query<T>(text, params as unknown[])
      : this.q.query<T>({ name, text, values: params as unknown[] });
  }

  async get<T>(sql: string, params: Params = []): Promise<T | undefined> {
    const r = await this.query<T & pg.QueryResultRow>(sql, params);
    noteColumns(sql, r.fields);
    return r.rows[0];
  }

  async all<T>(sql: string, params: Params = []): Promise<T[]> {
    const r = await this.query<T & pg.QueryResultRow>(sql, params);
    noteColumns(sql, r.fields);
    return r.rows;
  }

  async run(sql: string, params: Params = []): Promise<RunResult> {
    const r = await this.query(sql, params);
    return { changes: r.rowCount ?? 0 };
  }

  /** Several sets: one set-based statement where the text allows it (see BatchPgSql), else one after another. */
  getEach<T>(sql: string, sets: readonly Params[]): Promise<(T | undefined)[]> {
    if (sets.length < 2) return eachInTurn(sets, (params) => this.get<T>(sql, params));
    return new BatchPgSql(this.q, this).getEach<T>(sql, sets);
  }

  runEach(sql: string, sets: readonly Params[]): Promise<RunResult[]> {
    if (sets.length < 2) return eachInTurn(sets, (params) => this.run(sql, params));
    return new BatchPgSql(this.q, this).runEach(sql, sets);
  }
}

import type { Statement } from 'better-sqlite3';
import type { Db } from './db.js';

/** The SQL dialect of a store. Repositories write portable SQL and branch on this only where the two differ. */
export type Dialect = 'sqlite' | 'pg';

export type Params = readonly unknown[];

export interface RunResult {
  /** Rows inserted, updated or deleted by the statement. */
  changes: number;
  /**
   * SQLite only: the rowid of the last row the connection inserted (`last_insert_rowid()`), which
   * after a plain one-row INSERT is that row's integer key. Absent on PostgreSQL (use RETURNING).
   */
  lastInsertId?: number;
}

/**
 * The one way repositories talk to a database: positional `?` parameters,
 * rows as plain objects, every call asynchronous. On SQLite the calls finish
 * before they return (the promise is already settled); on PostgreSQL each is a
 * round trip on the connection this executor is bound to (the pool, or the
 * connection of one transaction).
 */
export interface Sql {
  readonly dialect: Dialect;
  /** The first row, or undefined. */
  get<T = Record<string, unknown>>(sql: string, params?: Params): Promise<T | undefined>;
  all<T = Record<string, unknown>>(sql: string, params?: Params): Promise<T[]>;
  run(sql: string, params?: Params): Promise<RunResult>;
  /**
   * `sql` once per parameter set, in order, with the first row of each. On
   * PostgreSQL inside a group commit the sets share one set-based statement
   * (pg/batch.ts); elsewhere they run one after another.
   */
  getEach<T = Record<string, unknown>>(sql: string, sets: readonly Params[]): Promise<(T | undefined)[]>;
  /** `run` once per parameter set, in order (see getEach). */
  runEach(sql: string, sets: readonly Params[]): Promise<RunResult[]>;
}

/** getEach/runEach one after another, for executors that run one statement at a time. */
export async function eachInTurn<R>(sets: readonly Params[], one: (params: Params) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (const params of sets) out.push(await one(params));
  return out;
}

const NO_PARAMS: Params = [];

/**
 * SQLite executor over one better-sqlite3 connection. Statements are prepared
 * once per SQL text and kept (the repositories use a fixed set of texts; the
 * few built at run time, such as compiled segment rules, are bounded by the
 * cache size).
 */
export class SqliteSql implements Sql {
  readonly dialect = 'sqlite' as const;
  private readonly statements = new Map<string, Statement>();

  constructor(readonly db: Db) {}

  private prepare(sql: string): Statement {
    let st = this.statements.get(sql);
    if (st === undefined) {
      st = this.db.prepare(sql);
      if (this.statements.size >= 2000) this.statements.clear();
      this.statements.set(sql, st);
    }
    return st;
  }

  private readonly rawStatements = new Map<string, Statement>();

  /**
   * The first row as the array of its columns (better-sqlite3's raw mode), at
   * once: no object with a named property per column, which costs more than
   * the values themselves on the hot profile read (Object::Set and a map
   * transition per column, about 3,000 instructions a column under callgrind).
   * The caller names the columns in its SQL and reads them by position.
   */
  getRow(sql: string, params: Params = NO_PARAMS): unknown[] | undefined {
    let st = this.rawStatements.get(sql);
    if (st === undefined) {
      st = this.db.prepare(sql).raw(true);
      if (this.rawStatements.size >= 200) this.rawStatements.clear();
      this.rawStatements.set(sql, st);
    }
    return st.get(...params) as unknown[] | undefined;
  }

  private readonly pluckStatements = new Map<string, Statement>();

  /**
   * A statement in pluck mode. Kept up to 2,000 texts, as the object-row statements: segment rules evaluated on
   * every event are read this way, and their texts (one per rule shape, over every site) must not churn the cache.
   */
  private pluck(sql: string): Statement {
    let st = this.pluckStatements.get(sql);
    if (st === undefined) {
      st = this.db.prepare(sql).pluck(true);
      if (this.pluckStatements.size >= 2000) this.pluckStatements.clear();
      this.pluckStatements.set(sql, st);
    }
    return st;
  }

  /** The first column of the first row (better-sqlite3's pluck mode: not even an array), at once; undefined for no row. */
  getValue(sql: string, params: Params = NO_PARAMS): unknown {
    return this.pluck(sql).get(...params);
  }

  /** The first column of every row (pluck mode, as getValue), at once. */
  allValues(sql: string, params: Params = NO_PARAMS): unknown[] {
    return this.pluck(sql).all(...params);
  }

  /** Every row as the array of its columns (raw mode, as getRow), at once: for the hot reads whose rows are many or small. */
  allRows(sql: string, params: Params = NO_PARAMS): unknown[][] {
    let st = this.rawStatements.get(sql);
    if (st === undefined) {
      st = this.db.prepare(sql).raw(true);
      if (this.rawStatements.size >= 200) this.rawStatements.clear();
      this.rawStatements.set(sql, st);
    }
    return st.all(...params) as unknown[][];
  }

  get<T>(sql: string, params: Params = NO_PARAMS): Promise<T | undefined> {
    try {
      return Promise.resolve(this.prepare(sql).get(...params) as T | undefined);
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }

  all<T>(sql: string, params: Params = NO_PARAMS): Promise<T[]> {
    try {
      return Promise.resolve(this.prepare(sql).all(...params) as T[]);
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }

  run(sql: string, params: Params = NO_PARAMS): Promise<RunResult> {
    try {
      const info = this.prepare(sql).run(...params);
      return Promise.resolve({ changes: info.changes, lastInsertId: Number(info.lastInsertRowid) });
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }

  // The sets run in one synchronous loop (one statement looked up, one promise), not a promise and an
  // await per set: a lot of delivery outcomes is hundreds of rows. The first failing set stops the loop.
  getEach<T>(sql: string, sets: readonly Params[]): Promise<(T | undefined)[]> {
    if (sets.length === 0) return Promise.resolve([]);
    try {
      const st = this.prepare(sql);
      const out = new Array<T | undefined>(sets.length);
      for (let i = 0; i < sets.length; i++) out[i] = st.get(...sets[i]!) as T | undefined;
      return Promise.resolve(out);
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }

  runEach(sql: string, sets: readonly Params[]): Promise<RunResult[]> {
    if (sets.length === 0) return Promise.resolve([]);
    try {
      const st = this.prepare(sql);
      const out = new Array<RunResult>(sets.length);
      for (let i = 0; i < sets.length; i++) out[i] = { changes: st.run(...sets[i]!).changes };
      return Promise.resolve(out);
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }
}

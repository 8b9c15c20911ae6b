import pg from 'pg';

/** A statement sent through a pg client: its text and its parameter values. */
export interface SentStatement {
  text: string;
  values: unknown[];
}

/**
 * Counts every statement sent through any pg client of this process (pool clients, background polls included)
 * from now on, handing each to `onStatement` when given: the in-process benches' statements per operation.
 * Patches pg.Client.prototype.query; call once per process.
 */
export function watchPgStatements(onStatement?: (s: SentStatement) => void): {
  readonly count: number;
  /** Runs a statement on `client` without counting it or handing it on (a bench's own bookkeeping). */
  uncounted(client: pg.Client, sql: string, params?: unknown[]): Promise<pg.QueryResult>;
} {
  const origQuery = pg.Client.prototype.query;
  const counter = {
    count: 0,
    uncounted: (client: pg.Client, sql: string, params: unknown[] = []) =>
      (origQuery as (...x: unknown[]) => unknown).call(client, sql, params) as Promise<pg.QueryResult>,
  };
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    counter.count++;
    if (onStatement !== undefined) {
      const a = args[0] as string | { text: string; values?: unknown[] };
      onStatement(typeof a === 'string' ? { text: a, values: (args[1] as unknown[] | undefined) ?? [] } : { text: a.text, values: a.values ?? [] });
    }
    return (origQuery as (...x: unknown[]) => unknown).apply(this, args);
  } as typeof pg.Client.prototype.query;
  return counter;
}

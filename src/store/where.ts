/**
 * One optional filter of a list query: its SQL and its value. The condition is
 * left out when the value is undefined (or false: a flag whose SQL has no `?`);
 * otherwise each `?` of the SQL takes the value, or the array's items in order.
 */
export type Filter = readonly [sql: string, value: unknown];

/** `WHERE a AND b …` of the filters that apply (empty when none does), and their parameters. */
export function whereOf(filters: readonly Filter[]): { sql: string; params: unknown[] } {
  const parts: string[] = [];
  const params: unknown[] = [];
  for (const [sql, value] of filters) {
    if (value === undefined || value === false) continue;
    parts.push(sql);
    if (sql.includes('?')) params.push(...(Array.isArray(value) ? value : [value]));
  }
  return { sql: parts.length > 0 ? `WHERE ${parts.join(' AND ')}` : '', params };
}

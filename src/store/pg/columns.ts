import type pg from 'pg';

/**
 * The result columns (name, type oid) of each repository SQL text, as PostgreSQL
 * described them the last time the text ran on its own (PgSql) or in its
 * batched form (BatchPgSql). BatchPgSql combines a wave's texts into one
 * statement only for texts whose columns are known and read back unchanged from
 * JSON (pg/batch.ts). The texts are a fixed set; texts built at run time beyond
 * MAX_TEXTS are not remembered.
 */
export const resultColumns = new Map<string, readonly { name: string; type: number }[]>();

const MAX_TEXTS = 1000;

/** Remembers the columns of `sql` from a result's field descriptions (the svc_ bookkeeping columns of a batched form left out). */
export function noteColumns(sql: string, fields: readonly pg.FieldDef[]): void {
  if (resultColumns.has(sql) || resultColumns.size >= MAX_TEXTS) return;
  const cols: { name: string; type: number }[] = [];
  for (const f of fields) if (f.name !== 'svc_i' && f.name !== 'svc_o') cols.push({ name: f.name, type: f.dataTypeID });
  resultColumns.set(sql, cols);
}

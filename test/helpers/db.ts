import Database from 'better-sqlite3';
import path from 'node:path';

/** Reads the SQLite file of a data directory (read-only) to check exactly what was stored. */
export function query<T = Record<string, unknown>>(dataDir: string, sql: string, ...params: unknown[]): T[] {
  const db = new Database(path.join(dataDir, 'svc.db'), { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

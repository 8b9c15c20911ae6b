import Database from 'better-sqlite3';
import path from 'node:path';
import { databaseUrlFor, pgSync, PG_BASE_URL, toPg } from './backend.js';

/**
 * Reads the store of a data directory (read-only) to check exactly what was stored:
 * its SQLite file, or on a PostgreSQL run its schema (`?` placeholders either way).
 */
export function query<T = Record<string, unknown>>(dataDir: string, sql: string, ...params: unknown[]): T[] {
  if (PG_BASE_URL !== undefined) return pgSync<T>(databaseUrlFor(dataDir), toPg(sql), params);
  const db = new Database(path.join(dataDir, 'svc.db'), { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

import { Database } from '../../src/store/sqlite-driver.js';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { databaseUrlFor, pgSync, PG_BASE_URL, toPg } from './backend.js';
import type { Sql } from '../../src/store/sql.js';
import { StatsRepo, type SiteStats } from '../../src/store/stats.js';

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

/**
 * Everything the store of a data directory holds, as bytes to search for values that must never be
 * stored (plaintext secrets): the SQLite file, or every row of the PostgreSQL schema as text.
 */
export function storedBytes(dataDir: string): Buffer {
  if (PG_BASE_URL === undefined) return readFileSync(path.join(dataDir, 'svc.db'));
  const [row] = pgSync<{ s: string | null }>(
    databaseUrlFor(dataDir),
    `SELECT string_agg(query_to_xml(format('SELECT * FROM %I', table_name), true, false, '')::text, '') AS s
       FROM information_schema.tables WHERE table_schema = current_schema()`,
  );
  return Buffer.from(row?.s ?? '', 'utf8');
}

/** Changes the store of a data directory directly (to set up states no command produces); returns rows changed. */
export function execute(dataDir: string, sql: string, ...params: unknown[]): void {
  if (PG_BASE_URL !== undefined) {
    pgSync(databaseUrlFor(dataDir), toPg(sql), params);
    return;
  }
  const db = new Database(path.join(dataDir, 'svc.db'));
  try {
    db.prepare(sql).run(...params);
  } finally {
    db.close();
  }
}

/**
 * The counts `svc stats --site` prints for a site, computed by the same StatsRepo in this process over
 * query(): a before/after check costs a few reads instead of an svc process each.
 */
export async function storeStats(dataDir: string, siteId: string): Promise<SiteStats> {
  const reader = {
    dialect: PG_BASE_URL !== undefined ? 'pg' : 'sqlite',
    all: async (sql: string, params: unknown[] = []) => query(dataDir, sql, ...params),
    get: async (sql: string, params: unknown[] = []) => query(dataDir, sql, ...params)[0],
  };
  const [row] = await new StatsRepo(reader as unknown as Sql).sites(siteId);
  if (row === undefined) throw new Error(`no site ${siteId} in ${dataDir}`);
  return row;
}

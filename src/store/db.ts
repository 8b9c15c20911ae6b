import { mkdirSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { MIGRATIONS } from './migrations.js';
import { registerRuleFunctions } from './rule-sql.js';

export type Db = Database.Database;

/**
 * `full`: a commit is on disk before it is acknowledged (survives power loss).
 * With `offThreadFsync` the fsync runs on the thread pool (see GroupCommitWriter),
 * otherwise SQLite fsyncs inline (synchronous=FULL).
 * `full-inline`: always SQLite's own synchronous=FULL (for comparison in benchmarks).
 * `normal`: survives a crash of the process, not of the machine.
 */
export type SyncMode = 'full' | 'full-inline' | 'normal';

export interface OpenOptions {
  dataDir: string;
  synchronous?: SyncMode;
  /** With `full`: let the caller fsync the WAL off the event loop instead of SQLite inline. */
  offThreadFsync?: boolean;
}

/** Path of the SQLite file inside a data directory. */
export function databasePath(dataDir: string): string {
  return path.join(dataDir, 'svc.db');
}

/** Opens (creating if needed) the SQLite database of a data directory and applies pending migrations. */
export function openDatabase(opts: OpenOptions): Db {
  mkdirSync(opts.dataDir, { recursive: true });
  const db = new Database(databasePath(opts.dataDir));
  db.pragma('journal_mode = WAL');
  const inline = opts.synchronous === 'full-inline' || (opts.synchronous !== 'normal' && !opts.offThreadFsync);
  db.pragma(`synchronous = ${inline ? 'FULL' : 'NORMAL'}`);
  db.pragma('busy_timeout = 5000');
  db.pragma('foreign_keys = ON');
  db.pragma('cache_size = -65536');
  db.pragma('temp_store = MEMORY');
  migrate(db);
  registerRuleFunctions(db);
  return db;
}

/** The schema version of a database: the newest migration applied to it (0 for none). */
export function schemaVersion(db: Db): number {
  return (db.prepare('SELECT coalesce(max(version), 0) AS v FROM schema_migrations').get() as { v: number }).v;
}

/** Applies every migration newer than the recorded version, each in its own transaction. */
export function migrate(db: Db): number[] {
  db.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)',
  );
  const applied = new Set(
    (db.prepare('SELECT version FROM schema_migrations').all() as { version: number }[]).map((r) => r.version),
  );
  const known = Math.max(...MIGRATIONS.map((m) => m.version));
  const newest = Math.max(0, ...applied);
  if (newest > known) {
    throw new Error(`the database is at schema version ${newest}, newer than this svc knows (${known}): run the svc that migrated it, or a newer one`);
  }
  const ran: number[] = [];
  for (const m of MIGRATIONS) {
    if (applied.has(m.version)) continue;
    // IMMEDIATE takes the write lock first, so two processes starting together cannot both apply it.
    const apply = db.transaction(() => {
      const again = db.prepare('SELECT 1 FROM schema_migrations WHERE version = ?').get(m.version);
      if (again) return;
      db.exec(m.sql);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
        m.version,
        m.name,
        Date.now(),
      );
      ran.push(m.version);
    });
    apply.immediate();
  }
  return ran;
}

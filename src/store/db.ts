import { privateDbFile, privateDir } from './private-files.js';
import os from 'node:os';
import path from 'node:path';
import { Database } from './sqlite-driver.js';
import type BetterSqlite3 from 'better-sqlite3';
import { MIGRATIONS, type Migration } from './migrations.js';
import { compatibleFromAfter, schemaProblem, type AppliedMigration } from './schema-compat.js';
import { registerRuleFunctions } from './rule-sql.js';

export type Db = BetterSqlite3.Database;

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
  /** SQLite's page cache, in MiB (default: defaultCacheMiB()). */
  cacheMiB?: number;
}

/**
 * The page cache when none is configured: a quarter of the memory this
 * process may use (its cgroup limit when it has one, else the machine's), at
 * least 64 MiB and at most 1 GiB. SQLite holds pages as they are read, so a
 * small database never uses it all; a large one read at random (profile
 * look-ups over a million profiles) needs it: with SQLite's former 64 MiB,
 * a profile's look-up and facts over 6,000-20,000 random profiles of a
 * million cost 60-77 us of CPU, 18-20 us of it re-reading pages from the OS,
 * against 47-56 us with the pages held.
 */
export function defaultCacheMiB(): number {
  const constrained = typeof process.constrainedMemory === 'function' ? process.constrainedMemory() : 0;
  const total = os.totalmem();
  const available = constrained > 0 && constrained < total ? constrained : total;
  return Math.max(64, Math.min(1024, Math.floor(available / 4 / 1_048_576)));
}

/** Path of the SQLite file inside a data directory. */
export function databasePath(dataDir: string): string {
  return path.join(dataDir, 'svc.db');
}

/** Opens (creating if needed) the SQLite database of a data directory and applies pending migrations. */
export function openDatabase(opts: OpenOptions): Db {
  privateDir(opts.dataDir);
  privateDbFile(databasePath(opts.dataDir));
  const db = new Database(databasePath(opts.dataDir));
  db.pragma('journal_mode = WAL');
  // Deleted rows are overwritten with zeros, not left in free space where the file's bytes would still show them.
  db.pragma('secure_delete = ON');
  const inline = opts.synchronous === 'full-inline' || (opts.synchronous !== 'normal' && !opts.offThreadFsync);
  db.pragma(`synchronous = ${inline ? 'FULL' : 'NORMAL'}`);
  db.pragma('busy_timeout = 5000');
  db.pragma('foreign_keys = ON');
  db.pragma(`cache_size = ${-1024 * (opts.cacheMiB ?? defaultCacheMiB())}`);
  db.pragma('temp_store = MEMORY');
  migrate(db);
  registerRuleFunctions(db);
  return db;
}

/** The schema version of a database: the newest migration applied to it (0 for none). */
export function schemaVersion(db: Db): number {
  return (db.prepare('SELECT coalesce(max(version), 0) AS v FROM schema_migrations').get() as { v: number }).v;
}

/** Every row of schema_migrations (none when the table does not exist yet). */
export function appliedMigrations(db: Db): AppliedMigration[] {
  const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get();
  if (!table) return [];
  const hasCompat = (db.prepare('PRAGMA table_info(schema_migrations)').all() as { name: string }[]).some((c) => c.name === 'compatible_from');
  return db.prepare(`SELECT version, ${hasCompat ? 'compatible_from' : 'NULL AS compatible_from'} FROM schema_migrations ORDER BY version`).all() as AppliedMigration[];
}

/**
 * Applies every migration newer than the recorded version, each in its own
 * transaction. A store migrated by a newer svc is accepted when the
 * migrations this svc lacks are expand-only down to its own (rolling
 * upgrades; see schema-compat.ts), and refused otherwise. `list` is for tests
 * that play an earlier release.
 */
export function migrate(db: Db, list: readonly Migration[] = MIGRATIONS): number[] {
  db.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL, compatible_from INTEGER)',
  );
  const cols = db.prepare('PRAGMA table_info(schema_migrations)').all() as { name: string }[];
  if (!cols.some((c) => c.name === 'compatible_from')) {
    try {
      db.exec('ALTER TABLE schema_migrations ADD COLUMN compatible_from INTEGER');
    } catch (err) {
      // Another process starting at the same moment added it.
      if (!/duplicate column/i.test((err as Error).message)) throw err;
    }
  }
  const rows = appliedMigrations(db);
  const applied = new Set(rows.map((r) => r.version));
  const known = Math.max(...list.map((m) => m.version));
  const newest = Math.max(0, ...applied);
  if (newest > known) {
    const problem = schemaProblem(known, rows);
    if (problem !== null) throw new Error(problem);
    return [];
  }
  const ran: number[] = [];
  const previous = db.prepare('SELECT version, compatible_from FROM schema_migrations WHERE version = ?');
  for (const m of list) {
    if (applied.has(m.version)) continue;
    // IMMEDIATE takes the write lock first, so two processes starting together cannot both apply it.
    const apply = db.transaction(() => {
      const again = db.prepare('SELECT 1 FROM schema_migrations WHERE version = ?').get(m.version);
      if (again) return;
      db.exec(m.sql);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at, compatible_from) VALUES (?, ?, ?, ?)').run(
        m.version,
        m.name,
        Date.now(),
        compatibleFromAfter(m, previous.get(m.version - 1) as AppliedMigration | undefined),
      );
      ran.push(m.version);
    });
    apply.immediate();
  }
  return ran;
}

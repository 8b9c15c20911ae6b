import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, copyFileSync, existsSync, fsyncSync, openSync, renameSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { Database } from './sqlite-driver.js';
import type BetterSqlite3 from 'better-sqlite3';
import { databasePath, migrate } from './db.js';
import { MIGRATIONS } from './migrations.js';
import { schemaProblem, type AppliedMigration } from './schema-compat.js';

/** What a copy of the embedded store holds, once checked. */
export interface StoreFileFacts {
  bytes: number;
  schemaVersion: number;
}

/** Thrown with a message for the operator; `kind` says which CLI error it is. */
export class StoreFileError extends Error {
  constructor(
    readonly kind: 'not_found' | 'conflict' | 'invalid' | 'busy',
    message: string,
  ) {
    super(message);
  }
}

function fsyncPath(p: string): void {
  const fd = openSync(p, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Creates an empty file of mode 0600 beside `target` (so rename keeps it on one filesystem). */
function privateTemp(target: string, tag: string): string {
  const tmp = path.join(path.dirname(target), `.${path.basename(target)}.${tag}-${randomBytes(6).toString('hex')}`);
  closeSync(openSync(tmp, 'wx', 0o600));
  return tmp;
}

/** Checks a SQLite file is an intact svc store; returns its schema version and migrations. */
function inspect(file: string): { schemaVersion: number; migrations: AppliedMigration[] } {
  let db: BetterSqlite3.Database;
  try {
    db = new Database(file, { fileMustExist: true });
  } catch (err) {
    throw new StoreFileError('invalid', `${file} cannot be opened as a SQLite database: ${(err as Error).message}`);
  }
  try {
    let check: unknown;
    try {
      check = db.pragma('quick_check', { simple: true });
    } catch (err) {
      throw new StoreFileError('invalid', `${file} is not a SQLite database: ${(err as Error).message}`);
    }
    if (check !== 'ok') throw new StoreFileError('invalid', `${file} fails SQLite's integrity check: ${String(check)}`);
    const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get();
    if (!table) throw new StoreFileError('invalid', `${file} is a SQLite database but not an svc store (no schema_migrations)`);
    const cols = (db.prepare('PRAGMA table_info(schema_migrations)').all() as { name: string }[]).map((c) => c.name);
    const migrations = db
      .prepare(`SELECT version, ${cols.includes('compatible_from') ? 'compatible_from' : 'NULL AS compatible_from'} FROM schema_migrations ORDER BY version`)
      .all() as AppliedMigration[];
    return { schemaVersion: Math.max(0, ...migrations.map((m) => m.version)), migrations };
  } finally {
    db.close();
  }
}

/**
 * A consistent online copy of the embedded store of `dataDir` into `to`, with
 * SQLite's online backup API over a connection of its own, while a server may
 * be writing: the copy is one point in time (a backup step that sees another
 * connection's write starts over, so the rest is copied in one step). Written
 * to a 0600 file beside `to`, checked (integrity, schema), synced, then renamed
 * into place, so `to` is either absent or a whole backup.
 */
export async function backupStore(dataDir: string, to: string, opts: { force: boolean }): Promise<StoreFileFacts> {
  const source = databasePath(dataDir);
  if (!existsSync(source)) throw new StoreFileError('not_found', `${dataDir} holds no svc store (no ${path.basename(source)})`);
  if (existsSync(to) && !opts.force) throw new StoreFileError('conflict', `${to} exists; --force replaces it`);
  const tmp = privateTemp(to, 'backup');
  try {
    const db = new Database(source, { fileMustExist: true });
    try {
      db.pragma('busy_timeout = 5000');
      await db.backup(tmp, { progress: ({ totalPages }) => Math.max(100, totalPages) });
    } finally {
      db.close();
    }
    chmodSync(tmp, 0o600);
    const facts = inspect(tmp);
    for (const side of ['-wal', '-shm', '-journal']) rmSync(`${tmp}${side}`, { force: true });
    fsyncPath(tmp);
    renameSync(tmp, to);
    fsyncPath(path.dirname(path.resolve(to)));
    return { bytes: statSync(to).size, schemaVersion: facts.schemaVersion };
  } catch (err) {
    for (const f of [tmp, `${tmp}-wal`, `${tmp}-shm`, `${tmp}-journal`]) rmSync(f, { force: true });
    throw err;
  }
}

/** What a restore did. */
export interface RestoreFacts extends StoreFileFacts {
  /** The schema version after the restore (pending migrations of this svc applied). */
  migratedTo: number;
  /** Where the store it replaced was kept (--force), if there was one. */
  replacedKeptAt: string | null;
  /** A sealed secret of the restored store (to check the secret key opens it), if it has any. */
  sealedSample: string | null;
}

/**
 * Puts the backup `from` in place as the embedded store of `dataDir`. The
 * caller holds the data directory's restore lock (no server runs). The backup
 * is copied (0600) beside the store, checked, migrated to this svc's schema,
 * then swapped in; a store already there is refused unless `force`, and then
 * kept as `svc.db.replaced-<time>` rather than deleted.
 */
export function restoreStore(dataDir: string, from: string, opts: { force: boolean }): RestoreFacts {
  if (!existsSync(from) || !statSync(from).isFile()) throw new StoreFileError('not_found', `no backup file ${from}`);
  const target = databasePath(dataDir);
  const present = existsSync(target);
  if (present && !opts.force) {
    throw new StoreFileError('conflict', `${dataDir} already holds a store; --force replaces it (the current one is kept as svc.db.replaced-<time>)`);
  }
  const tmp = privateTemp(target, 'restore');
  let sealedSample: string | null = null;
  let migratedTo: number;
  let facts: { schemaVersion: number; migrations: AppliedMigration[] };
  try {
    copyFileSync(from, tmp);
    chmodSync(tmp, 0o600);
    facts = inspect(tmp);
    const known = Math.max(...MIGRATIONS.map((m) => m.version));
    const problem = facts.schemaVersion > known ? schemaProblem(known, facts.migrations) : null;
    if (problem !== null) throw new StoreFileError('invalid', `the backup cannot be used by this svc: ${problem}`);
    const db = new Database(tmp, { fileMustExist: true });
    try {
      db.pragma('journal_mode = WAL');
      migrate(db);
      migratedTo = Math.max(0, ...(db.prepare('SELECT version FROM schema_migrations').all() as { version: number }[]).map((r) => r.version));
      const row = db
        .prepare(
          "SELECT secret_enc AS s FROM destinations WHERE secret_enc IS NOT NULL UNION ALL SELECT secrets_enc FROM ad_connections WHERE secrets_enc IS NOT NULL LIMIT 1",
        )
        .get() as { s: string } | undefined;
      sealedSample = row?.s ?? null;
      db.pragma('wal_checkpoint(TRUNCATE)');
    } finally {
      db.close();
    }
    for (const side of ['-wal', '-shm']) rmSync(`${tmp}${side}`, { force: true });
    fsyncPath(tmp);
  } catch (err) {
    for (const f of [tmp, `${tmp}-wal`, `${tmp}-shm`]) rmSync(f, { force: true });
    throw err;
  }
  let replacedKeptAt: string | null = null;
  if (present) {
    replacedKeptAt = `${target}.replaced-${new Date().toISOString().replace(/[:.]/g, '-')}`;
    renameSync(target, replacedKeptAt);
    // The old write-ahead log belongs to the old file: left beside the new one, SQLite could replay it into it.
    for (const side of ['-wal', '-shm']) if (existsSync(`${target}${side}`)) renameSync(`${target}${side}`, `${replacedKeptAt}${side}`);
  } else {
    for (const side of ['-wal', '-shm']) rmSync(`${target}${side}`, { force: true });
  }
  renameSync(tmp, target);
  fsyncPath(dataDir);
  return { bytes: statSync(target).size, schemaVersion: facts.schemaVersion, migratedTo, replacedKeptAt, sealedSample };
}

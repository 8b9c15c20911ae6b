import { privateDbFile, privateDir } from './private-files.js';
import path from 'node:path';
import { Database } from './sqlite-driver.js';

/** The lock file of a data directory (a tiny SQLite database of its own, never the store). */
export function lockPath(dataDir: string): string {
  return path.join(dataDir, 'svc.lock');
}

function isBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

/**
 * What `svc serve` holds on an embedded store while it runs: a shared SQLite
 * lock on `svc.lock`, kept by the connection for its whole life
 * (locking_mode=EXCLUSIVE keeps a read's shared lock). The lock is the
 * kernel's (POSIX advisory locks), so it goes with the process however it
 * ends, in whatever PID namespace it ran, and several servers can hold it at
 * once. `svc restore` takes the exclusive lock, so it is refused while any
 * server holds the store, and a server does not start while a restore runs.
 * Null when a restore holds the directory.
 */
export function holdServeLock(dataDir: string): { release: () => void } | null {
  privateDir(dataDir);
  privateDbFile(lockPath(dataDir));
  const db = new Database(lockPath(dataDir));
  try {
    db.pragma('busy_timeout = 2000');
    db.exec('CREATE TABLE IF NOT EXISTS svc_lock (note TEXT)');
    db.pragma('locking_mode = EXCLUSIVE');
    db.prepare('SELECT count(*) AS n FROM svc_lock').get();
  } catch (err) {
    db.close();
    if (isBusy(err)) return null;
    throw err;
  }
  return { release: () => db.close() };
}

/**
 * The exclusive lock of a data directory for `svc restore`: null when a server
 * holds the store (or another restore runs); `release` lets servers start again.
 */
export function takeRestoreLock(dataDir: string): { release: () => void } | null {
  privateDir(dataDir);
  privateDbFile(lockPath(dataDir));
  const db = new Database(lockPath(dataDir));
  try {
    db.pragma('busy_timeout = 0');
    db.exec('CREATE TABLE IF NOT EXISTS svc_lock (note TEXT)');
    db.exec('BEGIN EXCLUSIVE');
  } catch (err) {
    db.close();
    if (isBusy(err)) return null;
    throw err;
  }
  return {
    release: () => {
      db.exec('ROLLBACK');
      db.close();
    },
  };
}

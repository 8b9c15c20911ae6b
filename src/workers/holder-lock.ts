import { readdirSync, rmSync } from 'node:fs';
import { privateDbFile, privateDir } from '../store/private-files.js';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Database } from '../store/sqlite-driver.js';
import type BetterSqlite3 from 'better-sqlite3';

/** Where each running `svc serve` of a data directory keeps its holder file. */
export function holdersDir(dataDir: string): string {
  return path.join(dataDir, 'holders');
}

function isBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

/** Removes a holder file and the journal SQLite may have left beside it. */
function remove(file: string): void {
  rmSync(file, { force: true });
  rmSync(`${file}-journal`, { force: true });
}

/**
 * The lease holder id a holder file names when no process holds it any more,
 * or null: when its process still runs (its lock is held), or the file is
 * not (yet) a complete holder file.
 */
function deadHolderOf(file: string): string | null {
  let db: BetterSqlite3.Database | null = null;
  try {
    db = new Database(file, { fileMustExist: true });
    db.pragma('busy_timeout = 0');
    const row = db.prepare('SELECT holder FROM holder').get() as { holder: string } | undefined;
    return row?.holder ?? null;
  } catch (err) {
    if (isBusy(err)) return null;
    // Not a holder file we can read (half-written by a process killed while creating it): it names nobody.
    return null;
  } finally {
    db?.close();
  }
}

export interface HolderClaim {
  /** Lease holder ids of earlier processes of this data directory that are gone. */
  dead: string[];
  /** Gives the holder file up (on shutdown). */
  release: () => void;
}

/**
 * Registers this process as a live lease holder of the data directory and
 * finds the earlier holders of the directory that are gone. Each running
 * `svc serve` keeps a small SQLite file in `DIR/holders/` naming its holder
 * id, with an exclusive lock held for its whole life (locking_mode=EXCLUSIVE
 * after a write). The lock is the kernel's (POSIX advisory locks): it goes
 * with the process however it ends, before the process is reaped, and
 * whatever PID namespace it ran in (a container restart starts a new one).
 * A file whose lock can be taken names a holder that is gone: its id is
 * returned and the file removed.
 */
export function claimHolder(dataDir: string, holderId: string): HolderClaim {
  const dir = holdersDir(dataDir);
  privateDir(dataDir);
  privateDir(dir);
  const own = path.join(dir, `${Date.now().toString(36)}-${randomBytes(6).toString('hex')}.lock`);
  privateDbFile(own);
  const db = new Database(own);
  try {
    db.pragma('busy_timeout = 2000');
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('CREATE TABLE holder (holder TEXT NOT NULL)');
    db.prepare('INSERT INTO holder (holder) VALUES (?)').run(holderId);
  } catch (err) {
    db.close();
    remove(own);
    throw err;
  }
  const dead: string[] = [];
  for (const name of readdirSync(dir)) {
    const file = path.join(dir, name);
    if (!name.endsWith('.lock') || file === own) continue;
    const holder = deadHolderOf(file);
    if (holder === null) continue;
    dead.push(holder);
    remove(file);
  }
  return {
    dead,
    release: () => {
      db.close();
      remove(own);
    },
  };
}

import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';

/** Creates a data directory (or one inside it) private to the owner, 0700 whatever the umask, and brings an existing one to 0700. */
export function privateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
}

/**
 * Makes a SQLite file of the data directory exist with mode 0600 before SQLite
 * opens it, whatever the umask: SQLite gives the -wal, -shm and -journal files
 * it creates the mode of the database file. An empty file is an empty SQLite
 * database. Files (and sidecars) of an older install are brought to 0600.
 */
export function privateDbFile(file: string): void {
  closeSync(openSync(file, 'a', 0o600));
  chmodSync(file, 0o600);
  for (const side of ['-wal', '-shm', '-journal']) if (existsSync(`${file}${side}`)) chmodSync(`${file}${side}`, 0o600);
}

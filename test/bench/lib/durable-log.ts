/**
 * The durable work of the storing baselines, done the way svc's SQLite
 * writer does it (src/store/writer.ts with off-thread fsync, the server
 * default): rows added during one turn of the event loop go into one
 * transaction (WAL, synchronous=NORMAL), the WAL is fsynced on the libuv pool
 * after each commit while new rows gather for the next group, and a row's
 * promise settles only once its group is on disk. The table comes from a
 * database that svc's own migrations created (`svcTableSchema`), so it has
 * exactly svc's columns and indexes.
 */
import { closeSync, fsync, mkdirSync, openSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { openDatabase } from '../../../src/store/db.js';

/** The CREATE statements of one of svc's tables and its indexes, as svc's migrations leave them. */
export function svcTableSchema(dir: string, table: string): string[] {
  const template = path.join(dir, 'template');
  mkdirSync(template, { recursive: true });
  const svcDb = openDatabase({ dataDir: template, synchronous: 'normal' });
  const rows = svcDb
    .prepare("SELECT sql FROM sqlite_master WHERE tbl_name = ? AND sql IS NOT NULL ORDER BY type = 'table' DESC, name")
    .all(table) as { sql: string }[];
  svcDb.close();
  if (rows.length === 0) throw new Error(`svc has no table ${table}`);
  return rows.map((r) => r.sql);
}

interface Pending {
  row: unknown[];
  resolve: (id: number) => void;
  reject: (err: Error) => void;
}

export class DurableLog {
  private readonly db: Database.Database;
  private readonly walFd: number;
  private readonly insert: Database.Statement;
  private readonly begin: Database.Statement;
  private readonly commit: Database.Statement;
  private queue: Pending[] = [];
  private unsynced: { p: Pending; id: number }[] = [];
  private scheduled = false;
  private syncing = false;
  /** Groups committed and rows written. */
  readonly counters = { groups: 0, rows: 0 };

  /** `insertSql` must end in RETURNING id. */
  constructor(file: string, ddl: readonly string[], insertSql: string) {
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('cache_size = -65536');
    for (const s of ddl) this.db.exec(s);
    this.walFd = openSync(`${file}-wal`, 'r');
    this.insert = this.db.prepare(insertSql);
    this.begin = this.db.prepare('BEGIN IMMEDIATE');
    this.commit = this.db.prepare('COMMIT');
  }

  /** Resolves with the row's id once the group holding it is on disk. */
  add(row: unknown[]): Promise<number> {
    return new Promise((resolve, reject) => {
      this.queue.push({ row, resolve, reject });
      this.schedule();
    });
  }

  get busy(): boolean {
    return this.queue.length > 0 || this.syncing || this.unsynced.length > 0;
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    if (this.syncing || this.queue.length === 0) return;
    const group = this.queue;
    this.queue = [];
    const done: { p: Pending; id: number }[] = [];
    try {
      this.begin.run();
      for (const p of group) done.push({ p, id: Number((this.insert.get(...p.row) as { id: number }).id) });
      this.commit.run();
    } catch (err) {
      if (this.db.inTransaction) this.db.prepare('ROLLBACK').run();
      for (const p of group) p.reject(err as Error);
      return;
    }
    this.unsynced.push(...done);
    this.counters.groups++;
    this.counters.rows += group.length;
    this.sync();
  }

  private sync(): void {
    if (this.syncing || this.unsynced.length === 0) return;
    this.syncing = true;
    const settled = this.unsynced;
    this.unsynced = [];
    fsync(this.walFd, (err) => {
      this.syncing = false;
      for (const s of settled) {
        if (err) s.p.reject(err);
        else s.p.resolve(s.id);
      }
      if (this.queue.length > 0) this.schedule();
    });
  }

  /** Waits for every row added so far to be on disk, then closes the database. */
  async close(): Promise<void> {
    while (this.busy) {
      this.flush();
      await new Promise((r) => setTimeout(r, 2));
    }
    closeSync(this.walFd);
    this.db.close();
  }
}

/** Rows of a table in a file a DurableLog wrote. */
export function countRows(file: string, table: string): number {
  const db = new Database(file, { readonly: true });
  try {
    return (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
  } finally {
    db.close();
  }
}

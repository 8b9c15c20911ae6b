import { closeSync, openSync } from 'node:fs';
import { databasePath, openDatabase, type Db, type SyncMode } from './db.js';
import { GroupCommitWriter } from './writer.js';
import { SecretBox } from './secret-box.js';
import { SqliteSql, type Sql } from './sql.js';
import { newRepoShared, Repos, type RepoShared, type WriteOp } from './repos.js';
import type { SiteStats } from './stats.js';

/** What another instance changed (PostgreSQL notifications): `work` is new outbox rows, jobs, deliveries or trigger fires; `all` means notifications may have been missed. */
export type RemoteTopic = 'segments' | 'web' | 'work' | 'all';

/** How a store runs write operations: SQLite's group-commit writer, or PostgreSQL transactions. */
export interface WriteRunner {
  run<T>(fn: WriteOp<T>): Promise<T>;
  /** Calls `fn` after every committed transaction (used to wake the delivery workers). */
  onCommit(fn: () => void): void;
  /** Flushes pending writes and refuses new ones. */
  close(): Promise<void>;
  readonly counters: { batches: number; ops: number; stalled: number };
  readonly pending: number;
}

/**
 * The data of one svc installation: the repositories (reads go straight to
 * them), `write` for everything that changes data, and the secrets of the
 * data directory. `db` is the SQLite connection for SQLite-only maintenance
 * (checkpoints, seeding pragmas); it is null on PostgreSQL.
 */
export class Store extends Repos {
  readonly secrets: SecretBox;

  constructor(
    sql: Sql,
    shared: RepoShared,
    private readonly writer: WriteRunner,
    readonly dataDir: string,
    readonly db: Db | null,
    private readonly onClose: () => Promise<void>,
  ) {
    super(sql, shared);
    this.secrets = SecretBox.forDataDir(dataDir);
  }

  private readonly remoteListeners: ((topic: RemoteTopic) => void)[] = [];

  /**
   * Calls `fn` when another process changed what this one caches (`segments`, `web`), or
   * when it may have missed such news (`all`, after a lost LISTEN connection).
   * PostgreSQL only; on SQLite, readers see other connections' commits through data_version.
   */
  onRemoteChange(fn: (topic: RemoteTopic) => void): void {
    this.remoteListeners.push(fn);
  }

  /**
   * Calls `fn` when another instance wrote work for the workers (outbox rows, jobs, deliveries, trigger
   * fires), or when such news may have been missed. PostgreSQL only, like onRemoteChange.
   */
  onRemoteWork(fn: () => void): void {
    this.onRemoteChange((topic) => {
      if (topic === 'work' || topic === 'all') fn();
    });
  }

  /** Called by the PostgreSQL listener. */
  remoteChange(topic: RemoteTopic): void {
    for (const fn of this.remoteListeners) fn(topic);
  }

  get dialect(): Sql['dialect'] {
    return this.sql.dialect;
  }

  /**
   * Runs `fn` as one write operation: in the next group-commit transaction on
   * SQLite, in a transaction of its own on PostgreSQL. `fn` must do every read
   * and write through `tx`, must not await anything but `tx`, and must not call
   * `write` itself. Resolves with its result only once the transaction has
   * committed (and, by default, reached the disk).
   */
  write<T>(fn: WriteOp<T>): Promise<T> {
    return this.writer.run(fn);
  }

  onCommit(fn: () => void): void {
    this.writer.onCommit(fn);
  }

  get writeCounters(): WriteRunner['counters'] {
    return this.writer.counters;
  }

  get pendingWrites(): number {
    return this.writer.pending;
  }

  stats(siteId?: string): Promise<SiteStats[]> {
    return this.counts.sites(siteId);
  }

  /** Flushes pending writes (waiting for their fsync) and closes the database. */
  async close(): Promise<void> {
    await this.writer.close();
    await this.onClose();
  }
}

/**
 * Opens the store of a data directory. `offThreadFsync` (for the long-running
 * server) keeps fsync off the event loop when synchronous is `full`.
 */
export function openStore(opts: { dataDir: string; synchronous?: SyncMode; offThreadFsync?: boolean }): Store {
  const db = openDatabase(opts);
  const asyncFsync = opts.offThreadFsync === true && (opts.synchronous ?? 'full') === 'full';
  const walFd = asyncFsync ? openSync(`${databasePath(opts.dataDir)}-wal`, 'r') : null;
  const sql = new SqliteSql(db);
  const shared = newRepoShared();
  const writer = new GroupCommitWriter(db, new Repos(sql, shared), 1000, walFd);
  const close = async () => {
    if (walFd !== null) closeSync(walFd);
    if (db.open) {
      try {
        db.pragma('wal_checkpoint(TRUNCATE)');
      } catch {
        // another process may hold the database; the WAL stays valid
      }
      db.close();
    }
  };
  return new Store(sql, shared, writer, opts.dataDir, db, close);
}

import { closeSync, openSync, statSync } from 'node:fs';
import { databasePath, openDatabase, type Db, type OpenOptions } from './db.js';
import { GroupCommitWriter } from './writer.js';
import { SecretBox } from './secret-box.js';
import { SqliteSql, type Sql } from './sql.js';
import { newRepoShared, Repos, type RepoShared, type WriteOp, type WriteOptions } from './repos.js';
import type { SiteStats } from './stats.js';
import type { GroupCommitListener } from './observe.js';
import type { GroupCommitListeners } from './group-commits.js';
import type { AppliedMigration } from './schema-compat.js';
import { ERASED_TABLES } from './privacy.js';

/** What another instance changed (PostgreSQL notifications): `work` is new outbox rows, jobs, deliveries or trigger fires; `all` means notifications may have been missed. */
export type RemoteTopic = 'segments' | 'web' | 'work' | 'all';

/** How a store runs write operations: SQLite's group-commit writer, or PostgreSQL transactions. */
export interface WriteRunner {
  run<T>(fn: WriteOp<T>, opts?: WriteOptions): Promise<T>;
  /** Calls `fn` after every committed transaction (used to wake the delivery workers). */
  onCommit(fn: () => void): void;
  /** Flushes pending writes and refuses new ones. */
  close(): Promise<void>;
  readonly counters: { batches: number; ops: number; stalled: number };
  readonly pending: number;
  /** Told once per committed group (operations, round trips, duration). */
  readonly groupCommits: GroupCommitListeners;
  /** `fn`'s reads in one read transaction (SQLite: GroupCommitWriter.readTogether); absent where each read is a round trip anyway. */
  readTogether?<T>(fn: () => Promise<T>): Promise<T>;
}

/** Connections of a PostgreSQL pool, for /metrics. */
export interface PoolUsage {
  /** Connections open (idle or checked out). */
  total: number;
  idle: number;
  /** Requests waiting for a connection. */
  waiting: number;
  max: number;
}

/** Time partitions of the PostgreSQL store (pg/partitions.ts): created ahead, dropped when wholly past retention. */
export interface PartitionMaintenance {
  /** Creates the partitions of the month of `now` and the months just after it; returns how many it created. */
  ensure(now: number): Promise<number>;
  /** Drops the partitions wholly before `cutoff` that hold no row the retention keeps; returns how many it dropped. */
  dropExpired(cutoff: number): Promise<number>;
  /** Since the process started: partitions created and dropped, rows moved out of a DEFAULT partition. */
  readonly counters: { created: number; dropped: number; moved: number };
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
    writer.onCommit(() => {
      this.progressAt = Date.now();
    });
  }

  /** Write operations submitted and not yet settled, and when writes last made progress (a commit, or the first of a busy spell). */
  private writesInFlight = 0;
  private progressAt = 0;

  /** The connection pool's usage on PostgreSQL (set by openPgStore); null on SQLite. */
  poolUsage: (() => PoolUsage) | null = null;

  /** Time-partition upkeep on PostgreSQL (set by openPgStore); null on SQLite. */
  partitions: PartitionMaintenance | null = null;

  /** On SQLite: why the database file is no longer the one this store opened (set by openStore); null on PostgreSQL. */
  fileProblem: (() => string | null) | null = null;

  /**
   * How long writes have been waiting with no commit (0 when none wait):
   * /readyz fails when it passes SVC_READY_STALL_MS.
   */
  writerStalledMs(now = Date.now()): number {
    return this.writesInFlight > 0 ? Math.max(0, now - this.progressAt) : 0;
  }

  /** The rows of schema_migrations, read through the store's own connection (readiness: reachable and migrated). */
  async migrationsApplied(): Promise<AppliedMigration[]> {
    const rows = await this.sql.all<AppliedMigration>('SELECT version, compatible_from FROM schema_migrations ORDER BY version');
    return rows.map((r) => ({ version: Number(r.version), compatible_from: r.compatible_from === null ? null : Number(r.compatible_from) }));
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
   * Runs `fn` as one write operation, in the next group-commit transaction
   * (`opts.key`: see WriteOptions). `fn` must do every read
   * and write through `tx`, must not await anything but `tx`, and must not call
   * `write` itself. Resolves with its result only once the transaction has
   * committed (and, by default, reached the disk).
   */
  write<T>(fn: WriteOp<T>, opts?: WriteOptions): Promise<T> {
    if (this.writesInFlight++ === 0) this.progressAt = Date.now();
    // One reaction for either outcome (not finally + then: a promise and a turn fewer per write).
    return this.writer.run(fn, opts).then(
      (r) => {
        this.writesInFlight--;
        if (this.shared.erasures.pending) this.clearErased();
        return r;
      },
      (err: unknown) => {
        this.writesInFlight--;
        throw err;
      },
    );
  }

  private vacuuming: Promise<void> | null = null;

  /**
   * After an erasure, leaves nothing of the deleted rows readable in the
   * store's files. SQLite (secure_delete zeroes deleted content): a TRUNCATE
   * checkpoint copies the zeroed pages into svc.db and empties the WAL that
   * still holds the old ones; when a transaction is open or a reader holds the
   * WAL, it is tried again after the next write. PostgreSQL: VACUUM of the
   * erased tables, in the background (dead tuples stay until then; WAL and
   * backups are outside svc's reach).
   */
  private clearErased(): void {
    const db = this.db;
    if (db !== null) {
      if (!db.open || db.inTransaction) return;
      try {
        const [row] = db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[];
        if (row?.busy === 0) this.shared.erasures.pending = false;
      } catch {
        // busy: tried again after the next write
      }
      return;
    }
    if (this.vacuuming) return;
    this.shared.erasures.pending = false;
    this.vacuuming = (async () => {
      for (const table of ERASED_TABLES) await this.sql.run(`VACUUM ${table}`).catch(() => undefined);
    })().finally(() => {
      this.vacuuming = null;
      if (this.shared.erasures.pending) this.clearErased();
    });
  }

  /** Resolves once a VACUUM started by an erasure on PostgreSQL has finished (for close and tests). */
  async erasedVacuumed(): Promise<void> {
    while (this.vacuuming) await this.vacuuming;
  }

  onCommit(fn: () => void): void {
    this.writer.onCommit(fn);
  }

  /**
   * Runs `fn`, an operation that only reads, with its reads grouped: on SQLite
   * in one read transaction (one snapshot, the locks taken once instead of
   * once a statement; see GroupCommitWriter.readTogether); on PostgreSQL it
   * simply runs. `fn` may still write through `write` (a write ends the
   * grouping; its later reads run one by one).
   */
  readTogether<T>(fn: () => Promise<T>): Promise<T> {
    return this.writer.readTogether ? this.writer.readTogether(fn) : fn();
  }

  /** Calls `listener` once per committed group of the writer (both stores); returns the unsubscribe. */
  onGroupCommit(listener: GroupCommitListener): () => void {
    return this.writer.groupCommits.add(listener);
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
    await this.erasedVacuumed();
    await this.onClose();
  }
}

/**
 * Opens the store of a data directory. `offThreadFsync` (for the long-running
 * server) keeps fsync off the event loop when synchronous is `full`.
 */
export function openStore(opts: OpenOptions): Store {
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
  const store = new Store(sql, shared, writer, opts.dataDir, db, close);
  // A data directory moved, removed or replaced under a running server: its writes would go to a file no one will open again.
  const file = databasePath(opts.dataDir);
  const opened = statSync(file);
  store.fileProblem = () => {
    try {
      const now = statSync(file);
      return now.ino === opened.ino && now.dev === opened.dev ? null : 'the database file was replaced by another file';
    } catch {
      return 'the database file is gone from the data directory';
    }
  };
  return store;
}

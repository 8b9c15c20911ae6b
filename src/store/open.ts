import { existsSync } from 'node:fs';
import type { Config } from '../config.js';
import { databasePath, migrate, schemaVersion } from './db.js';
import { MIGRATIONS } from './migrations.js';
import { privateDbFile, privateDir } from './private-files.js';
import { Database } from './sqlite-driver.js';
import { openStore, type Store } from './store.js';

/**
 * The PostgreSQL driver and store, loaded only when a database URL is set: a
 * command on the embedded store (every CLI call) skips loading them.
 */
const postgres = () => import('./pg/store.js');

/**
 * Opens the store the configuration names: PostgreSQL when `databaseUrl` is
 * set (migrations applied under an advisory lock), else the embedded SQLite
 * store of `dataDir`. `server` is for `svc serve`: fsync off the event loop on
 * SQLite, LISTEN for other instances' work on PostgreSQL.
 */
export async function openConfiguredStore(
  config: Pick<Config, 'dataDir' | 'synchronous' | 'sqliteCacheMb' | 'databaseUrl' | 'databasePoolSize' | 'databaseStatementTimeoutMs'>,
  opts: { server?: boolean; onPoolError?: (err: Error) => void } = {},
): Promise<Store> {
  if (config.databaseUrl !== undefined) {
    const { openPgStore } = await postgres();
    return openPgStore({
      url: config.databaseUrl,
      poolSize: config.databasePoolSize,
      statementTimeoutMs: config.databaseStatementTimeoutMs,
      dataDir: config.dataDir,
      listen: opts.server === true,
      ...(opts.onPoolError ? { onPoolError: opts.onPoolError } : {}),
    });
  }
  return openStore({
    dataDir: config.dataDir,
    synchronous: config.synchronous,
    offThreadFsync: opts.server === true,
    ...(config.sqliteCacheMb !== undefined ? { cacheMiB: config.sqliteCacheMb } : {}),
  });
}

/** Whether the configuration names a store that exists: always on PostgreSQL, the svc.db file on SQLite. */
export function storeExists(config: Pick<Config, 'dataDir' | 'databaseUrl'>): boolean {
  return config.databaseUrl !== undefined || existsSync(databasePath(config.dataDir));
}

/** What `svc migrate` applied: the migration versions, the schema version now, and each migration's name. */
export interface MigrationReport {
  applied: number[];
  version: number;
  names: Map<number, string>;
}

/**
 * Applies the pending migrations of the configured store without opening it
 * for work: on PostgreSQL under an advisory lock (instances and operators
 * migrating at the same moment apply each migration once), on SQLite in the
 * data directory's svc.db (created private when missing).
 */
export async function migrateConfiguredStore(config: Pick<Config, 'dataDir' | 'databaseUrl'>): Promise<MigrationReport> {
  if (config.databaseUrl !== undefined) {
    const [{ migratePg, pgClientConfig, pgSchemaVersion }, { PG_MIGRATIONS }, { default: pg }] = await Promise.all([
      postgres(),
      import('./pg/migrations.js'),
      import('pg'),
    ]);
    const { schema, ...client } = pgClientConfig({ url: config.databaseUrl, poolSize: 1 });
    const pool = new pg.Pool(client);
    pool.on('error', () => undefined);
    try {
      const applied = await migratePg(pool, schema);
      return { applied, version: await pgSchemaVersion(pool), names: new Map(PG_MIGRATIONS.map((m) => [m.version, m.name])) };
    } finally {
      await pool.end();
    }
  }
  privateDir(config.dataDir);
  privateDbFile(databasePath(config.dataDir));
  const db = new Database(databasePath(config.dataDir));
  try {
    db.pragma('busy_timeout = 5000');
    db.pragma('journal_mode = WAL');
    const applied = migrate(db);
    return { applied, version: schemaVersion(db), names: new Map(MIGRATIONS.map((m) => [m.version, m.name])) };
  } finally {
    db.close();
  }
}

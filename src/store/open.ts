import type { Config } from '../config.js';
import { openStore, type Store } from './store.js';
import { openPgStore } from './pg/store.js';

/**
 * Opens the store the configuration names: PostgreSQL when `databaseUrl` is
 * set (migrations applied under an advisory lock), else the embedded SQLite
 * store of `dataDir`. `server` is for `svc serve`: fsync off the event loop on
 * SQLite, LISTEN for other instances' work on PostgreSQL.
 */
export async function openConfiguredStore(
  config: Pick<Config, 'dataDir' | 'synchronous' | 'databaseUrl' | 'databasePoolSize' | 'databaseStatementTimeoutMs'>,
  opts: { server?: boolean; onPoolError?: (err: Error) => void } = {},
): Promise<Store> {
  if (config.databaseUrl !== undefined) {
    return openPgStore({
      url: config.databaseUrl,
      poolSize: config.databasePoolSize,
      statementTimeoutMs: config.databaseStatementTimeoutMs,
      dataDir: config.dataDir,
      listen: opts.server === true,
      ...(opts.onPoolError ? { onPoolError: opts.onPoolError } : {}),
    });
  }
  return openStore({ dataDir: config.dataDir, synchronous: config.synchronous, offThreadFsync: opts.server === true });
}

import { openConfiguredStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { backendEnv } from './backend.js';

/**
 * Opens the store of a test's data directory the way `svc` does: SQLite
 * (synchronous=normal) by default, the directory's PostgreSQL schema on a `pg`
 * run (see backend.ts).
 */
export function openTestStore(dataDir: string, opts: { poolSize?: number; statementTimeoutMs?: number } = {}): Promise<Store> {
  return openConfiguredStore({
    dataDir,
    synchronous: 'normal',
    databaseUrl: backendEnv(dataDir).SVC_DATABASE_URL,
    databasePoolSize: opts.poolSize ?? 4,
    databaseStatementTimeoutMs: opts.statementTimeoutMs ?? 30_000,
  });
}

import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { databasePath } from './db.js';
import type { Store } from './store.js';

/**
 * Moves WAL checkpoints off the event loop: the server's connection stops
 * checkpointing (wal_autocheckpoint=0) and a worker thread with its own
 * connection runs PASSIVE checkpoints whenever the WAL has grown. A PASSIVE
 * checkpoint never blocks the writer. If the worker cannot start or dies, the
 * connection goes back to SQLite's automatic checkpoints. On PostgreSQL
 * (no SQLite connection) there is nothing to checkpoint: a no-op.
 */
export function startCheckpointer(store: Store, logger: Logger): { stop: () => Promise<void> } {
  const db = store.db;
  if (db === null) return { stop: async () => undefined };
  const file = databasePath(store.dataDir);
  let worker: Worker | null = null;
  try {
    worker = new Worker(new URL('./checkpoint-worker.js', import.meta.url), { workerData: { file } });
  } catch (err) {
    logger.warn({ err: (err as Error).message }, 'checkpoint worker unavailable; checkpointing inline');
    return { stop: async () => undefined };
  }
  db.pragma('wal_autocheckpoint = 0');
  worker.on('error', (err) => {
    logger.warn({ err: err.message }, 'checkpoint worker failed; checkpointing inline');
    if (db.open) db.pragma('wal_autocheckpoint = 1000');
  });
  worker.unref();
  return {
    stop: async () => {
      if (!worker) return;
      worker.postMessage('stop');
      await worker.terminate().catch(() => undefined);
      worker = null;
      if (db.open) db.pragma('wal_autocheckpoint = 1000');
    },
  };
}

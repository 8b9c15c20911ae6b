import { parentPort, workerData } from 'node:worker_threads';
import { Database } from './sqlite-driver.js';

/** Worker thread body of startCheckpointer: a PASSIVE checkpoint every 200 ms (nearly free when nothing is new). */
const { file } = workerData as { file: string };
const db = new Database(file);
db.pragma('busy_timeout = 1000');

const timer = setInterval(() => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch {
    // the WAL may be missing between restarts, or the database busy: try again next tick
  }
}, 200);

parentPort?.on('message', (m) => {
  if (m === 'stop') {
    clearInterval(timer);
    db.close();
  }
});

import path from 'node:path';
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';

/**
 * Which store the tests run against. The `pg` project of vitest.config.ts sets
 * SVC_TEST_BACKEND=pg (it runs only when SVC_TEST_DATABASE_URL is set): every
 * data directory a test creates then maps to a PostgreSQL schema of its own,
 * named after the directory and this run, and every svc the helpers start or
 * run gets SVC_DATABASE_URL pointing at it. The run's schemas are dropped by
 * the global teardown (test/helpers/pg-global.ts).
 */
export const PG_BASE_URL: string | undefined =
  process.env.SVC_TEST_BACKEND === 'pg' ? process.env.SVC_TEST_DATABASE_URL : undefined;

const SYNC_WORKER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'pg-sync-worker.mjs');

/** The PostgreSQL schema of a test's data directory. */
export function schemaFor(dataDir: string): string {
  const run = inject('pgRun' as never) as string;
  const base = path.basename(path.resolve(dataDir)).toLowerCase().replace(/[^a-z0-9]/g, '_');
  return `svct_${run}_${base}`.slice(0, 63);
}

/** The database URL of a test's data directory (PostgreSQL runs only). */
export function databaseUrlFor(dataDir: string): string {
  const u = new URL(PG_BASE_URL!);
  u.searchParams.set('schema', schemaFor(dataDir));
  return u.toString();
}

/** Environment that points svc at the data directory's store: {} on SQLite. */
export function backendEnv(dataDir: string | undefined): Record<string, string> {
  if (PG_BASE_URL === undefined || dataDir === undefined) return {};
  return { SVC_DATABASE_URL: databaseUrlFor(dataDir) };
}

/** The thread that holds this test file's PostgreSQL connection (pg-sync-worker.mjs), started on first use. */
let pgThread: { worker: Worker; send: MessagePort; replies: MessagePort; signal: Int32Array } | undefined;

function thread(): NonNullable<typeof pgThread> {
  if (pgThread !== undefined) return pgThread;
  const signal = new Int32Array(new SharedArrayBuffer(4));
  const requests = new MessageChannel();
  const replies = new MessageChannel();
  const worker = new Worker(SYNC_WORKER, {
    workerData: { port: replies.port2, requests: requests.port2, signal },
    transferList: [replies.port2, requests.port2],
  });
  // Neither the thread nor its ports keep a test process alive.
  worker.unref();
  replies.port1.unref();
  requests.port1.unref();
  pgThread = { worker, send: requests.port1, replies: replies.port1, signal };
  return pgThread;
}

/**
 * Runs SQL on PostgreSQL synchronously and returns the rows (as JSON would carry them): the statement runs
 * on a worker thread's connection while this thread waits for its reply, so the synchronous helpers
 * (query, execute, cleanup) cost a round trip, not a process and a connection each.
 */
export function pgSync<T>(url: string, sql: string, params: unknown[] = []): T[] {
  const t = thread();
  Atomics.store(t.signal, 0, 0);
  t.send.postMessage({ url, sql, params: JSON.stringify(params) });
  if (Atomics.wait(t.signal, 0, 0, 30_000) === 'timed-out') {
    // Its connection may be stuck behind a lock: the next statement gets a new thread and connection.
    pgThread = undefined;
    void t.worker.terminate();
    throw new Error(`PostgreSQL query failed: no answer in 30 s\n${sql}`);
  }
  const reply = receiveMessageOnPort(t.replies)?.message as { rows?: string; error?: string } | undefined;
  if (reply === undefined) throw new Error(`PostgreSQL query failed: the query thread sent no reply\n${sql}`);
  if (reply.error !== undefined) throw new Error(`PostgreSQL query failed: ${reply.error}\n${sql}`);
  return JSON.parse(reply.rows!) as T[];
}

/**
 * Runs a statement on PostgreSQL without waiting for it (dropping a finished test's schema: a DROP SCHEMA
 * of some 70 tables waits on the disk for most of a second): the query thread runs such statements in
 * order on a connection of their own, and pgFlush waits for them at the end of the file
 * (test/helpers/pg-setup.ts). One cut off by the end of the process is left to the global teardown.
 */
export function pgLater(url: string, sql: string): void {
  thread().send.postMessage({ url, sql, params: '[]', later: true });
}

/** Waits until the statements pgLater handed to the query thread have run. */
export function pgFlush(): void {
  if (pgThread === undefined) return;
  const t = pgThread;
  Atomics.store(t.signal, 0, 0);
  t.send.postMessage({ flush: true });
  if (Atomics.wait(t.signal, 0, 0, 120_000) === 'timed-out') throw new Error('PostgreSQL: the statements run later did not finish in 120 s');
  receiveMessageOnPort(t.replies);
}

/**
 * `?` placeholders and the SQLite spellings tests use, for PostgreSQL:
 * instr → strpos; json_extract(col, '$.key') → the jsonb value (a JSON number
 * comes back as a number, as from SQLite), or its text where the test compares
 * it with a string literal.
 */
export function toPg(sql: string): string {
  let n = 0;
  return sql
    .replace(/\?/g, () => `$${++n}`)
    .replace(/\binstr\(/g, 'strpos(')
    .replace(/json_extract\(([\w.]+), '\$\.(\w+)'\)(\s*=\s*')?/g, (_m, col: string, key: string, eq: string | undefined) =>
      eq ? `(${col}::jsonb ->> '${key}')${eq}` : `(${col}::jsonb -> '${key}')`,
    );
}

/**
 * The storing baseline of the ingestion benchmark: a bare node:http server
 * that does the durable work svc's ingestion must do and nothing else. It
 * parses the JSON body, inserts one row into an `events` table with exactly
 * svc's columns and indexes (copied from a database svc's own migrations
 * created, so it follows every migration), and answers 201 only once the row
 * is on disk, with svc's group commit: the rows that arrive during one turn of
 * the event loop go into one transaction (SQLite WAL, synchronous=NORMAL), and
 * the WAL is fsynced on the libuv pool after each commit, new rows gathering
 * meanwhile into the next group. That is what svc's GroupCommitWriter does
 * with off-thread fsync, the server default.
 *
 *   node --import ./test/bench/register.mjs test/bench/lib/bare-store-server.ts --data DIR [--port N]
 *
 * Prints `bare-store listening on http://127.0.0.1:PORT` when ready; stops on
 * SIGTERM/SIGINT after the last group is on disk. `--count` with `--data`
 * prints the number of stored rows and exits.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { countRows, DurableLog, svcTableSchema } from './durable-log.js';
import { serveUntilSignal, storingServer } from './serve-bare.js';

const { values } = parseArgs({
  options: { port: { type: 'string', default: '0' }, data: { type: 'string' }, count: { type: 'boolean', default: false } },
});
if (!values.data) throw new Error('--data DIR is required');
const dataDir = values.data;
const file = path.join(dataDir, 'events.db');

if (values.count) {
  process.stdout.write(`${countRows(file, 'events')}\n`);
  process.exit(0);
}

const log = new DurableLog(
  file,
  svcTableSchema(dataDir, 'events'),
  'INSERT INTO events (site_id, session_id, profile_id, visitor_id, type, ts, body, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id',
);

const server = storingServer((row) => log.add(row));

serveUntilSignal(server, 'bare-store', Number(values.port), () => log.close());

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
import { closeSync, fsync, mkdirSync, openSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { openDatabase } from '../../../src/store/db.js';

const { values } = parseArgs({
  options: { port: { type: 'string', default: '0' }, data: { type: 'string' }, count: { type: 'boolean', default: false } },
});
if (!values.data) throw new Error('--data DIR is required');
const dataDir = values.data;
const file = path.join(dataDir, 'events.db');

if (values.count) {
  const db = new Database(file, { readonly: true });
  process.stdout.write(`${(db.prepare('SELECT count(*) AS n FROM events').get() as { n: number }).n}\n`);
  db.close();
  process.exit(0);
}

/** svc's events table and its indexes, as svc's migrations leave them. */
function eventsSchema(): string[] {
  const template = path.join(dataDir, 'template');
  mkdirSync(template, { recursive: true });
  const svcDb = openDatabase({ dataDir: template, synchronous: 'normal' });
  const rows = svcDb
    .prepare("SELECT sql FROM sqlite_master WHERE tbl_name = 'events' AND sql IS NOT NULL ORDER BY type = 'table' DESC, name")
    .all() as { sql: string }[];
  svcDb.close();
  return rows.map((r) => r.sql);
}

const db = new Database(file);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.pragma('cache_size = -65536');
for (const ddl of eventsSchema()) db.exec(ddl);
const walFd = openSync(`${file}-wal`, 'r');

const insert = db.prepare(
  'INSERT INTO events (site_id, session_id, profile_id, visitor_id, type, ts, body, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id',
);
const begin = db.prepare('BEGIN IMMEDIATE');
const commit = db.prepare('COMMIT');

interface Pending {
  row: unknown[];
  done: (err: Error | null, id?: number) => void;
}
let queue: Pending[] = [];
let scheduled = false;
let syncing = false;
let unsynced: { done: Pending['done']; id: number }[] = [];

function schedule(): void {
  if (scheduled) return;
  scheduled = true;
  setImmediate(flush);
}

function flush(): void {
  scheduled = false;
  if (syncing || queue.length === 0) return;
  const group = queue;
  queue = [];
  begin.run();
  for (const p of group) {
    const { id } = insert.get(...p.row) as { id: number };
    unsynced.push({ done: p.done, id });
  }
  commit.run();
  sync();
}

function sync(): void {
  if (syncing || unsynced.length === 0) return;
  syncing = true;
  const settled = unsynced;
  unsynced = [];
  fsync(walFd, (err) => {
    syncing = false;
    for (const s of settled) s.done(err, s.id);
    if (queue.length > 0) schedule();
  });
}

const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    let e: { site_id?: unknown; session_id?: unknown; visitor_id?: unknown; type?: unknown };
    try {
      e = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof e;
    } catch {
      res.writeHead(400, { 'Content-Type': 'application/json' }).end('{"error":{"code":"invalid_json"}}');
      return;
    }
    const now = Date.now();
    const body = JSON.stringify(e);
    queue.push({
      row: [String(e.site_id), String(e.session_id), `prof_${String(e.session_id)}`, e.visitor_id === undefined ? null : String(e.visitor_id), String(e.type), now, body, now],
      done: (err, id) => {
        if (err) {
          res.writeHead(500).end();
          return;
        }
        const out = Buffer.from(`{"ok":true,"id":${id}}`);
        res.writeHead(201, { 'Content-Type': 'application/json', 'Content-Length': out.length }).end(out);
      },
    });
    schedule();
  });
  req.on('error', () => res.destroy());
});

server.listen(Number(values.port), '127.0.0.1', () => {
  const addr = server.address() as AddressInfo;
  process.stdout.write(`bare-store listening on http://127.0.0.1:${addr.port}\n`);
});

const stop = () => {
  server.close();
  server.closeAllConnections();
  const finish = () => {
    if (queue.length > 0 || syncing || unsynced.length > 0) {
      flush();
      setTimeout(finish, 5);
      return;
    }
    closeSync(walFd);
    db.close();
    process.exit(0);
  };
  finish();
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);

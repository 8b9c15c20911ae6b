/**
 * The storing baseline of the ingestion benchmark on PostgreSQL (issue 20): a bare node:http server that does
 * the durable work svc's ingestion must do on PostgreSQL and nothing else. It parses the JSON body and inserts
 * one row into svc's own `events` table (a schema svc's migrations made: the same partitioned table, columns,
 * indexes and identity sequence), with group commit the way svc's PostgreSQL writer does it at its cheapest:
 * the rows that arrive during one turn of the event loop are one set-based statement (`INSERT … SELECT FROM
 * unnest(…)`, a named prepared statement, its own transaction), at most two groups in flight on a pool of two
 * connections (svc's two write lanes), new rows gathering meanwhile; 201 only once the statement's commit has
 * returned (synchronous_commit on: on disk). One round trip a group, against svc's ~4; no session, profile,
 * identity or outbox row. Its CPU per event (the server plus the backends serving it) is the floor any design
 * on PostgreSQL pays for storing an event.
 *
 *   node --import ./test/bench/register.mjs test/bench/lib/bare-store-pg-server.ts --database-url URL?schema=S [--port N]
 *
 * Prints `bare-store-pg listening on http://127.0.0.1:PORT` when ready; stops on SIGTERM/SIGINT after the
 * groups in flight have returned. `--count` prints the number of stored rows and exits.
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { serveUntilSignal, storingServer, type BareEventRow } from './serve-bare.js';

const { values } = parseArgs({
  options: { port: { type: 'string', default: '0' }, 'database-url': { type: 'string' }, count: { type: 'boolean', default: false } },
});
if (!values['database-url']) throw new Error('--database-url URL?schema=S is required');
const u = new URL(values['database-url']);
const schema = u.searchParams.get('schema');
if (schema === null || !/^[a-z_][a-z0-9_]{0,62}$/i.test(schema)) throw new Error('--database-url needs a schema parameter');
u.searchParams.delete('schema');
const pool = new pg.Pool({ connectionString: u.toString(), max: 2, options: `-c search_path=${schema}` });

if (values.count) {
  const r = await pool.query<{ n: string }>('SELECT count(*) AS n FROM events');
  process.stdout.write(`${r.rows[0]!.n}\n`);
  await pool.end();
  process.exit(0);
}

const INSERT = {
  name: 'bare_events_insert',
  text:
    'INSERT INTO events (site_id, session_id, profile_id, visitor_id, type, ts, body, received_at) ' +
    'SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int8[], $7::text[], $8::int8[]) RETURNING id',
};

interface Pending {
  row: BareEventRow;
  resolve: (id: string) => void;
  reject: (err: Error) => void;
}

const LANES = 2;
const queue: Pending[] = [];
let inFlight = 0;
let scheduled = false;

function schedule(): void {
  if (scheduled) return;
  scheduled = true;
  setImmediate(flush);
}

function flush(): void {
  scheduled = false;
  while (queue.length > 0 && inFlight < LANES) {
    const group = queue.splice(0, 1000);
    inFlight++;
    const cols: unknown[][] = [[], [], [], [], [], [], [], []];
    for (const p of group) for (let i = 0; i < 8; i++) cols[i]!.push(p.row[i]);
    pool.query<{ id: string }>({ ...INSERT, values: cols }).then(
      (r) => {
        inFlight--;
        for (let i = 0; i < group.length; i++) group[i]!.resolve(r.rows[i]?.id ?? '0');
        if (queue.length > 0) schedule();
      },
      (err: Error) => {
        inFlight--;
        for (const p of group) p.reject(err);
        if (queue.length > 0) schedule();
      },
    );
  }
}

function add(row: BareEventRow): Promise<string> {
  return new Promise((resolve, reject) => {
    queue.push({ row, resolve, reject });
    schedule();
  });
}

const server = storingServer(add);

serveUntilSignal(server, 'bare-store-pg', Number(values.port), async () => {
  while (inFlight > 0 || queue.length > 0) await new Promise((r) => setTimeout(r, 5));
  await pool.end();
});

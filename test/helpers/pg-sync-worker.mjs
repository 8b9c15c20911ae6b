// The thread behind the synchronous PostgreSQL helper (pgSync in backend.ts): it keeps one connection per
// server for the life of the test file and runs one statement per request, so a query, execute or cleanup
// costs a round trip instead of a node process and a new connection. Request: { url, sql, params } as JSON
// text; reply on the port given at start: { rows } or { error }, then it wakes the caller through `signal`.
import { workerData } from 'node:worker_threads';
import pg from 'pg';

/** @type {{ port: import('node:worker_threads').MessagePort; requests: import('node:worker_threads').MessagePort; signal: Int32Array }} */
const { port, requests, signal } = workerData;

/** Connections by server URL (without svc's `schema` parameter), and the search_path each one has now. */
const clients = new Map();

async function clientFor(server, byServer) {
  let entry = byServer.get(server);
  if (entry) return entry;
  const client = new pg.Client({
    connectionString: server,
    types: { getTypeParser: (oid, format) => (oid === 20 || oid === 1700 ? Number : pg.types.getTypeParser(oid, format)) },
  });
  entry = { client, schema: null };
  // A connection the server drops is replaced on the next request instead of failing every later one.
  client.on('error', () => byServer.delete(server));
  byServer.set(server, entry);
  try {
    await client.connect();
  } catch (err) {
    byServer.delete(server);
    throw err;
  }
  return entry;
}

async function run({ url, sql, params }, pool = clients) {
  // `schema` is svc's own URL parameter (src/store/pg/store.ts): the search_path of the connection.
  const u = new URL(url);
  const schema = u.searchParams.get('schema');
  u.searchParams.delete('schema');
  const entry = await clientFor(u.toString(), pool);
  try {
    if (entry.schema !== schema) {
      entry.schema = null;
      if (schema) await entry.client.query('SELECT set_config($1, $2, false)', ['search_path', schema]);
      else await entry.client.query('RESET search_path');
      entry.schema = schema;
    }
    const r = await entry.client.query(sql, JSON.parse(params));
    return { rows: JSON.stringify(r.rows ?? []) };
  } catch (err) {
    // A statement error leaves the connection usable; anything else (a broken connection) gets a new one.
    if (!(err instanceof pg.DatabaseError)) {
      pool.delete(u.toString());
      entry.client.end().catch(() => undefined);
    }
    throw err;
  }
}

/**
 * Statements the caller does not wait for (`later`: dropping a finished test's schema), run one after another
 * on a connection of their own so they never delay a query a test waits for; `flush` answers once they have
 * all run.
 */
let later = Promise.resolve();
const laterClients = new Map();

requests.on('message', (req) => {
  if (req.later) {
    later = later.then(() => run(req, laterClients)).catch(() => undefined);
    return;
  }
  (req.flush ? later.then(() => ({ rows: '[]' })) : run(req)).then(
    (reply) => port.postMessage(reply),
    (err) => port.postMessage({ error: String(err?.message ?? err) }),
  ).finally(() => {
    Atomics.store(signal, 0, 1);
    Atomics.notify(signal, 0);
  });
});

/**
 * What recording a lot of delivery outcomes costs PostgreSQL, by the deliveries table's fillfactor (never part of
 * the pass/fail suite):
 *
 *   node --import ./test/bench/register.mjs test/bench/deliveries-update-pg.ts --database-url URL [--rows 20000 --lot 200]
 *
 * For each fillfactor (100, the default, and 50) a fresh schema pgdrain_ff_<pid> gets the deliveries table and its
 * indexes as svc's migrations create them, `rows` pending deliveries of 4 destinations (fan-out batches of 1,000
 * events, ascending ids, a ~450-byte payload), then the drain's success update (the statement markDeliveredMany
 * sends, `UPDATE … FROM unnest`) in lots of `lot` ids, in each destination's due order. Printed per delivery:
 * the WAL bytes and records of the updates (EXPLAIN (ANALYZE, WAL) of each lot: this statement's own, not the
 * cluster's), the backend's CPU (/proc utime + stime around the lots), buffers dirtied, the table's pages after;
 * and the inserts' backend CPU and WAL (pg_current_wal_insert_lsn: the cluster's, so other work adds to it).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { intFlag } from './lib/args.js';

const { values } = parseArgs({ options: { 'database-url': { type: 'string' }, rows: { type: 'string' }, lot: { type: 'string' }, rounds: { type: 'string' } } });
if (values['database-url'] === undefined) {
  process.stdout.write('usage: deliveries-update-pg.ts --database-url URL [--rows 20000] [--lot 200] [--rounds 2]\n');
  process.exit(2);
}
const rows = intFlag('rows', values.rows, 20_000, 100, 1_000_000);
const lot = intFlag('lot', values.lot, 200, 1, 10_000);
const rounds = intFlag('rounds', values.rounds, 2, 1, 20);
const schema = `pgdrain_ff_${process.pid}`;
const c = new pg.Client({ connectionString: values['database-url'] });
await c.connect();
const pid = (await c.query<{ p: number }>('SELECT pg_backend_pid() AS p')).rows[0]!.p;
const cpuMs = () => {
  const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const rest = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return (Number(rest[11]) + Number(rest[12])) * 10;
};
const UPDATE = `UPDATE deliveries SET state = 'delivered', attempts = attempts + 1, last_status = b.status, last_error = NULL, delivered_at = b.now, updated_at = b.now
  FROM (SELECT * FROM unnest($1::text[], $2::int[], $3::bigint[]) AS u(id, status, now)) AS b WHERE deliveries.id = b.id`;

async function run(ff: number): Promise<void> {
  await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}; SET search_path TO ${schema}`);
  await c.query(`CREATE TABLE deliveries (
  id TEXT PRIMARY KEY, site_id TEXT NOT NULL, destination_id TEXT NOT NULL, outbox_id BIGINT, event_type TEXT NOT NULL, payload TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending','delivered','failed')), attempts INTEGER NOT NULL DEFAULT 0, next_attempt_at BIGINT NOT NULL,
  last_status INTEGER, last_error TEXT, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, delivered_at BIGINT) WITH (fillfactor = ${ff});
CREATE INDEX deliveries_due ON deliveries (destination_id, next_attempt_at, id) WHERE state = 'pending';
CREATE INDEX deliveries_destination ON deliveries (destination_id, created_at);
CREATE INDEX deliveries_site ON deliveries (site_id, created_at);
CREATE INDEX deliveries_delivered ON deliveries (delivered_at) WHERE state = 'delivered';`);
  const dests = ['dst_a', 'dst_b', 'dst_c', 'dst_d'];
  const ids: Record<string, string[]> = Object.fromEntries(dests.map((d) => [d, []]));
  let n = 0;
  const i0 = cpuMs();
  const w0 = (await c.query<{ l: string }>('SELECT pg_current_wal_insert_lsn() AS l')).rows[0]!.l;
  for (let e = 0; e < rows / 4; e += 1000) {
    const now = 1_790_000_000_000 + e;
    const vals: unknown[][] = [[], [], [], []];
    for (let k = e; k < Math.min(rows / 4, e + 1000); k++) {
      const payload = JSON.stringify({ type: 'pageview', id: `evt_${k}`, data: { url: `https://shop.example/products/item-${k % 500}?utm_source=newsletter&utm_medium=email`, referrer: 'https://www.example.org/', visitor_id: `v_${k % 2000}`, pad: 'x'.repeat(250) } });
      for (const d of dests) {
        const id = `dlv_${String(n++).padStart(12, '0')}`;
        ids[d]!.push(id);
        vals[0]!.push(id);
        vals[1]!.push(d);
        vals[2]!.push(payload);
        vals[3]!.push(now);
      }
    }
    await c.query(
      `INSERT INTO deliveries (id, site_id, destination_id, event_type, payload, state, next_attempt_at, created_at, updated_at)
       SELECT id, 'site_1', d, 'pageview', p, 'pending', t, t, t FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) AS u(id, d, p, t)`,
      vals,
    );
  }
  const insertCpu = cpuMs() - i0;
  const insertWal = Number((await c.query<{ d: string }>('SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1) AS d', [w0])).rows[0]!.d);
  await c.query('VACUUM ANALYZE deliveries');
  const pages0 = (await c.query<{ p: string }>("SELECT pg_relation_size('deliveries') / 8192 AS p")).rows[0]!.p;
  let wal = 0;
  let records = 0;
  let dirtied = 0;
  let cpu = 0;
  // Lots as a drain makes them: each destination's next `lot / 4` deliveries, the four lanes side by side.
  const per = Math.max(1, Math.floor(lot / 4));
  for (let i = 0; i < rows / 4; i += per) {
    const batch = dests.flatMap((d) => ids[d]!.slice(i, i + per));
    const params = [batch, batch.map(() => 200), batch.map(() => 1_790_100_000_000 + i)];
    const c0 = cpuMs();
    const plan = await c.query({ text: `EXPLAIN (ANALYZE, WAL, BUFFERS, TIMING OFF) ${UPDATE}`, values: params, rowMode: 'array' });
    cpu += cpuMs() - c0;
    const text = (plan.rows as string[][]).map((r) => r[0]).join('\n');
    const w = /WAL: records=(\d+)(?: fpi=\d+)? bytes=(\d+)/.exec(text);
    if (w) {
      records += Number(w[1]);
      wal += Number(w[2]);
    }
    const b = /dirtied=(\d+)/.exec(text);
    if (b) dirtied += Number(b[1]);
  }
  const pages1 = (await c.query<{ p: string }>("SELECT pg_relation_size('deliveries') / 8192 AS p")).rows[0]!.p;
  process.stdout.write(`fillfactor ${ff}: ${rows} deliveries, lots of ${per * 4}: backend CPU ${((cpu * 1000) / rows).toFixed(1)} µs/delivery, WAL ${(wal / rows).toFixed(0)} bytes and ${(records / rows).toFixed(2)} records/delivery, ${(dirtied / rows).toFixed(3)} buffers dirtied/delivery; table pages ${pages0} -> ${pages1}; the inserts: ${((insertCpu * 1000) / rows).toFixed(1)} µs/delivery, WAL ${(insertWal / rows).toFixed(0)} bytes/delivery (cluster-wide)\n`);
}

try {
  for (let r = 0; r < rounds; r++) for (const ff of [100, 50]) await run(ff);
} finally {
  await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await c.end();
}

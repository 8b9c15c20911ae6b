/**
 * CPU per delivery of a webhook backlog drain on PostgreSQL, in process (never part of the pass/fail suite):
 *
 *   node --import ./test/bench/register.mjs test/bench/webhooks-drain-pg.ts \
 *     --database-url postgres://postgres@127.0.0.1:5432/test [--backlog 5000 --destinations 4 --rounds 1]
 *
 * Opens svc's store on a fresh schema (pgdrain_<pid>, dropped at the end), creates `destinations`
 * destinations posting to a local receiver (lib/count-receiver.ts, its own process, answers 200 at once),
 * inserts `backlog` events' deliveries to each (fan-out order, one insertDeliveries per 1,000 events), then
 * runs svc's WebhookDispatcher (default concurrency 16) until every delivery is recorded. Printed per
 * delivery: this process's CPU (process.cpuUsage), the CPU of the PostgreSQL backends serving the store's
 * pool (/proc utime + stime), statements sent.count (and the most frequent texts), group commits and their round
 * trips, rows inserted and updated (HOT or not) in the schema's tables (pg_stat_user_tables, read after
 * the store is closed so its backends have flushed their counters), and WAL bytes (pg_current_wal_lsn
 * before and after: the whole cluster's, so other work on a shared server adds to it). The receiver's
 * counts check that nothing was lost or sent.count twice. CPU, not wall clock: on a shared host the clock
 * measures the neighbours. Run it against a base build as interleaved A/B pairs. With --profile P, a CPU
 * profile of the drain alone (node:inspector) goes to P.<round>.cpuprofile.
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import pino from 'pino';
import { openConfiguredStore } from '../../src/store/open.js';
import type { GroupCommitInfo } from '../../src/store/observe.js';
import type { NewDelivery } from '../../src/store/webhooks.js';
import { WebhookDispatcher } from '../../src/webhooks/dispatcher.js';
import { pgBackendPids } from './lib/sockets.js';
import { processCpuMs } from './lib/child.js';
import { intFlag } from './lib/args.js';
import { watchPgStatements } from './lib/pg-statements.js';

const { values } = parseArgs({
  options: {
    'database-url': { type: 'string' },
    backlog: { type: 'string' },
    destinations: { type: 'string' },
    concurrency: { type: 'string' },
    rounds: { type: 'string' },
    label: { type: 'string' },
    profile: { type: 'string' },
    explain: { type: 'boolean', default: false },
    fillfactor: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (values.help || values['database-url'] === undefined) {
  process.stdout.write('usage: webhooks-drain-pg.ts --database-url URL [--backlog 5000] [--destinations 4] [--concurrency 16] [--rounds 1] [--label x]\n');
  process.exit(values.help ? 0 : 2);
}
const backlog = intFlag('backlog', values.backlog, 5000, 1, 1_000_000);
const destinations = intFlag('destinations', values.destinations, 4, 1, 64);
const concurrency = intFlag('concurrency', values.concurrency, 16, 1, 256);
const rounds = intFlag('rounds', values.rounds, 1, 1, 100);
const label = values.label ?? 'drain';

const schema = `pgdrain_${process.pid}`;
const url = new URL(values['database-url']);
url.searchParams.set('schema', schema);
const plainUrl = new URL(values['database-url']);
plainUrl.searchParams.delete('schema');

/** Statements sent.count through any pg client of this process, by the first words of their text. */
const texts = new Map<string, number>();
/** The last statement (text and values) of each of the drain's kinds, for --explain. */
const lastOf = new Map<string, { text: string; values: unknown[] }>();
const sent = watchPgStatements((s) => {
  const text = s.text.replace(/\s+/g, ' ').slice(0, 60);
  texts.set(text, (texts.get(text) ?? 0) + 1);
  if (/^(INSERT INTO health_log|UPDATE deliveries|SELECT id, site_id, destination_id)/.test(text)) lastOf.set(text.slice(0, 20), s);
});

const rx = fork(path.join(path.dirname(fileURLToPath(import.meta.url)), 'lib', 'count-receiver.ts'), [], { stdio: 'inherit' });
const ask = (m: string) => {
  const answer = new Promise<{ requests: number; distinct: number; cpuMs: number }>((r) => rx.once('message', r as never));
  rx.send(m);
  return answer;
};
const rxUrl = await new Promise<string>((r) => rx.once('message', (m: { url: string }) => r(m.url)));

const admin = new pg.Client({ connectionString: plainUrl.toString(), application_name: 'svc-bench-admin' });
await admin.connect();
// The admin client's statements are not the drain's.
const adminQuery = (sql: string, params: unknown[] = []) => sent.uncounted(admin, sql, params);

const payload = (i: number) =>
  JSON.stringify({
    type: 'pageview',
    id: `evt_${String(i).padStart(12, '0')}`,
    occurred_at: new Date(1_700_000_000_000 + i).toISOString(),
    site_id: 'site',
    data: { url: `https://shop.example/products/item-${i % 500}?utm_source=newsletter&utm_medium=email`, referrer: 'https://www.example.org/', visitor_id: `v_${i % 2000}`, session_id: `s_${i % 700}`, properties: { plan: 'pro', cart_value: 129.5 } },
  });

async function round(k: number): Promise<void> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-pgdrain-'));
  const store = await openConfiguredStore(
    { dataDir, synchronous: 'full', databaseUrl: url.toString(), databasePoolSize: 10, databaseStatementTimeoutMs: 60_000 },
    { server: true },
  );
  if (values.fillfactor !== undefined) await adminQuery(`ALTER TABLE ${schema}.deliveries SET (fillfactor = ${Number(values.fillfactor)})`);
  const site = await store.write((tx) => tx.sites.create({ name: 'drain' }));
  const dests = [];
  for (let d = 0; d < destinations; d++) {
    dests.push(await store.write((tx) => tx.webhooks.createDestination({ siteId: site.id, url: `${rxUrl}/hook/${d}`, secretEnc: null, events: ['all'] })));
  }
  for (let i = 0; i < backlog; i += 1000) {
    const now = Date.now() - 60_000;
    const list: NewDelivery[] = [];
    for (let e = i; e < Math.min(backlog, i + 1000); e++) {
      const body = payload(e);
      for (const d of dests) list.push({ siteId: site.id, destinationId: d.id, outboxId: null, eventType: 'pageview', payload: body, now });
    }
    await store.write((tx) => tx.webhooks.insertDeliveries(list));
  }
  const total = backlog * destinations;
  await new Promise((r) => setTimeout(r, 300));
  const stats0 = await tableStats();
  const wal0 = (await adminQuery('SELECT pg_current_wal_lsn() AS l')).rows[0].l as string;
  const groups: GroupCommitInfo[] = [];
  store.onGroupCommit((g) => groups.push(g));
  await ask('reset');
  texts.clear();
  const s0 = sent.count;

  const dispatcher = new WebhookDispatcher(store, {
    allowPrivate: true,
    retry: { delaysMs: [60_000], jitter: 0 },
    disableAfter: { failures: 1_000, windowMs: 0 },
    concurrency,
    pollMs: 5_000,
    leaseMs: 30_000,
    logger: pino({ level: 'warn' }),
  });
  const pids = () => pgBackendPids([process.pid], Number(url.port || 5432));
  const adminPid = (await adminQuery('SELECT pg_backend_pid() AS p')).rows[0].p as number;
  const cpuOf = (ps: number[]) => ps.filter((p) => p !== adminPid).reduce((a, p) => a + (processCpuMs(p) ?? 0), 0);
  const backendPids = pids();
  const b0 = cpuOf(backendPids);
  const c0 = process.cpuUsage();
  const session = values.profile !== undefined ? new Session() : null;
  if (session) {
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
  }
  const t0 = performance.now();
  dispatcher.start();
  while (dispatcher.counters.delivered < total) await new Promise((r) => setTimeout(r, 20));
  const ms = performance.now() - t0;
  const c1 = process.cpuUsage(c0);
  if (session) {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(`${values.profile}.${k + 1}.cpuprofile`, JSON.stringify(profile));
    session.disconnect();
  }
  const after = pids();
  // Backends opened during the drain count from zero.
  const b1 = cpuOf(after) - b0;
  const wal1 = (await adminQuery('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn) AS d', [wal0])).rows[0].d as string;
  const statements = sent.count - s0;
  await dispatcher.stop(2_000);
  const topTexts = [...texts].sort((a, b) => b[1] - a[1]).slice(0, 10);
  const rxStats = await ask('stats');
  if (values.explain) await explain();
  await store.close();
  await new Promise((r) => setTimeout(r, 200));
  const stats1 = await tableStats();
  const left = Number((await adminQuery(`SELECT count(*) AS n FROM ${schema}.deliveries WHERE state <> 'delivered'`)).rows[0].n);

  const per = (x: number) => (x / total).toFixed(2);
  const trips = groups.reduce((a, g) => a + g.roundTrips, 0);
  const ops = groups.reduce((a, g) => a + g.operations, 0);
  process.stdout.write(
    `${label} round ${k + 1}: ${total} deliveries (${backlog} x ${destinations}) in ${ms.toFixed(0)} ms (${((total * 1000) / ms).toFixed(0)}/s); ` +
      `svc ${((c1.user + c1.system) / total).toFixed(1)} µs/delivery, backends ${((b1 * 1000) / total).toFixed(1)} µs/delivery (${after.length - 1} backends); ` +
      `receiver ${rxStats.requests} requests, ${rxStats.distinct} distinct, ${rxStats.requests - rxStats.distinct} repeated, not delivered in db ${left}\n` +
      `  statements ${per(statements)}/delivery, group commits ${groups.length} (${(ops / Math.max(1, groups.length)).toFixed(1)} ops, ${(trips / Math.max(1, groups.length)).toFixed(1)} round trips each; ${per(trips)} round trips/delivery), ` +
      `WAL ${(Number(wal1) / total).toFixed(0)} bytes/delivery (cluster-wide)\n`,
  );
  for (const [rel, s] of Object.entries(stats1)) {
    const a = stats0[rel] ?? { ins: 0, upd: 0, hot: 0, size: 0 };
    const d = { ins: s.ins - a.ins, upd: s.upd - a.upd, hot: s.hot - a.hot };
    if (d.ins + d.upd === 0) continue;
    process.stdout.write(`  ${rel}: inserts ${per(d.ins)}, updates ${per(d.upd)} (HOT ${per(d.hot)}) per delivery; size ${(s.size / 1024).toFixed(0)} KiB\n`);
  }
  for (const [t, n] of topTexts) process.stdout.write(`    ${(n / total).toFixed(4)}/delivery  ${t}\n`);
  await adminQuery(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  rmSync(dataDir, { recursive: true, force: true });
}

/**
 * EXPLAIN (ANALYZE, BUFFERS, WAL) of the last outcome lot's statements and the last page read, each in
 * BEGIN … ROLLBACK (the lot's deliveries are set back to pending first, so the update does what it did).
 */
async function explain(): Promise<void> {
  await adminQuery(`SET search_path TO ${schema}`);
  for (const [kind, s] of lastOf) {
    await adminQuery('BEGIN');
    try {
      if (kind.startsWith('UPDATE deliveries')) {
        await adminQuery("UPDATE deliveries SET state = 'pending', delivered_at = NULL WHERE delivered_at = (SELECT max(delivered_at) FROM deliveries)");
      }
      const plan = await adminQuery(`EXPLAIN (ANALYZE, BUFFERS, WAL, VERBOSE OFF) ${s.text}`, s.values);
      process.stdout.write(`  EXPLAIN ${s.text.replace(/\s+/g, ' ').slice(0, 100)}\n`);
      for (const row of plan.rows as { 'QUERY PLAN': string }[]) process.stdout.write(`      ${row['QUERY PLAN']}\n`);
    } finally {
      await adminQuery('ROLLBACK');
    }
  }
  await adminQuery('RESET search_path');
}

/** Per table of the schema (partitions summed under their parent's name): rows inserted, updated, HOT-updated; size with indexes. */
async function tableStats(): Promise<Record<string, { ins: number; upd: number; hot: number; size: number }>> {
  const r = await adminQuery(
    `SELECT coalesce(p.relname, s.relname) AS rel, sum(n_tup_ins) AS ins, sum(n_tup_upd) AS upd, sum(n_tup_hot_upd) AS hot, sum(pg_total_relation_size(s.relid)) AS size
       FROM pg_stat_user_tables s LEFT JOIN pg_inherits i ON i.inhrelid = s.relid LEFT JOIN pg_class p ON p.oid = i.inhparent
      WHERE s.schemaname = $1 GROUP BY 1`,
    [schema],
  );
  const out: Record<string, { ins: number; upd: number; hot: number; size: number }> = {};
  for (const row of r.rows as { rel: string; ins: string; upd: string; hot: string; size: string }[]) {
    out[row.rel] = { ins: Number(row.ins), upd: Number(row.upd), hot: Number(row.hot), size: Number(row.size) };
  }
  return out;
}

try {
  for (let k = 0; k < rounds; k++) await round(k);
} finally {
  await adminQuery(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
  await admin.end();
  rx.disconnect();
}

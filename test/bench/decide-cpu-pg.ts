/**
 * CPU per decision on PostgreSQL without HTTP (never part of the pass/fail suite):
 *
 *   node --import ./test/bench/register.mjs test/bench/decide-cpu-pg.ts \
 *     --database-url postgres://postgres@127.0.0.1:5432/test [--concurrency 16 --decisions 3000 --rounds 3 --history 4]
 *
 * Opens svc's store on a fresh schema (bench_dcpu_<pid>, dropped at the end), seeds bench:decide's site
 * (10 pages of 5 zones, 10 running tests, one on a zone of each page), then keeps `concurrency`
 * DecisionService.decideAndRecord calls in flight over bench:decide's 4,096 (visitor, URL) pairs (visitors
 * bv-(i × 7919 mod 10,000), so each returns every 4,096 decisions and adds a test exposure each time).
 * `history` passes over the pairs before measuring give every visitor that many exposures to its test
 * (a returning visitor's history; the facts read grew with it before first arms were kept apart).
 * Prints per decision, for each of `rounds` rounds of `decisions`: this process's CPU (process.cpuUsage),
 * the CPU of the PostgreSQL backends serving the store's pool (/proc utime + stime), and the statements
 * sent.count (every query of any pg client of this process, background polls included); then the store's commits
 * of decisions (autocommit passes: decisions a pass, a pass's time from its start to its COMMIT's answer) and the
 * server's WAL syncs a pass (pg_stat_wal.wal_sync, the whole cluster's: other clients' commits on a shared server count
 * too, so an upper bound; fewer syncs than passes means concurrent passes shared a flush). CPU, not wall clock:
 * on a shared host the clock measures the neighbours. The file is self-contained (its own copy of
 * bench:decide's seed), so it can be copied into another build's tree for A/B pairs.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { openConfiguredStore } from '../../src/store/open.js';
import { decisionService } from '../../src/domain/web/decisions.js';
import { pgBackendPids } from './lib/sockets.js';
import { processCpuMs } from './lib/child.js';
import { intFlag } from './lib/args.js';
import { watchPgStatements } from './lib/pg-statements.js';
import { PAGES, ZONES_PER_PAGE, seedDecideSite } from './lib/decide-site.js';

const { values } = parseArgs({
  options: {
    'database-url': { type: 'string' },
    concurrency: { type: 'string' },
    decisions: { type: 'string' },
    rounds: { type: 'string' },
    history: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (values.help || values['database-url'] === undefined) {
  process.stdout.write('usage: decide-cpu-pg.ts --database-url URL [--concurrency 16] [--decisions 3000] [--rounds 3] [--history 4]\n');
  process.exit(values.help ? 0 : 2);
}
const concurrency = intFlag('concurrency', values.concurrency, 16, 1, 1024);
const perRound = intFlag('decisions', values.decisions, 3000, 1, 10_000_000);
const rounds = intFlag('rounds', values.rounds, 3, 1, 1000);
const history = intFlag('history', values.history, 4, 0, 1000);

const VISITORS = 10_000;
const PAIRS = 4096;

const schema = `bench_dcpu_${process.pid}`;
const url = new URL(values['database-url']);
url.searchParams.set('schema', schema);
const plainUrl = new URL(values['database-url']);
plainUrl.searchParams.delete('schema');

const sent = watchPgStatements();


const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-decide-cpu-'));
const store = await openConfiguredStore({
  dataDir,
  synchronous: 'full',
  databaseUrl: url.toString(),
  databasePoolSize: 10,
  databaseStatementTimeoutMs: 60_000,
});
try {
  const site = await store.write((tx) => tx.sites.create({ name: 'decide-cpu' }));
  await seedDecideSite(store, site.id);
  const svc = decisionService(store);
  const pairs: { visitor: string; url: string }[] = [];
  for (let i = 0; i < PAIRS; i++) {
    const p = i % PAGES;
    pairs.push({ visitor: `bv-${(i * 7919) % VISITORS}`, url: p % 2 === 0 ? `https://shop.example/p${p}?utm_source=bench` : `https://shop.example/p${p}/item-${i}` });
  }
  const passes = { n: 0, ops: 0, ms: 0 };
  store.onGroupCommit((info) => {
    if (info.mode !== 'autocommit') return;
    passes.n++;
    passes.ops += info.operations;
    passes.ms += info.durationMs;
  });
  const walSyncs = async (): Promise<number> => Number((await store.sql.get<{ n: number | string }>('SELECT wal_sync AS n FROM pg_stat_wal'))!.n);
  let next = 0;
  /** `n` decisions, `concurrency` in flight. */
  async function run(n: number): Promise<void> {
    const end = next + n;
    const worker = async () => {
      while (next < end) {
        const pair = pairs[next++ % PAIRS]!;
        const r = await svc.decideAndRecord(site.id, pair.visitor, pair.url);
        if (!r || r.decision.zones.length !== ZONES_PER_PAGE) throw new Error(`unexpected decision for ${pair.visitor} ${pair.url}`);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
  }
  await run(PAIRS * history + 500);
  const cpuOf = (pids: number[]) => pids.reduce((a, p) => a + (processCpuMs(p) ?? 0), 0);
  for (let k = 0; k < rounds; k++) {
    const pids = pgBackendPids([process.pid], Number(url.port || 5432));
    const b0 = cpuOf(pids);
    const c0 = process.cpuUsage();
    const w0 = await walSyncs();
    const p0 = { ...passes };
    const s0 = sent.count;
    const t0 = process.hrtime.bigint();
    await run(perRound);
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    const c1 = process.cpuUsage(c0);
    const b1 = cpuOf(pids);
    const s1 = sent.count;
    const w1 = await walSyncs();
    const np = passes.n - p0.n;
    process.stdout.write(
      `round ${k + 1}: ${perRound} decisions, ${((perRound * 1000) / ms).toFixed(0)}/s, svc ${((c1.user + c1.system) / perRound).toFixed(1)} µs/decision, ` +
        `backends ${(((b1 - b0) * 1000) / perRound).toFixed(1)} µs/decision (${pids.length}), ${((s1 - s0) / perRound).toFixed(3)} statements/decision; ` +
        `${np} passes, ${((passes.ops - p0.ops) / np).toFixed(1)} decisions/pass, ${((passes.ms - p0.ms) / np).toFixed(2)} ms/pass, ${((w1 - w0) / np).toFixed(2)} WAL syncs/pass\n`,
    );
  }
} finally {
  await store.close();
  rmSync(dataDir, { recursive: true, force: true });
  const client = new pg.Client({ connectionString: plainUrl.toString() });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await client.end();
}

/**
 * Co-purchase recommender benchmark (never part of the pass/fail suite):
 *
 *   npm run bench:recommender [-- --line-items 1000000 --skus 50000 --queries 1000]
 *
 * Generates orders (seeded): baskets of 1–10 line items drawn from --skus skus
 * with Zipf-like popularity (weight 1/rank^s), until --line-items line items.
 * Loads them into two fresh SQLite stores in write operations of --batch orders
 * (one transaction each, as the group-commit writer batches requests), interleaving batch by batch
 * so both see the same machine noise:
 *
 *   - baseline: the conversion rows only (ActivityRepo.insertConversion);
 *   - recommender: the same rows plus CopurchaseRepo.record in the same
 *     transaction, exactly what POST /api/convert does.
 *
 * Prints the cost per order and per line item of each, their ratio, and the
 * increment the co-purchase update adds (also for the first and last tenth of
 * the load, as the tables grow). Then checks the stored counts against counts
 * computed in memory, and measures recommend() latency (p50/p99/max) for
 * single skus at the head (popularity ranks 1–100), torso (1,001–5,000) and tail
 * (20,001+, ordered at least once), and for 3-sku baskets taken from real
 * orders. Every loop is bounded in count and time. Exit status: 0 whatever the
 * figures; 1 when setup fails or a count or a ranking is wrong.
 */
import { mkdtempSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { openStore, type Store } from '../../src/store/store.js';
import type { Repos } from '../../src/store/repos.js';
import { databasePath, type SyncMode } from '../../src/store/db.js';
import { RecommendService } from '../../src/domain/recommend/service.js';
import { compareRecommendations } from '../../src/domain/recommend/rank.js';
import type { RecommendResult } from '../../src/domain/recommend/schema.js';
import { Histogram } from './lib/histogram.js';
import { removeTree } from './lib/targets.js';
import { UsageError } from './lib/args.js';
import { mulberry32 } from '../helpers/prng.js';

const SITE = 'site_bench';

const HELP = `usage: npm run bench:recommender -- [options]
  --line-items N     line items to load (default 1000000, max 20000000)
  --skus N           catalogue size (default 50000, max 5000000)
  --zipf S           popularity exponent: weight of rank r is 1/r^S (default 1.0, 0.1 to 3)
  --max-basket N     baskets hold 1 to N line items (default 10, max 100)
  --batch N          orders per transaction (default 1000, max 100000)
  --queries N        measured recommend() calls per class (default 1000, max 100000)
  --query-seconds N  bound of each query class, seconds (default 15, max 300)
  --load-seconds N   bound of the load, seconds (default 900, max 7200); the rest is skipped
  --sync MODE        full (default, fsync at each commit, as svc serve) or normal
  --seed N           PRNG seed (default 7)
  --keep             keep the temporary data directories
  -h, --help         this text`;

function numFlag(name: string, raw: string | undefined, def: number, min: number, max: number, integer = true): number {
  if (raw === undefined) return def;
  const n = Number(raw);
  if (!Number.isFinite(n) || (integer && !Number.isInteger(n)) || n < min || n > max) {
    throw new UsageError(`--${name} must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  }
  return n;
}

function parse(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    options: {
      'line-items': { type: 'string' },
      skus: { type: 'string' },
      zipf: { type: 'string' },
      'max-basket': { type: 'string' },
      batch: { type: 'string' },
      queries: { type: 'string' },
      'query-seconds': { type: 'string' },
      'load-seconds': { type: 'string' },
      sync: { type: 'string' },
      seed: { type: 'string' },
      keep: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  const sync = values.sync ?? 'full';
  if (sync !== 'full' && sync !== 'normal') throw new UsageError(`--sync must be full or normal, got ${JSON.stringify(sync)}`);
  return {
    help: values.help,
    lineItems: numFlag('line-items', values['line-items'], 1_000_000, 1, 20_000_000),
    skus: numFlag('skus', values.skus, 50_000, 10, 5_000_000),
    zipf: numFlag('zipf', values.zipf, 1, 0.1, 3, false),
    maxBasket: numFlag('max-basket', values['max-basket'], 10, 1, 100),
    batch: numFlag('batch', values.batch, 1000, 1, 100_000),
    queries: numFlag('queries', values.queries, 1000, 1, 100_000),
    querySeconds: numFlag('query-seconds', values['query-seconds'], 15, 1, 300),
    loadSeconds: numFlag('load-seconds', values['load-seconds'], 900, 1, 7200),
    sync: sync as SyncMode,
    seed: numFlag('seed', values.seed, 7, 0, 2 ** 31),
    keep: values.keep,
  };
}
type Options = ReturnType<typeof parse>;

const fmt = {
  int: (n: number) => Math.round(n).toLocaleString('en-US'),
  us: (n: number) => n.toFixed(2),
  ms: (us: number) => (us / 1000).toFixed(2),
  mib: (bytes: number) => (bytes / 1048576).toFixed(0),
};

function table(rows: string[][], right: boolean[]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((c, i) => (right[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n');
}


// ---- the synthetic orders ----

interface Orders {
  /** Sku index (0 = most popular) of every line item, order after order. */
  items: Int32Array;
  /** Order o holds items[start[o] .. start[o + 1]). */
  start: Int32Array;
  count: number;
  names: string[];
}

function generate(o: Options): Orders {
  const rnd = mulberry32(o.seed);
  const cdf = new Float64Array(o.skus);
  let acc = 0;
  for (let r = 0; r < o.skus; r++) cdf[r] = acc += 1 / (r + 1) ** o.zipf;
  const pick = () => {
    const x = rnd() * acc;
    let lo = 0;
    let hi = o.skus - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cdf[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  const items = new Int32Array(o.lineItems);
  const starts: number[] = [0];
  let n = 0;
  while (n < o.lineItems) {
    const size = Math.min(1 + Math.floor(rnd() * o.maxBasket), o.lineItems - n);
    for (let i = 0; i < size; i++) items[n++] = pick();
    starts.push(n);
  }
  const width = String(o.skus - 1).length;
  const names = Array.from({ length: o.skus }, (_, i) => `SKU-${String(i).padStart(width, '0')}`);
  return { items, start: Int32Array.from(starts), count: starts.length - 1, names };
}

function skusOf(d: Orders, order: number): string[] {
  const out: string[] = [];
  for (let i = d.start[order]!; i < d.start[order + 1]!; i++) out.push(d.names[d.items[i]!]!);
  return out;
}

function distinctOf(d: Orders, order: number): number[] {
  return [...new Set(d.items.subarray(d.start[order]!, d.start[order + 1]!))];
}

// ---- load ----

interface LoadResult {
  orders: number;
  lineItems: number;
  baselineMs: number;
  updateMs: number;
  /** [baseline, update] ms of the first and last tenth of the batches. */
  firstTenth: [number, number];
  lastTenth: [number, number];
  firstTenthItems: number;
  lastTenthItems: number;
  pairRows: number;
  complete: boolean;
}

async function load(d: Orders, base: Store, rec: Store, o: Options, log: (s: string) => void): Promise<LoadResult> {
  const lines = new Array<string>(d.count);
  for (let k = 0; k < d.count; k++) {
    const items: { sku: string; qty: number; price: number }[] = [];
    for (let i = d.start[k]!; i < d.start[k + 1]!; i++) items.push({ sku: d.names[d.items[i]!]!, qty: 1, price: 9.5 });
    lines[k] = JSON.stringify(items);
  }
  const insert = (tx: Repos, k: number) =>
    tx.activity.insertConversion({ id: `cnv_${k}`, siteId: SITE, sessionId: `s_${k}`, profileId: `p_${k}`, revenue: 9.5, currency: 'USD', lineItems: lines[k]!, now: 1_700_000_000_000 + k });
  const baseTx = (from: number, to: number) =>
    base.write(async (tx) => {
      for (let k = from; k < to; k++) await insert(tx, k);
    });
  const recTx = (from: number, to: number) =>
    rec.write(async (tx) => {
      for (let k = from; k < to; k++) {
        await insert(tx, k);
        await tx.copurchase.record(SITE, skusOf(d, k));
      }
    });
  const batches = Math.ceil(d.count / o.batch);
  const tenth = Math.max(1, Math.floor(batches / 10));
  const r: LoadResult = { orders: 0, lineItems: 0, baselineMs: 0, updateMs: 0, firstTenth: [0, 0], lastTenth: [0, 0], firstTenthItems: 0, lastTenthItems: 0, pairRows: 0, complete: true };
  const started = performance.now();
  let nextLog = started + 10_000;
  for (let b = 0; b < batches; b++) {
    const from = b * o.batch;
    const to = Math.min(d.count, from + o.batch);
    // Alternate which store goes first, so neither always runs right after the other's fsync.
    let tb = 0;
    let tr = 0;
    if (b % 2 === 0) {
      tb = await timed(() => baseTx(from, to));
      tr = await timed(() => recTx(from, to));
    } else {
      tr = await timed(() => recTx(from, to));
      tb = await timed(() => baseTx(from, to));
    }
    const items = d.start[to]! - d.start[from]!;
    r.baselineMs += tb;
    r.updateMs += tr;
    r.orders += to - from;
    r.lineItems += items;
    if (b < tenth) {
      r.firstTenth[0] += tb;
      r.firstTenth[1] += tr;
      r.firstTenthItems += items;
    }
    if (b >= batches - tenth) {
      r.lastTenth[0] += tb;
      r.lastTenth[1] += tr;
      r.lastTenthItems += items;
    }
    const now = performance.now();
    if (now > nextLog) {
      log(`  ${fmt.int(r.orders)} / ${fmt.int(d.count)} orders loaded (${((now - started) / 1000).toFixed(0)} s)`);
      nextLog = now + 10_000;
    }
    if (now - started > o.loadSeconds * 1000 && b < batches - 1) {
      r.complete = false;
      log(`  stopped by --load-seconds after ${fmt.int(r.orders)} orders`);
      break;
    }
  }
  r.pairRows = Number((await rec.sql.get<{ n: number }>('SELECT count(*) AS n FROM copurchase_pairs'))!.n);
  return r;
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

// ---- checks ----

/** Compares the stored counts with counts computed here; returns problems found. */
async function verify(d: Orders, loaded: number, rec: Store, rnd: () => number, classes: Record<string, number[]>): Promise<string[]> {
  const problems: string[] = [];
  const itemCount = new Int32Array(d.names.length);
  let nonEmpty = 0;
  for (let k = 0; k < loaded; k++) {
    const ds = distinctOf(d, k);
    if (ds.length > 0) nonEmpty++;
    for (const s of ds) itemCount[s]!++;
  }
  const total = await rec.copurchase.totalOrders(SITE);
  if (total !== nonEmpty) problems.push(`order total ${total}, expected ${nonEmpty}`);
  for (let i = 0; i < 200; i++) {
    const s = Math.floor(rnd() * d.names.length);
    const got = await rec.copurchase.itemOrders(SITE, d.names[s]!);
    if (got !== itemCount[s]) problems.push(`n(${d.names[s]}) = ${got}, expected ${itemCount[s]}`);
  }
  const probes = [classes.head![0]!, classes.torso![0]!, classes.tail![0]!].filter((x) => x !== undefined);
  for (const a of probes) {
    const pairs = new Map<number, number>();
    for (let k = 0; k < loaded; k++) {
      const ds = distinctOf(d, k);
      if (!ds.includes(a)) continue;
      for (const b of ds) if (b !== a) pairs.set(b, (pairs.get(b) ?? 0) + 1);
    }
    const stored = await rec.copurchase.companions(SITE, d.names[a]!, 1);
    if (stored.length !== pairs.size) problems.push(`${d.names[a]}: ${stored.length} companions stored, expected ${pairs.size}`);
    const index = new Map(d.names.map((n, i) => [n, i]));
    for (const c of stored) {
      const b = index.get(c.sku)!;
      if (c.pair_orders !== pairs.get(b) || c.orders !== itemCount[b]) {
        problems.push(`${d.names[a]}-${c.sku}: stored (${c.pair_orders}, ${c.orders}), expected (${pairs.get(b)}, ${itemCount[b]})`);
        break;
      }
    }
  }
  return problems;
}

function checkResult(r: RecommendResult, skus: string[], k: number): string | null {
  if (r.items.length > k) return `${r.items.length} items for k=${k}`;
  for (const it of r.items) {
    if (skus.includes(it.sku)) return `recommended a basket item ${it.sku}`;
    if (it.support < 3) return `${it.sku} has support ${it.support} < 3`;
  }
  for (let i = 1; i < r.items.length; i++) if (compareRecommendations(r.items[i - 1]!, r.items[i]!) > 0) return `items out of order at ${i}`;
  return null;
}

// ---- queries ----

interface QueryRow {
  name: string;
  queries: number;
  p50Us: number;
  p99Us: number;
  maxUs: number;
  meanCandidates: number;
  meanItems: number;
  wrong: number;
  firstWrong: string | null;
}

async function measureQueries(name: string, baskets: string[][], svc: RecommendService, rec: Store, o: Options): Promise<QueryRow> {
  const hist = new Histogram();
  const row: QueryRow = { name, queries: 0, p50Us: 0, p99Us: 0, maxUs: 0, meanCandidates: 0, meanItems: 0, wrong: 0, firstWrong: null };
  if (baskets.length === 0) return row;
  const q = (skus: string[]) => ({ skus, k: 10, min_support: 3 });
  for (let i = 0; i < Math.min(50, o.queries); i++) await svc.recommend(SITE, q(baskets[i % baskets.length]!)); // warm-up
  const deadline = performance.now() + o.querySeconds * 1000;
  let items = 0;
  for (let i = 0; i < o.queries && performance.now() < deadline; i++) {
    const skus = baskets[i % baskets.length]!;
    const t0 = performance.now();
    const r = await svc.recommend(SITE, q(skus));
    hist.record((performance.now() - t0) * 1000);
    items += r.items.length;
    const wrong = checkResult(r, skus, 10);
    if (wrong !== null) {
      row.wrong++;
      row.firstWrong ??= `${skus.join('+')}: ${wrong}`;
    }
  }
  const s = hist.summary();
  let candidates = 0;
  const sample = Math.min(100, baskets.length);
  for (let i = 0; i < sample; i++) for (const sku of baskets[i]!) candidates += (await rec.copurchase.companions(SITE, sku, 3)).length;
  Object.assign(row, { queries: s.count, p50Us: s.p50Us, p99Us: s.p99Us, maxUs: s.maxUs, meanCandidates: candidates / sample, meanItems: items / Math.max(1, s.count) });
  return row;
}

// ---- main ----

async function main(): Promise<number> {
  let o: Options;
  try {
    o = parse(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`bench:recommender: ${(err as Error).message}\n${HELP}\n`);
    return 2;
  }
  if (o.help) {
    process.stdout.write(`${HELP}\n`);
    return 0;
  }
  const log = (s: string) => process.stdout.write(`${s}\n`);
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'svc-bench-rec-'));
  let base: Store | undefined;
  let rec: Store | undefined;
  const onSignal = () => {
    if (!o.keep) removeTree(tmp);
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    log(`co-purchase recommender benchmark: ${fmt.int(o.lineItems)} line items over ${fmt.int(o.skus)} skus (Zipf s=${o.zipf}), baskets of 1–${o.maxBasket}, ${o.batch} orders per transaction, synchronous=${o.sync}`);
    log(`node ${process.version}, ${os.cpus().length} cpu(s), data in ${tmp}`);
    let t0 = performance.now();
    const d = generate(o);
    let distinctTotal = 0;
    let pairsTotal = 0;
    for (let k = 0; k < d.count; k++) {
      const m = distinctOf(d, k).length;
      distinctTotal += m;
      pairsTotal += m * (m - 1);
    }
    log(`generated ${fmt.int(d.count)} orders in ${((performance.now() - t0) / 1000).toFixed(1)} s: ${(o.lineItems / d.count).toFixed(2)} line items, ${(distinctTotal / d.count).toFixed(2)} distinct skus and ${(pairsTotal / d.count).toFixed(1)} directed pair updates per order`);

    base = openStore({ dataDir: path.join(tmp, 'baseline'), synchronous: o.sync });
    rec = openStore({ dataDir: path.join(tmp, 'recommender'), synchronous: o.sync });
    log('\nloading (baseline and recommender stores interleaved batch by batch)...');
    t0 = performance.now();
    const L = await load(d, base, rec, o, log);
    log(`  done in ${((performance.now() - t0) / 1000).toFixed(1)} s; ${fmt.int(L.pairRows)} pair rows (both directions)`);

    const rnd = mulberry32(o.seed + 1);
    // Popularity classes by rank; tail skus must have been ordered at least once.
    const counts = new Int32Array(o.skus);
    for (let k = 0; k < L.orders; k++) for (const s of distinctOf(d, k)) counts[s]!++;
    const pickFrom = (lo: number, hi: number, n: number) => {
      const pool: number[] = [];
      for (let s = lo; s < Math.min(hi, o.skus); s++) if (counts[s]! > 0) pool.push(s);
      for (let i = pool.length - 1; i > 0; i--) {
        const j = Math.floor(rnd() * (i + 1));
        [pool[i], pool[j]] = [pool[j]!, pool[i]!];
      }
      return pool.slice(0, n);
    };
    const classes: Record<string, number[]> = {
      head: pickFrom(0, 100, 100),
      torso: pickFrom(1000, 5000, 1000),
      tail: pickFrom(20_000, o.skus, 1000),
    };

    log('\nchecking stored counts against counts computed in memory...');
    const problems = await verify(d, L.orders, rec, rnd, classes);
    log(problems.length === 0 ? '  counts match' : `  ${problems.length} MISMATCH(ES)`);

    log('\nquerying recommend() (k=10, min support 3)...');
    const svc = new RecommendService(rec.copurchase);
    const baskets: string[][] = [];
    for (let tries = 0; baskets.length < 1000 && tries < 100_000; tries++) {
      const k = Math.floor(rnd() * L.orders);
      const ds = distinctOf(d, k);
      if (ds.length >= 3) baskets.push(ds.slice(0, 3).map((s) => d.names[s]!));
    }
    const rows: QueryRow[] = [];
    for (const [name, skus] of Object.entries(classes)) {
      const row = await measureQueries(`${name} sku`, skus.map((s) => [d.names[s]!]), svc, rec, o);
      log(`  ${row.name}: ${fmt.int(row.queries)} queries, p50 ${fmt.ms(row.p50Us)} ms`);
      rows.push(row);
    }
    const basketRow = await measureQueries('3-sku basket', baskets, svc, rec, o);
    log(`  ${basketRow.name}: ${fmt.int(basketRow.queries)} queries, p50 ${fmt.ms(basketRow.p50Us)} ms`);
    rows.push(basketRow);

    const size = (s: Store) => {
      s.db!.pragma('wal_checkpoint(TRUNCATE)');
      return statSync(databasePath(s.dataDir)).size;
    };
    const baseBytes = size(base);
    const recBytes = size(rec);

    // --- summary ---
    const perItem = (ms: number, n: number) => (ms * 1000) / Math.max(1, n);
    log('');
    log(`loaded ${fmt.int(L.orders)} orders, ${fmt.int(L.lineItems)} line items${L.complete ? '' : ' (stopped by --load-seconds)'}; database ${fmt.mib(baseBytes)} MiB baseline, ${fmt.mib(recBytes)} MiB with the co-purchase tables`);
    const loadRows = [
      ['update cost', 'µs/order', 'µs/line item', 'ratio'],
      ['baseline: conversion rows only', fmt.us(perItem(L.baselineMs, L.orders)), fmt.us(perItem(L.baselineMs, L.lineItems)), '1.00'],
      ['with co-purchase update', fmt.us(perItem(L.updateMs, L.orders)), fmt.us(perItem(L.updateMs, L.lineItems)), (L.updateMs / L.baselineMs).toFixed(2)],
      ['co-purchase increment', fmt.us(perItem(L.updateMs - L.baselineMs, L.orders)), fmt.us(perItem(L.updateMs - L.baselineMs, L.lineItems)), ''],
      ['  increment, first tenth of the load', '', fmt.us(perItem(L.firstTenth[1] - L.firstTenth[0], L.firstTenthItems)), (L.firstTenth[1] / L.firstTenth[0]).toFixed(2)],
      ['  increment, last tenth of the load', '', fmt.us(perItem(L.lastTenth[1] - L.lastTenth[0], L.lastTenthItems)), (L.lastTenth[1] / L.lastTenth[0]).toFixed(2)],
    ];
    log(table(loadRows, [false, true, true, true]));
    log('');
    const qRows: string[][] = [['recommend()', 'queries', 'p50 ms', 'p99 ms', 'max ms', 'candidates', 'items', 'wrong']];
    for (const r of rows) {
      qRows.push([r.name, fmt.int(r.queries), fmt.ms(r.p50Us), fmt.ms(r.p99Us), fmt.ms(r.maxUs), fmt.int(r.meanCandidates), r.meanItems.toFixed(1), String(r.wrong)]);
      if (r.wrong > 0) problems.push(`${r.name}: ${r.wrong} wrong; first: ${r.firstWrong}`);
    }
    log(table(qRows, [false, true, true, true, true, true, true, true]));
    log('(candidates: mean companion rows with support >= 3 per query, summed over the basket; items: mean returned)');
    if (problems.length) {
      log(`\n${problems.length} problem(s):\n  ${problems.slice(0, 20).join('\n  ')}`);
      return 1;
    }
    return 0;
  } finally {
    await base?.close();
    await rec?.close();
    if (o.keep) log(`kept ${tmp}`);
    else removeTree(tmp);
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`bench:recommender: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);

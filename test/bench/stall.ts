/**
 * The weekly stall pass over a large site (never part of the pass/fail suite):
 *
 *   npm run bench:stall [-- --sessions 1000000 --cohorts 20 --page-size 2000 --database-url postgres://... --keep]
 *
 * Seeds one site with --sessions sessions spread evenly over five ISO weeks
 * (Europe/Berlin): the week of the pass and its 4-week baseline. Each session
 * has a profile, a product pageview, then with some probability an add_to_cart
 * event and a /checkout pageview (a conversion with revenue), one score row, and
 * segment memberships: --cohorts cohorts = the high-intent cohort (score >= 70,
 * about 30% of sessions) + (cohorts - 1) segments, each profile a member of
 * about 3 segments. In the week of the pass, high-intent sessions and segment 1
 * add to cart less often (the stalls the pass must find). A funnel of three
 * steps (/products/* glob, add_to_cart, /checkout exact) is then analysed by
 * runStallPass, in process, exactly as stall_run does.
 *
 * Seeding: on SQLite, prepared single-row INSERTs in transactions of 100,000
 * sessions straight on the connection (the bulk-load path); on PostgreSQL
 * (--database-url, a schema of its own, dropped at the end unless --keep; on SQLite --keep keeps the data directory)
 * multi-row INSERTs in write operations of the store.
 *
 * Printed: seeding time, the pass's wall time and this process's CPU time, sessions scanned, comparisons
 * tested and findings filed, and memory during the pass: peak RSS and peak
 * heapUsed (process.memoryUsage(), sampled every 25 ms) against their values
 * just before it. The pass streams sessions in keyset pages, so its memory
 * must not grow with the number of sessions. Exit 0; 1 when the pass finds
 * no stall (the seeded ones must be found); 2 on bad usage.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Statement } from 'better-sqlite3';
import { openConfiguredStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { createFunnel } from '../../src/domain/funnels/service.js';
import { runStallPass } from '../../src/domain/stall/pass.js';
import { isoWeekAt } from '../../src/domain/stall/week.js';
import { intFlag, UsageError } from './lib/args.js';
import { BenchSchemas, databaseUrlError, redact } from './lib/pg.js';
import { mulberry32 as prng } from '../helpers/prng.js';

const TZ = 'Europe/Berlin';
const AS_OF = Date.parse('2026-11-18T15:00:00Z');
const USAGE = 'usage: npm run bench:stall -- [--sessions N] [--cohorts N] [--page-size N] [--database-url postgres://...] [--keep]';


interface Row {
  table: 'profiles' | 'sessions' | 'events' | 'scores' | 'segment_members' | 'conversions';
  values: unknown[];
}

const COLUMNS: Record<Row['table'], string[]> = {
  profiles: ['id', 'site_id', 'known', 'traits', 'created_at', 'updated_at'],
  sessions: ['site_id', 'id', 'profile_id', 'visitor_id', 'first_seen', 'last_seen'],
  events: ['site_id', 'session_id', 'profile_id', 'visitor_id', 'type', 'ts', 'body', 'received_at'],
  scores: ['site_id', 'session_id', 'profile_id', 'visitor_id', 'score', 'body', 'received_at'],
  segment_members: ['segment_id', 'profile_id', 'site_id', 'since'],
  conversions: ['id', 'site_id', 'session_id', 'profile_id', 'revenue', 'currency', 'line_items', 'created_at'],
};

/** The rows of session `i` (of `n`), generated on the fly. */
function* sessionRows(siteId: string, i: number, n: number, weeks: readonly { start: number; end: number }[], segments: readonly string[], rnd: () => number): Generator<Row> {
  const w = Math.floor((i / n) * weeks.length);
  const week = weeks[w]!;
  const thisWeek = w === weeks.length - 1;
  const t0 = week.start + Math.floor(rnd() * (week.end - week.start - 3_600_000));
  const id = String(i).padStart(8, '0');
  const profile = `prf_${id}`;
  const session = `ses_${id}`;
  const visitor = `vis_${id}`;
  const score = Math.floor(rnd() * 100);
  const highIntent = score >= 70;
  const member: string[] = [];
  for (let s = 0; s < segments.length; s++) if (rnd() < 3 / segments.length) member.push(segments[s]!);
  yield { table: 'profiles', values: [profile, siteId, 0, '{}', t0, t0] };
  yield { table: 'sessions', values: [siteId, session, profile, visitor, t0, t0 + 300_000] };
  const ev = (type: string, dt: number, extra: string) =>
    ({ table: 'events', values: [siteId, session, profile, visitor, type, t0 + dt, `{"site_id":"${siteId}","session_id":"${session}","type":"${type}"${extra}}`, t0 + dt] }) as Row;
  yield ev('pageview', 1_000, `,"url":"https://shop.example/products/p${i % 5000}"`);
  let cart = 0.55;
  if (thisWeek && highIntent) cart = 0.5;
  if (thisWeek && member.includes(segments[0]!)) cart = 0.45;
  if (rnd() < cart) {
    yield ev('add_to_cart', 30_000, `,"sku":"SKU-${i % 5000}"`);
    if (rnd() < 0.5) {
      yield ev('pageview', 60_000, ',"url":"/checkout"');
      yield { table: 'conversions', values: [`cnv_${id}`, siteId, session, profile, 20 + Math.floor(rnd() * 80), 'USD', '[]', t0 + 90_000] };
    }
  }
  yield { table: 'scores', values: [siteId, session, profile, visitor, score, '{}', t0 + 500] };
  for (const s of member) yield { table: 'segment_members', values: [s, profile, siteId, t0] };
}

async function seed(store: Store, siteId: string, n: number, weeks: readonly { start: number; end: number }[], segments: readonly string[]): Promise<number> {
  const rnd = prng(42);
  let rows = 0;
  if (store.db !== null) {
    const db = store.db;
    const insert = Object.fromEntries(
      Object.entries(COLUMNS).map(([t, cols]) => [t, db.prepare<unknown[]>(`INSERT INTO ${t} (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`)]),
    ) as Record<Row['table'], Statement<unknown[]>>;
    const CHUNK = 100_000;
    for (let from = 0; from < n; from += CHUNK) {
      db.transaction(() => {
        for (let i = from; i < Math.min(n, from + CHUNK); i++) {
          for (const r of sessionRows(siteId, i, n, weeks, segments, rnd)) {
            insert[r.table].run(...r.values);
            rows++;
          }
        }
      })();
      process.stdout.write(`\r  seeded ${Math.min(n, from + CHUNK)} sessions`);
    }
    process.stdout.write('\n');
    return rows;
  }
  // PostgreSQL: multi-row INSERTs, 500 rows a statement, 5,000 sessions a transaction.
  const CHUNK = 5_000;
  for (let from = 0; from < n; from += CHUNK) {
    const buf: Record<string, unknown[][]> = {};
    for (let i = from; i < Math.min(n, from + CHUNK); i++) {
      for (const r of sessionRows(siteId, i, n, weeks, segments, rnd)) (buf[r.table] ??= []).push(r.values);
    }
    await store.write(async (tx) => {
      for (const [table, list] of Object.entries(buf)) {
        const cols = COLUMNS[table as Row['table']];
        for (let k = 0; k < list.length; k += 500) {
          const part = list.slice(k, k + 500);
          const tuple = `(${cols.map(() => '?').join(', ')})`;
          await tx.sql.run(`INSERT INTO ${table} (${cols.join(', ')}) VALUES ${part.map(() => tuple).join(', ')}`, part.flat());
          rows += part.length;
        }
      }
    });
    if ((from / CHUNK) % 10 === 9 || from + CHUNK >= n) process.stdout.write(`\r  seeded ${Math.min(n, from + CHUNK)} sessions`);
  }
  process.stdout.write('\n');
  return rows;
}

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      sessions: { type: 'string' },
      cohorts: { type: 'string' },
      'page-size': { type: 'string' },
      'database-url': { type: 'string' },
      keep: { type: 'boolean', default: false },
    },
  });
  const n = intFlag('sessions', values.sessions, 1_000_000, 1000, 20_000_000);
  const cohorts = intFlag('cohorts', values.cohorts, 20, 2, 200);
  const pageSize = intFlag('page-size', values['page-size'], 2000, 10, 100_000);
  const url = values['database-url'];
  if (url !== undefined) {
    const err = databaseUrlError(url);
    if (err) throw new UsageError(err);
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-bench-stall-'));
  const schemas = url !== undefined ? new BenchSchemas(url, values.keep) : null;
  let schema: string | null = null;
  try {
    let databaseUrl: string | undefined;
    if (schemas) {
      console.log(`PostgreSQL: ${await schemas.check()} at ${redact(url!)}`);
      const f = await schemas.fresh('stall');
      schema = f.schema;
      databaseUrl = f.url;
    }
    const store = await openConfiguredStore({ dataDir: dir, synchronous: 'normal', databaseUrl, databasePoolSize: 4, databaseStatementTimeoutMs: 600_000 });
    try {
      const site = await store.sites.create({ name: 'Stall bench' });
      await store.write((tx) => tx.sites.update(site.id, { timezone: TZ }));
      const segments = await store.write(async (tx) => {
        const ids: string[] = [];
        for (let s = 1; s < cohorts; s++) {
          ids.push((await tx.segments.create({ siteId: site.id, name: `Segment ${s}`, rule: JSON.stringify({ trait: 'bench', op: 'eq', value: `s${s}` }), priority: 0 })).id);
        }
        return ids;
      });
      await createFunnel(store, site.id, {
        name: 'Shop',
        steps: [
          { kind: 'page', match: 'glob', pattern: '/products/*', key: 'product' },
          { kind: 'event', event_type: 'add_to_cart', key: 'add_to_cart' },
          { kind: 'page', match: 'exact', pattern: '/checkout', key: 'checkout' },
        ],
      });
      const weeks = [4, 3, 2, 1, 0].map((back) => isoWeekAt(AS_OF, TZ, back));
      console.log(`stall bench: ${n} sessions over ${weeks[0]!.label}..${weeks[4]!.label} (${TZ}), ${cohorts} cohorts (high_intent + ${segments.length} segments), ${store.dialect}`);
      const seedStart = performance.now();
      const rows = await seed(store, site.id, n, weeks, segments);
      const seedMs = performance.now() - seedStart;
      console.log(`  seeding: ${rows} rows in ${(seedMs / 1000).toFixed(1)} s`);
      if (store.db !== null) store.db.pragma('wal_checkpoint(TRUNCATE)');
      if (store.dialect === 'pg') await store.sql.run('ANALYZE');

      globalThis.gc?.();
      const before = process.memoryUsage();
      let peakRss = before.rss;
      let peakHeap = before.heapUsed;
      const sampler = setInterval(() => {
        const m = process.memoryUsage();
        if (m.rss > peakRss) peakRss = m.rss;
        if (m.heapUsed > peakHeap) peakHeap = m.heapUsed;
      }, 25);
      const t0 = performance.now();
      const cpu0 = process.cpuUsage();
      const r = await runStallPass(store, site.id, { asOf: AS_OF, pageSize });
      const passMs = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      clearInterval(sampler);
      const after = process.memoryUsage();
      peakRss = Math.max(peakRss, after.rss);
      peakHeap = Math.max(peakHeap, after.heapUsed);
      const mb = (b: number) => `${(b / 1048576).toFixed(0)} MB`;
      console.log(`  stall pass ${r.isoWeek.label}: ${(passMs / 1000).toFixed(1)} s, ${r.sessionsScanned} sessions scanned (${Math.round(r.sessionsScanned / (passMs / 1000))}/s), page size ${pageSize}; this process's CPU ${((cpu.user + cpu.system) / 1e6).toFixed(1)} s`);
      console.log(`  tested ${r.tested} cohort-step comparisons, ${r.significant.length} significant after Benjamini-Hochberg, ${r.filed.length} filed:`);
      for (const f of r.filed) {
        console.log(`    ${f.cohort_key.padEnd(28)} step ${f.step_position} ${f.step_key}: ${(f.pass_rate * 100).toFixed(1)}% vs ${(f.baseline_pass_rate * 100).toFixed(1)}% (n=${f.sessions}, p=${f.p_value.toExponential(2)})`);
      }
      console.log(`  memory: peak RSS ${mb(peakRss)} (before the pass ${mb(before.rss)}), peak heapUsed ${mb(peakHeap)} (before ${mb(before.heapUsed)})`);
      return r.filed.length > 0 ? 0 : 1;
    } finally {
      await store.close();
    }
  } finally {
    if (values.keep && schemas === null) console.log(`  data directory kept (--keep): ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
    if (schemas && schema) {
      const note = await schemas.drop(schema);
      if (note) console.log(note);
    }
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof UsageError) {
      console.error(`${err.message}\n${USAGE}`);
      process.exit(2);
    }
    console.error(err);
    process.exit(1);
  },
);

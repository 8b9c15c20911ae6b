/**
 * Backend CPU of the checked exposure statement (ExposuresRepo.insertIfFacts) in other forms of its parameters,
 * alone on one connection (never part of the suite):
 *
 *   node --import ./test/bench/register.mjs test/bench/decide-forms-micro-pg.ts --database-url postgres://postgres@127.0.0.1:5432/test \
 *     [--decisions 16 --statements 500 --rounds 6 --forms svc,text,json,noflag]
 *
 * On a fresh schema migrated by svc (bench_dfm_<pid>, dropped at the end) holding 2,000 visitors with three first
 * arms each, runs in turn, the order reversed every other round, `statements` executions of each form, every one
 * carrying `decisions` decisions of 5 rows (as concurrent decisions' arrays joined end to end: pg/batch.ts), every
 * check holding (each visitor's facts as rendered by renderFacts). Forms:
 * - `svc`: INSERT_EXPOSURES_IF_FACTS_PG as svc sends it (each array unnested from a sub-select);
 * - `json`: each array read as json_array_elements_text(array_to_json(…)), as the build before did;
 * - `text`: svc's text with its arrays in pg's text form (each element quoted and escaped), as the build before sent them;
 *   `svc` sends them as svc does now, in binary form (binaryTextArray, pg/batch.ts);
 * - `noflag`: every row to a test tries its first arm (ON CONFLICT DO NOTHING), as the build before did, where svc's
 *   tries only those of tests the expected facts do not hold (here none: every decision is to a known test).
 * Prints backend CPU (/proc utime + stime) per decision for each round, and this process's (the client's: building
 * the parameters, pg's serialising and parsing; the same work for every form but the text), the plan cache's generic and custom plans
 * of each form, and the exposures stored against those expected (every form stores every row).
 */
import { parseArgs } from 'node:util';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { openPgStore, pgClientConfig } from '../../src/store/pg/store.js';
import { ExposuresRepo, INSERT_EXPOSURES_IF_FACTS_PG, renderFacts, type FactsRow } from '../../src/store/exposures.js';
import { PgSql, toPgPlaceholders } from '../../src/store/pg/sql.js';
import { binaryTextArray } from '../../src/store/pg/batch.js';
import { processCpuMs } from './lib/child.js';
import { intFlag } from './lib/args.js';

const { values } = parseArgs({
  options: {
    'database-url': { type: 'string' },
    decisions: { type: 'string' },
    statements: { type: 'string' },
    rounds: { type: 'string' },
    forms: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (values.help || values['database-url'] === undefined) {
  process.stdout.write('usage: decide-forms-micro-pg.ts --database-url URL [--decisions 16] [--statements 500] [--rounds 6] [--forms svc,text,json,noflag]\n');
  process.exit(values.help ? 0 : 2);
}
const B = intFlag('decisions', values.decisions, 16, 1, 256);
const N = intFlag('statements', values.statements, 500, 1, 100_000);
const ROUNDS = intFlag('rounds', values.rounds, 6, 1, 100);
const VISITORS = 2000;

const SVC = toPgPlaceholders(INSERT_EXPOSURES_IF_FACTS_PG);
const SUB = /unnest\(\(SELECT (\$\d+)::text\[\]\)\)/g;
const JSON_FORM = SVC.replace(SUB, 'json_array_elements_text(array_to_json($1::text[]))');
const NOFLAG_FORM = SVC.replace('WHERE f = 1 AND experiment_id', 'WHERE experiment_id');
const FORMS: Record<string, string> = { svc: SVC, text: SVC, json: JSON_FORM, noflag: NOFLAG_FORM };
/** Forms whose arrays go in binary form, as BatchPgSql sends an appended statement's text arrays. */
const BINARY = new Set(['svc', 'noflag']);
const names = (values.forms ?? 'svc,text,json,noflag').split(',');
for (const n of names) if (FORMS[n] === undefined) throw new Error(`unknown form ${n}`);
if (JSON_FORM === SVC || NOFLAG_FORM === SVC) throw new Error('the forms no longer derive from svc\u2019s text');

const schema = `bench_dfm_${process.pid}`;
const url = new URL(values['database-url']);
url.searchParams.set('schema', schema);
const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-dfm-'));
const store = await openPgStore({ url: url.toString(), dataDir: dir });
const client = new pg.Client(pgClientConfig({ url: url.toString() }));
await client.connect();
try {
  const pid = (await client.query<{ p: number }>('SELECT pg_backend_pid() AS p')).rows[0]!.p;
  const rows = (v: string, e: number, at: number) =>
    Array.from({ length: 5 }, (_, i) => ({ siteId: 's', visitorId: v, profileId: null, zoneId: `z${i}`, variantId: i === 0 ? null : `var${i}`, experimentId: i === 0 ? `e${e}` : null, armId: i === 0 ? 'a' : null, holdout: false, url: '/p/item', at }));
  const repo = new ExposuresRepo(new PgSql(client as unknown as pg.PoolClient));
  const known: string[] = [];
  for (let v = 0; v < VISITORS; v++) {
    for (let e = 0; e < 3; e++) await repo.insert(rows(`v${v}`, e, Date.now()));
    known.push(renderFacts([0, 1, 2].map((e): FactsRow => ({ k: 2, a: `e${e}`, b: 'a', c: null }))));
  }
  const seeded = VISITORS * 3 * 5;
  let vi = 0;
  const params = (): unknown[][] => {
    const p: unknown[][] = Array.from({ length: 7 }, () => []);
    for (let j = 0; j < B; j++) {
      const n = vi++ % VISITORS;
      const rs = rows(`v${n}`, 0, Date.now());
      const d = rs[0]!;
      p[0]!.push(d.siteId);
      p[1]!.push(d.visitorId);
      p[2]!.push(d.profileId);
      p[3]!.push(d.url);
      p[4]!.push(d.at);
      p[5]!.push(known[n]);
      // A returning visitor's test (its first arm known): f 0, as insertIfFacts flags it.
      p[6]!.push(JSON.stringify(rs.map((r) => ({ zone_id: r.zoneId, variant_id: r.variantId, experiment_id: r.experimentId, arm_id: r.armId, holdout: r.holdout ? 1 : 0, f: 0 }))));
    }
    return p;
  };
  let statements = 0;
  const once = async (form: string) => {
    const p = params();
    const r = await client.query({ name: `dfm_${form}`, text: FORMS[form]!, values: BINARY.has(form) ? p.map((a): unknown => binaryTextArray(a)!) : (p as unknown[]) });
    statements++;
    if (r.rows.length !== 0) throw new Error(`${form}: a check did not hold`);
  };
  // Past the plan cache's first five custom plans.
  for (const n of names) for (let i = 0; i < 8; i++) await once(n);
  const res = new Map<string, number[]>(names.map((n) => [n, []]));
  const own = new Map<string, number[]>(names.map((n) => [n, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const n of round % 2 ? [...names].reverse() : names) {
      const c0 = processCpuMs(pid)!;
      const u0 = process.cpuUsage();
      for (let i = 0; i < N; i++) await once(n);
      res.get(n)!.push(((processCpuMs(pid)! - c0) * 1000) / (N * B));
      const u = process.cpuUsage(u0);
      own.get(n)!.push((u.user + u.system) / (N * B));
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  for (const [n, xs] of res) {
    const ys = own.get(n)!;
    process.stdout.write(`${n}: backend µs per decision ${xs.map((x) => x.toFixed(1)).join(', ')} (median ${median(xs).toFixed(1)}); this process ${ys.map((x) => x.toFixed(1)).join(', ')} (median ${median(ys).toFixed(1)})\n`);
  }
  const plans = await client.query<{ name: string; generic_plans: string; custom_plans: string }>("SELECT name, generic_plans, custom_plans FROM pg_prepared_statements WHERE name LIKE 'dfm_%' ORDER BY name");
  for (const r of plans.rows) process.stdout.write(`${r.name}: generic plans ${r.generic_plans}, custom plans ${r.custom_plans}\n`);
  const stored = (await client.query<{ c: number }>('SELECT count(*)::int AS c FROM exposures')).rows[0]!.c;
  process.stdout.write(`exposures stored ${stored - seeded}, expected ${statements * B * 5}\n`);
} finally {
  await client.end();
  await store.close();
  const admin = new pg.Client({ connectionString: values['database-url'] });
  await admin.connect();
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await admin.end();
  rmSync(dir, { recursive: true, force: true });
}

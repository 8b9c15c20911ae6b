/**
 * Backend CPU of a decision's storing on PostgreSQL, the checked exposure statement against the facts read then
 * the plain insert (never part of the pass/fail suite):
 *
 *   node --import ./test/bench/register.mjs test/bench/decide-checked-micro-pg.ts [DECISIONS_A_STATEMENT=8] [STATEMENTS=150]
 *
 * One connection to postgres://postgres@127.0.0.1:5432/test (or SVC_BENCH_DATABASE_URL), a schema of its own
 * (tmp_micro_<pid>, dropped at the end) holding 2,000 visitors with three first arms each. Each round runs
 * STATEMENTS times both ways, the order alternated, DECISIONS_A_STATEMENT decisions of 5 rows sharing a
 * statement (BatchPgSql, as concurrent decisions do): `base` reads their facts (one statement) then inserts
 * their exposures (one statement), `checked` sends ExposuresRepo.insertIfFacts with the facts known (one
 * statement, every check holding). Prints the backend's CPU per decision (/proc) for three rounds and the ratio.
 */
import pg from 'pg';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openPgStore, pgClientConfig } from '../../src/store/pg/store.js';
import { ExposuresRepo, type FactsRow } from '../../src/store/exposures.js';
import { PgSql } from '../../src/store/pg/sql.js';
import { BatchPgSql } from '../../src/store/pg/batch.js';
import { processCpuMs } from './lib/child.js';
const schema = `tmp_micro_${process.pid}`;
const base = new URL(process.env.SVC_BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test');
const plainUrl = base.toString();
base.searchParams.set('schema', schema);
const url = base.toString();
const dir = mkdtempSync(path.join(os.tmpdir(), 'micro-'));
const store = await openPgStore({ url, dataDir: dir });
const client = new pg.Client(pgClientConfig({ url }));
await client.connect();
const pid = (await client.query('SELECT pg_backend_pid() AS p')).rows[0].p;
const B = Number(process.argv[2] ?? 8);
const N = Number(process.argv[3] ?? 150);
try {
  const plain = new PgSql(client as unknown as pg.PoolClient);
  const reads = new ExposuresRepo(plain);
  const rows = (v: string, e: number, at: number) => Array.from({ length: 5 }, (_, i) => ({ siteId: 's', visitorId: v, profileId: null, zoneId: `z${i}`, variantId: i === 0 ? null : `var${i}`, experimentId: i === 0 ? `e${e}` : null, armId: i === 0 ? 'a' : null, holdout: false, url: '/p/item', at }));
  const known = new Map<string, FactsRow[]>();
  // history: each visitor seen on 3 tests
  for (let v = 0; v < 2000; v += 1) {
    const b = new ExposuresRepo(new BatchPgSql(client as unknown as pg.PoolClient, plain));
    for (let e = 0; e < 3; e++) await b.insert(rows(`v${v}`, e, 1));
    known.set(`v${v}`, [0, 1, 2].map((e) => ({ k: 2, a: `e${e}`, b: 'a', c: null })));
  }
  let vi = 0;
  const cpu = () => processCpuMs(pid)!;
  const res: Record<string, number[]> = { base: [], checked: [] };
  for (let round = 0; round < 3; round++) {
    for (const mode of round % 2 ? ['checked', 'base'] : ['base', 'checked']) {
      const c0 = cpu();
      for (let i = 0; i < N; i++) {
        const vs = Array.from({ length: B }, () => `v${vi++ % 2000}`);
        if (mode === 'base') {
          await Promise.all(vs.map((v) => reads.decisionFacts('s', v)));
          const b = new ExposuresRepo(new BatchPgSql(client as unknown as pg.PoolClient, plain));
          await Promise.all(vs.map((v) => b.insert(rows(v, 0, 2))));
        } else {
          const b = new ExposuresRepo(new BatchPgSql(client as unknown as pg.PoolClient, plain));
          const out = await Promise.all(vs.map((v) => b.insertIfFacts(known.get(v)!, rows(v, 0, 2))));
          if (out.some((o) => o !== null)) throw new Error('miss');
        }
      }
      res[mode]!.push(((cpu() - c0) * 1000) / (N * B));
    }
  }
  const sum = (xs: number[]) => xs.reduce((a, x) => a + x, 0);
  process.stdout.write(
    `${B} decisions a statement: backend µs per decision, read + insert ${res.base!.map((x) => x.toFixed(0)).join(', ')}; checked insert ${res.checked!.map((x) => x.toFixed(0)).join(', ')}; ` +
      `checked / read + insert ${(sum(res.checked!) / sum(res.base!)).toFixed(2)}x\n`,
  );
} finally {
  await client.end();
  await store.close();
  const c = new pg.Client({ connectionString: plainUrl });
  await c.connect();
  await c.query(`DROP SCHEMA ${schema} CASCADE`);
  await c.end();
}

/**
 * Backend CPU of a decision's statements on PostgreSQL, alone on one connection (never part of the suite):
 *
 *   node --import ./test/bench/register.mjs test/bench/first-arms-micro-pg.ts --database-url postgres://postgres@127.0.0.1:5432/test
 *
 * On a fresh schema migrated by svc (bench_fam_<pid>, dropped at the end) holding `--history` passes of
 * bench:decide's 4,096 (visitor, page) pairs as exposures (5 rows a decision, one to a test), runs in turn,
 * `--repeat` times each, in autocommit: the exposure insert of 8 decisions (40 rows) with the first_arm
 * row trigger as SQLite has (search_path pinned, as svc_web_bump), with a trigger whose function names the table with its
 * schema instead, without a trigger and first_arms written by a CTE of the same statement, and without
 * first_arms at all (the build before); and the facts read of 8 returning visitors from first_arms and
 * from their every test exposure (the build before), in three rounds. Prints backend CPU (/proc utime + stime) per statement.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { migratePg, pgClientConfig } from '../../src/store/pg/store.js';
import { intFlag } from './lib/args.js';

const { values } = parseArgs({ options: { 'database-url': { type: 'string' }, repeat: { type: 'string' }, history: { type: 'string' } } });
const repeat = intFlag('repeat', values.repeat, 400, 1, 100_000);
const history = intFlag('history', values.history, 8, 0, 1000);
const schema = `bench_fam_${process.pid}`;
const url = new URL(values['database-url']!);
url.searchParams.set('schema', schema);
const { schema: _s, ...config } = pgClientConfig({ url: url.toString(), poolSize: 2 });
const pool = new pg.Pool(config);
const admin = new pg.Client({ connectionString: values['database-url'] });
await admin.connect();
let held: pg.PoolClient | undefined;
try {
  // The pool's connections have search_path set to the schema (svc's own client configuration).
  await migratePg(pool, schema);
  const c = (held = await pool.connect());
  if ((await c.query<{ s: string }>('SELECT current_schema() AS s')).rows[0]!.s !== schema) throw new Error('not on the bench schema');
  const pid = (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  const cpu = () => {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return (Number(rest[11]) + Number(rest[12])) * 10;
  };
  const COLS = 'site_id, visitor_id, profile_id, zone_id, variant_id, experiment_id, arm_id, holdout, url, created_at';
  const UNNEST = 'unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int4[], $9::text[], $10::int8[])';
  const PLAIN = `INSERT INTO exposures (${COLS}) SELECT * FROM ${UNNEST}`;
  const CTE =
    `WITH r (${COLS}) AS (SELECT * FROM ${UNNEST}), e AS (INSERT INTO exposures (${COLS}) SELECT * FROM r) ` +
    'INSERT INTO first_arms (site_id, visitor_id, experiment_id, arm_id, created_at) SELECT site_id, visitor_id, experiment_id, arm_id, created_at FROM r ' +
    'WHERE experiment_id IS NOT NULL AND arm_id IS NOT NULL ON CONFLICT DO NOTHING';
  let k = 0;
  /** 8 decisions of bench:decide's pairs, 5 rows each, the first to a test. */
  const params = () => {
    const cols: unknown[][] = Array.from({ length: 10 }, () => []);
    for (let d = 0; d < 8; d++, k++) {
      const i = k % 4096;
      const p = i % 10;
      for (let z = 0; z < 5; z++) {
        const row = ['site', `bv-${(i * 7919) % 10000}`, null, `zone_${p}_${z}`, `var_${z}`, z === 0 ? `exp_${p}` : null, z === 0 ? `arm_${p}${i % 2}` : null, 0, `/p${p}`, Date.now()];
        row.forEach((v, j) => cols[j]!.push(v));
      }
    }
    return cols;
  };
  const loop = async (label: string, text: string, n: number, mk: () => unknown[]) => {
    const name = `s${label.replace(/\W/g, '')}`;
    await c.query({ name, text, values: mk() });
    const c0 = cpu();
    for (let i = 0; i < n; i++) await c.query({ name, text, values: mk() });
    process.stdout.write(`${label}: ${(((cpu() - c0) * 1000) / n).toFixed(0)} µs backend a statement\n`);
  };
  for (let h = 0; h < (history * 4096) / 8; h++) await c.query({ name: 'fill', text: PLAIN, values: params() });
  await c.query('INSERT INTO first_arms SELECT DISTINCT ON (site_id, visitor_id, experiment_id) site_id, visitor_id, experiment_id, arm_id, created_at FROM exposures WHERE arm_id IS NOT NULL ORDER BY site_id, visitor_id, experiment_id, id ON CONFLICT DO NOTHING');
  await c.query('VACUUM ANALYZE exposures');
  await c.query('VACUUM ANALYZE first_arms');
  const readPairs = () => [JSON.stringify(Array.from({ length: 8 }, (_, j) => ({ o: j + 1, s: 'site', v: `bv-${((k++ % 4096) * 7919) % 10000}` })))];
  // As svc's facts read (FACTS_MANY_PG): a UNION ALL in the LATERAL keeps each branch a parameterized index scan
  // (a lone branch is pulled up into a join, which PostgreSQL may plan as a hash join over the whole table).
  const READ = (from: string) =>
    `SELECT q.o, f.* FROM json_to_recordset($1::json) AS q(o int, s text, v text) CROSS JOIN LATERAL (${from}
      UNION ALL SELECT 1, i.profile_id, NULL FROM identities i WHERE i.site_id = q.s AND i.kind = 'visitor' AND i.value = q.v) f`;
  const READ_NEW = READ('SELECT 2 AS k, a.experiment_id, a.arm_id FROM first_arms a WHERE a.site_id = q.s AND a.visitor_id = q.v');
  const READ_OLD = READ('SELECT 2 AS k, e.experiment_id, e.arm_id FROM exposures e WHERE e.site_id = q.s AND e.visitor_id = q.v AND e.experiment_id IS NOT NULL AND e.arm_id IS NOT NULL');
  // The row trigger the first version of this change had (as SQLite's), search_path pinned like svc_web_bump, and
  // one naming the table with its schema instead (no SET per call).
  await c.query(`CREATE FUNCTION svc_first_arm() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$ BEGIN
    INSERT INTO first_arms (site_id, visitor_id, experiment_id, arm_id, created_at) VALUES (NEW.site_id, NEW.visitor_id, NEW.experiment_id, NEW.arm_id, NEW.created_at) ON CONFLICT DO NOTHING;
    RETURN NULL; END $$`);
  await c.query(`CREATE FUNCTION svc_first_arm_q() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
    INSERT INTO ${schema}.first_arms (site_id, visitor_id, experiment_id, arm_id, created_at) VALUES (NEW.site_id, NEW.visitor_id, NEW.experiment_id, NEW.arm_id, NEW.created_at) ON CONFLICT DO NOTHING;
    RETURN NULL; END $$`);
  const trigger = (fn: string) =>
    c.query(`CREATE TRIGGER first_arm AFTER INSERT ON exposures FOR EACH ROW WHEN (NEW.experiment_id IS NOT NULL AND NEW.arm_id IS NOT NULL) EXECUTE FUNCTION ${fn}()`);
  for (let r = 0; r < 3; r++) {
    await trigger('svc_first_arm');
    await loop('insert, row trigger (search_path pinned)', PLAIN, repeat, params);
    await c.query('DROP TRIGGER first_arm ON exposures');
    await trigger('svc_first_arm_q');
    await loop('insert, row trigger (schema-qualified)', PLAIN, repeat, params);
    await c.query('DROP TRIGGER first_arm ON exposures');
    await loop('insert, CTE (this build)', CTE, repeat, params);
    await loop('insert, no first arms (before)', PLAIN, repeat, params);
    await loop('read 8 visitors, first_arms (this build)', READ_NEW, repeat, readPairs);
    await loop(`read 8 visitors, every test exposure (before)`, READ_OLD, repeat, readPairs);
  }
  c.release();
  held = undefined;
} catch (err) {
  process.stderr.write(`${String((err as Error).stack ?? err)}\n`);
  process.exitCode = 1;
} finally {
  held?.release(true);
  await pool.end();
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await admin.end();
}

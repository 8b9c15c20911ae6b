import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { TestProject } from 'vitest/node';

/**
 * The system catalogs a run of the suite churns: every test schema adds and then drops thousands of rows in
 * them. Where the server runs without autovacuum (this project's CI host does), the dead rows pile up from
 * run to run (pg_attribute was seen at 2M dead rows, 410 MB) and every later run's DDL and planning slows.
 */
const CATALOGS = ['pg_attribute', 'pg_class', 'pg_depend', 'pg_type', 'pg_constraint', 'pg_index', 'pg_attrdef', 'pg_trigger', 'pg_namespace', 'pg_inherits', 'pg_statistic'];

/**
 * Plain VACUUM of those catalogs (seconds; it takes no lock that blocks other sessions' reads or writes). A user
 * that may not vacuum a catalog gets a warning from PostgreSQL, not an error, so the suite runs either way.
 */
async function vacuumCatalogs(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`VACUUM ${CATALOGS.map((c) => `pg_catalog.${c}`).join(', ')}`);
  } finally {
    await client.end();
  }
}

/**
 * Global set-up of the PostgreSQL test project: a run id that names this run's
 * schemas (svct_<run>_<data dir>), and a teardown that drops them all, so runs
 * never see each other's data and leave nothing behind. Both ends vacuum the catalogs the run churns
 * (above): the start for what earlier runs left, the end for this run's own.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const run = randomBytes(4).toString('hex');
  project.provide('pgRun' as never, run as never);
  const url = process.env.SVC_TEST_DATABASE_URL;
  if (url !== undefined) await vacuumCatalogs(url);
  return async () => {
    if (url === undefined) return;
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query<{ nspname: string }>('SELECT nspname FROM pg_namespace WHERE nspname LIKE $1', [`svct\\_${run}\\_%`]);
      for (const r of rows) await client.query(`DROP SCHEMA "${r.nspname}" CASCADE`);
    } finally {
      await client.end();
    }
    await vacuumCatalogs(url);
  };
}

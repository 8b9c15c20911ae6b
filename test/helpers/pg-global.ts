import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { TestProject } from 'vitest/node';

/**
 * Global set-up of the PostgreSQL test project: a run id that names this run's
 * schemas (svct_<run>_<data dir>), and a teardown that drops them all, so runs
 * never see each other's data and leave nothing behind.
 */
export default function setup(project: TestProject): () => Promise<void> {
  const run = randomBytes(4).toString('hex');
  project.provide('pgRun' as never, run as never);
  return async () => {
    const url = process.env.SVC_TEST_DATABASE_URL;
    if (url === undefined) return;
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query<{ nspname: string }>('SELECT nspname FROM pg_namespace WHERE nspname LIKE $1', [`svct\\_${run}\\_%`]);
      for (const r of rows) await client.query(`DROP SCHEMA "${r.nspname}" CASCADE`);
    } finally {
      await client.end();
    }
  };
}

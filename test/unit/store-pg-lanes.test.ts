import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { PgWriteRunner } from '../../src/store/pg/group-commit.js';
import { newRepoShared, type Repos } from '../../src/store/repos.js';
import { PG_BASE_URL } from '../helpers/backend.js';

/**
 * The write lanes' connections on PostgreSQL (PgWriteRunner): a group that ends while operations are queued hands
 * its connection to the next group instead of returning it to the pool and checking one out again; once nothing is
 * queued, the connection goes back to the pool.
 */
const pools: pg.Pool[] = [];

afterEach(async () => {
  for (const p of pools.splice(0)) await p.end();
});

function openPool(): { pool: pg.Pool; acquired: () => number } {
  const pool = new pg.Pool({ connectionString: PG_BASE_URL, max: 4, pipeline: true } as pg.PoolConfig);
  pools.push(pool);
  let n = 0;
  pool.on('acquire', () => n++);
  return { pool, acquired: () => n };
}

/** An operation answering its backend's pid and `i`. */
function whoAmI(i: number) {
  return async (tx: Repos) => ({ i, pid: Number((await tx.sql.get<{ pid: number }>('SELECT pg_backend_pid() AS pid'))!.pid) });
}

describe.skipIf(PG_BASE_URL === undefined)('PostgreSQL write lanes', () => {
  it('back-to-back groups share one checked-out connection; it goes back to the pool once nothing is queued', async () => {
    const { pool, acquired } = openPool();
    const runner = new PgWriteRunner(pool, newRepoShared(), 1, 'svc_lanes_test');
    // A chain: each operation, while its group runs, submits the next one, so a group always ends with one queued.
    const answers: Promise<{ i: number; pid: number }>[] = [];
    const submit = (i: number): void => {
      answers.push(
        runner.run(async (tx) => {
          if (i < 19) submit(i + 1);
          return whoAmI(i)(tx);
        }),
      );
    };
    submit(0);
    while (answers.length < 20) await new Promise((r) => setTimeout(r, 5));
    const out = await Promise.all(answers);
    expect(out.map((a) => a.i)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(runner.counters.batches).toBe(20);
    // One check-out for the twenty groups (twenty without the hand-over), so one backend answered them all.
    expect(acquired()).toBe(1);
    expect(new Set(out.map((a) => a.pid)).size).toBe(1);
    await new Promise((r) => setImmediate(r));
    expect(pool.idleCount).toBe(pool.totalCount);
    await runner.close();
  });

  it('a lone group, or the last of a run, returns its connection: the next group after a pause checks one out again', async () => {
    const { pool, acquired } = openPool();
    const runner = new PgWriteRunner(pool, newRepoShared(), 2, 'svc_lanes_test');
    expect((await runner.run(whoAmI(1))).i).toBe(1);
    await new Promise((r) => setImmediate(r));
    expect(pool.idleCount).toBe(pool.totalCount);
    expect((await runner.run(whoAmI(2))).i).toBe(2);
    expect(acquired()).toBe(2);
    await runner.close();
  });
});

import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';

/**
 * Which store the tests run against. The `pg` project of vitest.config.ts sets
 * SVC_TEST_BACKEND=pg (it runs only when SVC_TEST_DATABASE_URL is set): every
 * data directory a test creates then maps to a PostgreSQL schema of its own,
 * named after the directory and this run, and every svc the helpers start or
 * run gets SVC_DATABASE_URL pointing at it. The run's schemas are dropped by
 * the global teardown (test/helpers/pg-global.ts).
 */
export const PG_BASE_URL: string | undefined =
  process.env.SVC_TEST_BACKEND === 'pg' ? process.env.SVC_TEST_DATABASE_URL : undefined;

const SYNC_SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'pg-sync.mjs');

/** The PostgreSQL schema of a test's data directory. */
export function schemaFor(dataDir: string): string {
  const run = inject('pgRun' as never) as string;
  const base = path.basename(path.resolve(dataDir)).toLowerCase().replace(/[^a-z0-9]/g, '_');
  return `svct_${run}_${base}`.slice(0, 63);
}

/** The database URL of a test's data directory (PostgreSQL runs only). */
export function databaseUrlFor(dataDir: string): string {
  const u = new URL(PG_BASE_URL!);
  u.searchParams.set('schema', schemaFor(dataDir));
  return u.toString();
}

/** Environment that points svc at the data directory's store: {} on SQLite. */
export function backendEnv(dataDir: string | undefined): Record<string, string> {
  if (PG_BASE_URL === undefined || dataDir === undefined) return {};
  return { SVC_DATABASE_URL: databaseUrlFor(dataDir) };
}

/** Runs SQL on PostgreSQL synchronously (in a child process) and returns the rows. */
export function pgSync<T>(url: string, sql: string, params: unknown[] = []): T[] {
  const r = spawnSync(process.execPath, [SYNC_SCRIPT, url, sql, JSON.stringify(params)], {
    encoding: 'utf8',
    timeout: 30_000,
    maxBuffer: 256 * 1024 * 1024,
  });
  if (r.status !== 0) throw new Error(`PostgreSQL query failed: ${r.stderr}\n${sql}`);
  return JSON.parse(r.stdout) as T[];
}

/**
 * `?` placeholders and the SQLite spellings tests use, for PostgreSQL:
 * instr → strpos; json_extract(col, '$.key') → the jsonb value (a JSON number
 * comes back as a number, as from SQLite), or its text where the test compares
 * it with a string literal.
 */
export function toPg(sql: string): string {
  let n = 0;
  return sql
    .replace(/\?/g, () => `$${++n}`)
    .replace(/\binstr\(/g, 'strpos(')
    .replace(/json_extract\(([\w.]+), '\$\.(\w+)'\)(\s*=\s*')?/g, (_m, col: string, key: string, eq: string | undefined) =>
      eq ? `(${col}::jsonb ->> '${key}')${eq}` : `(${col}::jsonb -> '${key}')`,
    );
}

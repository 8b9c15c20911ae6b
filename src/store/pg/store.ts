import { privateDir } from '../private-files.js';
import pg from 'pg';
import { newRepoShared } from '../repos.js';
import { Store } from '../store.js';
import { PG_MIGRATIONS } from './migrations.js';
import type { Migration } from '../migrations.js';
import { compatibleFromAfter, schemaProblem, type AppliedMigration } from '../schema-compat.js';
import { PgSql } from './sql.js';
import { MIGRATE_LOCK, pgClientConfig, PgListener, SEGMENTS_CHANNEL, WEB_CHANNEL, WORK_CHANNEL, workChannel, type PgSettings } from './connection.js';
import { PgWriteRunner, writeLanes } from './group-commit.js';
import { PgPartitions } from './partitions.js';
import { loadColumnTypes } from './batch.js';
import { EventIds, RESERVE_EVENT_IDS } from './event-ids.js';

export { MIGRATE_LOCK, pgClientConfig, SEGMENTS_CHANNEL, WEB_CHANNEL, WORK_CHANNEL, workChannel, type PgSettings, writeLanes };

/**
 * Applies the PostgreSQL migrations not yet applied, under an advisory lock; returns the versions it ran.
 * A database migrated by a newer svc is accepted when what this svc lacks is expand-only (rolling
 * upgrades; see schema-compat.ts). `list` is for tests that play an earlier release.
 */
export async function migratePg(pool: pg.Pool, schema: string | null, list: readonly Migration[] = PG_MIGRATIONS): Promise<number[]> {
  const client = await pool.connect();
  const onError = () => undefined; // reported by the failing query instead
  client.on('error', onError);
  let timeoutOff = false;
  try {
    // A store every one of whose migrations is applied already (each CLI command, each restart) is read
    // in two reads, without the advisory lock: that lock is one for the whole database, so otherwise every
    // command on any schema waited behind whichever schema was being migrated, and paid six more round trips.
    const applied = await appliedMigrations(client);
    if (applied !== null && list.every((m) => applied.some((r) => r.version === m.version))) {
      const known = Math.max(...list.map((m) => m.version));
      if (Math.max(0, ...applied.map((r) => r.version)) > known) {
        const problem = schemaProblem(known, applied);
        if (problem !== null) throw new Error(problem);
      }
      return [];
    }
    // No statement timeout here: waiting for another instance's migrations, or building an index on a big
    // table, can rightly take longer than the timeout meant for requests (RESET restores it for the pool).
    timeoutOff = true;
    await client.query('SET statement_timeout = 0');
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATE_LOCK]);
    try {
      if (schema !== null) await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
      await client.query(
        'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL, compatible_from INTEGER)',
      );
      await client.query('ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS compatible_from INTEGER');
      const rows = (await client.query<AppliedMigration>('SELECT version, compatible_from FROM schema_migrations ORDER BY version')).rows;
      const applied = new Set(rows.map((r) => r.version));
      const known = Math.max(...list.map((m) => m.version));
      const newest = Math.max(0, ...applied);
      if (newest > known) {
        const problem = schemaProblem(known, rows);
        if (problem !== null) throw new Error(problem);
        return [];
      }
      const ran: number[] = [];
      for (const m of list) {
        if (applied.has(m.version)) continue;
        await client.query('BEGIN');
        try {
          await client.query(m.sql);
          const previous = (await client.query<AppliedMigration>('SELECT version, compatible_from FROM schema_migrations WHERE version = $1', [m.version - 1])).rows[0];
          await client.query('INSERT INTO schema_migrations (version, name, applied_at, compatible_from) VALUES ($1, $2, $3, $4)', [
            m.version,
            m.name,
            Date.now(),
            compatibleFromAfter(m, previous),
          ]);
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK').catch(() => undefined);
          throw err;
        }
        ran.push(m.version);
      }
      return ran;
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATE_LOCK]).catch(() => undefined);
    }
  } finally {
    if (timeoutOff) await client.query('RESET statement_timeout').catch(() => undefined);
    client.off('error', onError);
    client.release();
  }
}

/**
 * The rows of schema_migrations, or null when it is not there yet (or from before compatible_from): the
 * migrations then run under the lock, which creates both.
 */
async function appliedMigrations(client: pg.PoolClient): Promise<AppliedMigration[] | null> {
  const present = await client.query<{ ok: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('schema_migrations') AND attname = 'compatible_from' AND NOT attisdropped) AS ok`,
  );
  if (present.rows[0]?.ok !== true) return null;
  return (await client.query<AppliedMigration>('SELECT version, compatible_from FROM schema_migrations')).rows;
}

/** The newest migration applied to a PostgreSQL database (0 for none). */
export async function pgSchemaVersion(pool: pg.Pool): Promise<number> {
  const r = await pool.query<{ v: number | null }>(
    "SELECT CASE WHEN to_regclass('schema_migrations') IS NULL THEN 0 ELSE (SELECT coalesce(max(version), 0) FROM schema_migrations) END AS v",
  );
  return Number(r.rows[0]?.v ?? 0);
}

/**
 * Opens the PostgreSQL store: a pool, the migrations (unless `migrate` is false),
 * and, with `listen`, a LISTEN connection that wakes the workers when another
 * instance commits work. `dataDir` still holds the secret key.
 */
export async function openPgStore(
  s: PgSettings & { dataDir: string; migrate?: boolean; listen?: boolean; onPoolError?: (err: Error) => void },
): Promise<Store> {
  const { schema, ...config } = pgClientConfig(s);
  // Pipeline mode (node-pg 8.23): a query is written at once, not when the one before it on the connection
  // has been answered. Code that awaits each query sees no difference; a group transaction's BEGIN goes out
  // with its first statement (pg/group-commit.ts), one send and one wake-up of each side per group fewer.
  const pool = new pg.Pool({ ...config, pipeline: true } as pg.PoolConfig);
  // An idle connection that the server closes (restart, failover) must not crash the process.
  pool.on('error', (err) => s.onPoolError?.(err));
  // The backends of this instance's own connections: a svc_work notification one of them sent is this
  // instance's own commit, whose workers its writer's commit listeners have woken already.
  const ownBackends = new Set<number>();
  const backendOf = (c: pg.PoolClient) => (c as unknown as { processID?: number | null }).processID;
  pool.on('connect', (c) => {
    const pid = backendOf(c);
    if (typeof pid === 'number') ownBackends.add(pid);
  });
  pool.on('remove', (c) => {
    const pid = backendOf(c);
    if (typeof pid === 'number') ownBackends.delete(pid);
  });
  try {
    if (s.migrate !== false) await migratePg(pool, schema);
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw err;
  }
  privateDir(s.dataDir);
  let listener: PgListener | null = null;
  const shared = newRepoShared();
  shared.eventIds = new EventIds(async (n) => (await pool.query<{ id: number }>(RESERVE_EVENT_IDS, [n])).rows.map((r) => Number(r.id)));
  const work = workChannel(schema);
  const writer = new PgWriteRunner(pool, shared, writeLanes(s.poolSize ?? 10), work);
  const store = new Store(new PgSql(pool), shared, writer, s.dataDir, null, async () => {
    await listener?.stop();
    await pool.end().catch(() => undefined);
  });
  store.partitions = new PgPartitions(pool);
  store.poolUsage = () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, max: pool.options.max });
  try {
    await checkSecretKey(pool, store.secrets.fingerprint());
    await loadColumnTypes(pool);
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw err;
  }
  listener =
    s.listen === true
      ? new PgListener(config, work, (channel, fromPid) => {
          if (channel === null) store.remoteChange('all');
          else if (channel === work) {
            if (fromPid === undefined || !ownBackends.has(fromPid)) store.remoteChange('work');
          }
          else if (channel === SEGMENTS_CHANNEL) store.remoteChange('segments');
          else if (channel === WEB_CHANNEL) store.remoteChange('web');
        })
      : null;
  listener?.start();
  return store;
}

/**
 * Secrets (webhook signing secrets, ad-platform credentials) are sealed with the
 * instance's key, so every instance on one database must hold the same key. The
 * first instance records the key's fingerprint; one with another key refuses to
 * start instead of failing to open secrets later.
 */
async function checkSecretKey(pool: pg.Pool, fingerprint: string): Promise<void> {
  await pool.query("INSERT INTO svc_settings (name, value) VALUES ('secret_key_fingerprint', $1) ON CONFLICT (name) DO NOTHING", [fingerprint]);
  const r = await pool.query<{ value: string }>("SELECT value FROM svc_settings WHERE name = 'secret_key_fingerprint'");
  if (r.rows[0]?.value !== fingerprint) {
    throw new Error(
      'this instance holds a different secret key from the one this database was set up with: give every instance the same SVC_SECRET_KEY (or the same secret.key in its data directory)',
    );
  }
}

import type pg from 'pg';
import type { PartitionMaintenance } from '../store.js';

/**
 * A time-partitioned table of the PostgreSQL store (migration 15): monthly
 * range partitions `<table>_pYYYYMM` on `key` (epoch ms, UTC months) and a
 * DEFAULT partition `<table>_default` for rows whose month has none.
 * `kept`: the SQL condition that a row is not past retention (`$1` the
 * cutoff); null: the table is kept whole (events and exposures). A partition
 * is dropped only when its whole range lies before the cutoff and none of its
 * rows meets the condition, so pending rows are never dropped.
 */
interface PartitionedTable {
  table: 'events' | 'exposures' | 'health_log' | 'outbox';
  key: string;
  kept: string | null;
}

export const PARTITIONED: readonly PartitionedTable[] = [
  { table: 'events', key: 'received_at', kept: null },
  { table: 'exposures', key: 'created_at', kept: null },
  // The negations of RetentionRepo's row deletes (src/store/retention.ts), each answered by an index.
  { table: 'health_log', key: 'created_at', kept: 'created_at >= $1' },
  { table: 'outbox', key: 'created_at', kept: 'dispatched_at IS NULL OR dispatched_at >= $1' },
];

/** Months with a partition from the current one on: this one and the next two. */
export const MONTHS_AHEAD = 2;

/** Instances serialize partition changes on this transaction-level advisory lock. */
const PARTITION_LOCK = 0x5356_4302;

/** Waits at most this long for a table lock; a busy table is tried again at the next pass (the months ahead leave time). */
const LOCK_TIMEOUT = '2s';

/** The UTC month of `ms` as [start, end) in epoch ms, and its partition suffix YYYYMM. */
export function monthOf(ms: number, offset = 0): { lo: number; hi: number; suffix: string } {
  const d = new Date(ms);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth() + offset;
  const lo = Date.UTC(y, m, 1);
  const hi = Date.UTC(y, m + 1, 1);
  const start = new Date(lo);
  return { lo, hi, suffix: `${start.getUTCFullYear()}${String(start.getUTCMonth() + 1).padStart(2, '0')}` };
}

/** The range of a partition named `<table>_pYYYYMM`, or null for another name (the DEFAULT partition). */
function rangeOf(table: string, name: string): { lo: number; hi: number } | null {
  const m = new RegExp(`^${table}_p(\\d{4})(\\d{2})$`).exec(name);
  if (m === null) return null;
  const lo = Date.UTC(Number(m[1]), Number(m[2]) - 1, 1);
  return { lo, hi: Date.UTC(Number(m[1]), Number(m[2]), 1) };
}

/**
 * Creates the monthly partitions ahead and drops the ones wholly past
 * retention, each change in its own short transaction on a pooled connection,
 * under a transaction-level advisory lock (two instances never race; the
 * janitor's lease also keeps the periodic pass to one instance).
 */
export class PgPartitions implements PartitionMaintenance {
  readonly counters = { created: 0, dropped: 0, moved: 0 };

  constructor(private readonly pool: pg.Pool) {}

  private async partitions(table: string): Promise<string[]> {
    const r = await this.pool.query<{ name: string }>(
      'SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = to_regclass($1)',
      [table],
    );
    return r.rows.map((row) => row.name);
  }

  /** Runs `fn` in a transaction holding the partition lock, with a lock timeout. */
  private async locked<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    const onError = (err: Error) => (broken = err);
    client.on('error', onError);
    try {
      await client.query('BEGIN');
      await client.query(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
      await client.query('SELECT pg_advisory_xact_lock($1)', [PARTITION_LOCK]);
      const value = await fn(client);
      await client.query('COMMIT');
      return value;
    } catch (err) {
      if (broken === undefined) await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.off('error', onError);
      client.release(broken);
    }
  }

  /**
   * Every partitioned table gets a partition for the month of `now` and the
   * MONTHS_AHEAD after it. Rows already in the DEFAULT partition for a month
   * being created (written while its partition was missing) move into the new
   * partition in the same transaction: PostgreSQL refuses to create a
   * partition whose range has rows in DEFAULT. Returns the partitions created.
   */
  async ensure(now: number): Promise<number> {
    let created = 0;
    for (const { table, key } of PARTITIONED) {
      const have = new Set(await this.partitions(table));
      for (let k = 0; k <= MONTHS_AHEAD; k++) {
        const month = monthOf(now, k);
        const name = `${table}_p${month.suffix}`;
        if (have.has(name)) continue;
        const moved = await this.locked(async (c) => {
          if ((await c.query('SELECT 1 FROM pg_class WHERE oid = to_regclass($1)', [name])).rowCount !== 0) return -1;
          const cols = (
            await c.query<{ name: string }>(
              'SELECT quote_ident(attname) AS name FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped ORDER BY attnum',
              [table],
            )
          ).rows
            .map((r) => r.name)
            .join(', ');
          // No write may reach DEFAULT between the move and the CREATE (which would then fail). The table
          // first, then DEFAULT: the order in which every query locks them (no deadlock with a reader).
          await c.query(`LOCK TABLE ONLY ${table} IN ACCESS EXCLUSIVE MODE`);
          await c.query(`LOCK TABLE ${table}_default IN ACCESS EXCLUSIVE MODE`);
          await c.query(`CREATE TEMP TABLE svc_moving (LIKE ${table}) ON COMMIT DROP`);
          const m = await c.query(
            `WITH m AS (DELETE FROM ${table}_default WHERE ${key} >= $1 AND ${key} < $2 RETURNING ${cols}) INSERT INTO svc_moving (${cols}) SELECT ${cols} FROM m`,
            [month.lo, month.hi],
          );
          await c.query(`CREATE TABLE ${name} PARTITION OF ${table} FOR VALUES FROM (${month.lo}) TO (${month.hi})`);
          if ((m.rowCount ?? 0) > 0) await c.query(`INSERT INTO ${table} (${cols}) SELECT ${cols} FROM svc_moving`);
          return m.rowCount ?? 0;
        });
        if (moved < 0) continue;
        created++;
        this.counters.created++;
        this.counters.moved += moved;
      }
    }
    return created;
  }

  /**
   * Drops the partitions of the tables with a retention rule whose whole month
   * lies before `cutoff` and that hold no row the rule keeps (a pending outbox
   * row keeps its partition). The rows left (the month that straddles the
   * cutoff, kept partitions, DEFAULT) are deleted row by row by RetentionRepo
   * as before. Returns the partitions dropped.
   */
  async dropExpired(cutoff: number): Promise<number> {
    let dropped = 0;
    for (const { table, kept } of PARTITIONED) {
      if (kept === null) continue;
      for (const name of await this.partitions(table)) {
        const range = rangeOf(table, name);
        if (range === null || range.hi > cutoff) continue;
        const done = await this.locked(async (c) => {
          if ((await c.query('SELECT 1 FROM pg_class WHERE oid = to_regclass($1)', [name])).rowCount === 0) return false;
          // Locked before the look (the table, then the partition, in the order every query takes them),
          // so no row of it changes between the look and the drop; the look is one index probe.
          await c.query(`LOCK TABLE ONLY ${table} IN ACCESS EXCLUSIVE MODE`);
          await c.query(`LOCK TABLE ${name} IN ACCESS EXCLUSIVE MODE`);
          const pending = await c.query(`SELECT 1 FROM ${name} WHERE ${kept} LIMIT 1`, [cutoff]);
          if ((pending.rowCount ?? 0) > 0) return false;
          await c.query(`DROP TABLE ${name}`);
          return true;
        });
        if (!done) continue;
        dropped++;
        this.counters.dropped++;
      }
    }
    return dropped;
  }
}

import { describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { PG_MIGRATIONS } from '../../src/store/pg/migrations.js';

/**
 * Each store applies its list in order and records the versions; "newer than
 * this svc knows" compares with the last one. So versions run 1, 2, 3, … with
 * no gap and no repeat, in list order (branches that each add a migration must
 * be renumbered when they meet).
 */
describe('migration lists', () => {
  for (const [name, list] of [
    ['SQLite', MIGRATIONS],
    ['PostgreSQL', PG_MIGRATIONS],
  ] as const) {
    it(`${name}: versions are 1..n in list order, each with a name`, () => {
      expect(list.map((m) => m.version)).toEqual(list.map((_, i) => i + 1));
      for (const m of list) expect(m.name.length).toBeGreaterThan(10);
    });
  }

  it('create the same tables on both stores', () => {
    const tables = (list: readonly { sql: string }[]) =>
      new Set(list.flatMap((m) => [...m.sql.matchAll(/CREATE TABLE (?:IF NOT EXISTS )?(\w+)/gi)].map((x) => x[1]!.toLowerCase())));
    const sqlite = tables(MIGRATIONS);
    const pg = tables(PG_MIGRATIONS);
    // SQLite-only: tables rebuilt or used once by a backfill, and the single-writer outbox cursor (PostgreSQL claims rows instead).
    const sqliteOnly = [...sqlite].filter((t) => !pg.has(t));
    const pgOnly = [...pg].filter((t) => !sqlite.has(t));
    expect(pgOnly.sort()).toEqual(['rate_buckets', 'svc_settings']);
    expect(sqliteOnly.sort()).toEqual(['outbox_cursor', 'outbox_next']);
  });
});

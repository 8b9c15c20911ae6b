import path from 'node:path';
import { Database } from '../../src/store/sqlite-driver.js';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/store/db.js';
import { MIGRATIONS, type Migration } from '../../src/store/migrations.js';
import { PG_MIGRATIONS } from '../../src/store/pg/migrations.js';
import { MIGRATE_LOCK, migratePg, pgClientConfig } from '../../src/store/pg/store.js';
import { compatibleFromAfter, schemaProblem } from '../../src/store/schema-compat.js';
import { databaseUrlFor, PG_BASE_URL } from '../helpers/backend.js';
import { cleanup, tempDir } from '../helpers/svc.js';

/**
 * Rolling upgrades: what the previous release expects of the schema must still
 * hold after the newest release has migrated the store. Checked here on the
 * store of this run (SQLite, or PostgreSQL in the pg project):
 *  1. structurally, for every migration marked `expand`: every table and column
 *     of the schema before it still exists with the same type, and every column
 *     it adds to an existing table is nullable or has a default (so the previous
 *     release's INSERTs, which do not name it, still succeed);
 *  2. by behaviour: the previous release's migrator (the list without its last
 *     entry) accepts the migrated store, and the previous release's statement on
 *     the changed table (the MCP audit INSERT without request_id) runs on it;
 *  3. a contract migration (not `expand`) makes the previous release refuse the
 *     store with a clear message rather than misread it.
 */

type Columns = Map<string, { type: string; nullable: boolean; hasDefault: boolean }>;
type Schema = Map<string, Columns>;

/** A migration-driven store of this run's kind: apply a list, read the schema, run a statement. */
interface Backend {
  migrateTo(list: readonly Migration[]): Promise<number[]>;
  schema(): Promise<Schema>;
  run(sql: string, params: unknown[]): Promise<void>;
  setCompatibleFrom(version: number, value: number): Promise<void>;
  close(): Promise<void>;
}

const pg_ = PG_BASE_URL !== undefined;
const LIST = pg_ ? PG_MIGRATIONS : MIGRATIONS;
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) cleanup(d);
});

async function openBackend(): Promise<Backend> {
  const dir = tempDir();
  dirs.push(dir);
  if (!pg_) {
    const db = new Database(path.join(dir, 'svc.db'));
    db.pragma('journal_mode = WAL');
    return {
      migrateTo: async (list) => migrate(db, list),
      schema: async () => {
        const out: Schema = new Map();
        const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").all() as { name: string }[];
        for (const { name } of tables) {
          const cols = db.prepare(`PRAGMA table_info("${name}")`).all() as { name: string; type: string; notnull: number; dflt_value: unknown; pk: number }[];
          out.set(name, new Map(cols.map((c) => [c.name, { type: c.type.toUpperCase(), nullable: c.notnull === 0, hasDefault: c.dflt_value !== null || c.pk > 0 }])));
        }
        return out;
      },
      run: async (sql, params) => {
        db.prepare(sql).run(...params);
      },
      setCompatibleFrom: async (version, value) => {
        db.prepare('UPDATE schema_migrations SET compatible_from = ? WHERE version = ?').run(value, version);
      },
      close: async () => {
        db.close();
      },
    };
  }
  const { schema, ...config } = pgClientConfig({ url: databaseUrlFor(dir), poolSize: 2 });
  const pool = new pg.Pool(config);
  return {
    migrateTo: (list) => migratePg(pool, schema, list),
    schema: async () => {
      const rows = (
        await pool.query<{ table_name: string; column_name: string; data_type: string; is_nullable: string; column_default: string | null; is_identity: string }>(
          'SELECT table_name, column_name, data_type, is_nullable, column_default, is_identity FROM information_schema.columns WHERE table_schema = current_schema()',
        )
      ).rows;
      const out: Schema = new Map();
      for (const r of rows) {
        let t = out.get(r.table_name);
        if (!t) out.set(r.table_name, (t = new Map()));
        t.set(r.column_name, { type: r.data_type, nullable: r.is_nullable === 'YES', hasDefault: r.column_default !== null || r.is_identity === 'YES' });
      }
      return out;
    },
    run: async (sql, params) => {
      let n = 0;
      await pool.query(sql.replace(/\?/g, () => `$${++n}`), params);
    },
    setCompatibleFrom: async (version, value) => {
      await pool.query('UPDATE schema_migrations SET compatible_from = $1 WHERE version = $2', [value, version]);
    },
    close: () => pool.end(),
  };
}

describe('the compatibility rule', () => {
  it('accepts a newer store while what this svc lacks is expand-only, and refuses a contract or an older store', () => {
    const rows = (cf: (number | null)[]) => cf.map((c, i) => ({ version: i + 1, compatible_from: c }));
    expect(schemaProblem(3, rows([null, null, null]))).toBeNull();
    expect(schemaProblem(3, rows([null, null, null, 3]))).toBeNull();
    expect(schemaProblem(3, rows([null, null, null, 3, 3]))).toBeNull();
    expect(schemaProblem(3, rows([null, null, null, 4]))).toBe(
      'the database is at schema version 4, newer than this svc knows (3): run the svc that migrated it, or a newer one',
    );
    // A contract at 5 that 4's release can run against but 3's cannot.
    expect(schemaProblem(3, rows([null, null, null, 3, 4]))).toBe(
      'the database is at schema version 5, newer than this svc knows (3) and needs an svc of schema version 4 or newer: run the svc that migrated it, or a newer one',
    );
    expect(schemaProblem(4, rows([null, null, null, 3, 4]))).toBeNull();
    // Rows from before the rule (null) are strict.
    expect(schemaProblem(3, rows([null, null, null, null]))).not.toBeNull();
    expect(schemaProblem(4, rows([null, null, null]))).toBe('the database is at schema version 3, older than this svc (4): run svc migrate');
    expect(compatibleFromAfter({ version: 5, name: 'x', sql: '', expand: true }, { version: 4, compatible_from: 2 })).toBe(2);
    expect(compatibleFromAfter({ version: 5, name: 'x', sql: '', expand: true }, { version: 4, compatible_from: null })).toBe(4);
    expect(compatibleFromAfter({ version: 5, name: 'x', sql: '' }, { version: 4, compatible_from: 2 })).toBe(5);
  });
});

describe(`rolling upgrades on ${pg_ ? 'PostgreSQL' : 'SQLite'}`, () => {
  // Every migration applied one at a time, the schema read after each: on PostgreSQL ~30 schema reads and the
  // partition set-up; a host at load 15+ took over a minute, so this one test has more than the shared 60 s.
  it('every expand migration keeps every table and column of the schema before it, and adds only optional columns', async () => {
    const b = await openBackend();
    try {
      let before = await b.schema();
      const expands = LIST.filter((m) => m.expand);
      expect(expands.length).toBeGreaterThan(0);
      for (let i = 0; i < LIST.length; i++) {
        await b.migrateTo(LIST.slice(0, i + 1));
        const after = await b.schema();
        const m = LIST[i]!;
        if (m.expand) {
          for (const [table, cols] of before) {
            if (table === 'schema_migrations') continue;
            const now = after.get(table);
            expect(now, `migration ${m.version} drops table ${table}`).toBeDefined();
            for (const [col, def] of cols) {
              expect(now!.get(col), `migration ${m.version} drops ${table}.${col}`).toBeDefined();
              expect(now!.get(col)!.type, `migration ${m.version} changes the type of ${table}.${col}`).toBe(def.type);
              if (def.nullable) expect(now!.get(col)!.nullable, `migration ${m.version} makes ${table}.${col} NOT NULL`).toBe(true);
            }
            for (const [col, def] of now!) {
              if (cols.has(col)) continue;
              expect(def.nullable || def.hasDefault, `migration ${m.version} adds ${table}.${col} NOT NULL without a default`).toBe(true);
            }
          }
        }
        before = after;
      }
    } finally {
      await b.close();
    }
  }, 180_000);

  it('the previous release runs against a store the newest one migrated; after a contract migration it refuses it', async () => {
    const b = await openBackend();
    try {
      const latest = LIST[LIST.length - 1]!;
      const previous = LIST.slice(0, -1);
      expect(latest.expand).toBe(true);
      expect((await b.migrateTo(LIST)).length).toBe(LIST.length);
      // The previous release's migrator accepts the store and applies nothing.
      expect(await b.migrateTo(previous)).toEqual([]);
      // The previous release's statement on the table the newest migration changed.
      await b.run(
        'INSERT INTO mcp_audit (site_id, token_id, tool, outcome, error_code, duration_ms, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
        ['site_x', 'mcpk_x', 'whoami', 'ok', null, 3, Date.now()],
      );
      // Had the newest migration been a contract step, the previous release would refuse the store.
      await b.setCompatibleFrom(latest.version, latest.version);
      await expect(b.migrateTo(previous)).rejects.toThrow(
        `the database is at schema version ${latest.version}, newer than this svc knows (${latest.version - 1}): run the svc that migrated it, or a newer one`,
      );
      // The newest release itself still opens it.
      expect(await b.migrateTo(LIST)).toEqual([]);
    } finally {
      await b.close();
    }
  });
});

describe.runIf(pg_)('migrations on PostgreSQL and the database-wide migration lock', () => {
  it('an up-to-date store opens while another schema holds the lock; one with a migration to apply waits for it', async () => {
    const b = await openBackend();
    const holder = new pg.Client({ connectionString: PG_BASE_URL });
    await holder.connect();
    try {
      expect((await b.migrateTo(LIST.slice(0, -1))).length).toBe(LIST.length - 1);
      await holder.query('SELECT pg_advisory_lock($1)', [MIGRATE_LOCK]);
      // Nothing to apply: read without the lock (a lock wait would hang this test until its timeout).
      expect(await b.migrateTo(LIST.slice(0, -1))).toEqual([]);
      // The newest migration is missing: it waits for the lock, and applies it once the lock is free.
      const pending = b.migrateTo(LIST);
      const deadline = Date.now() + 30_000;
      const waiting = async () =>
        Number(
          (
            await holder.query<{ n: string }>(
              "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objid = $1",
              [MIGRATE_LOCK],
            )
          ).rows[0]!.n,
        );
      while ((await waiting()) === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(await waiting()).toBeGreaterThan(0);
      await holder.query('SELECT pg_advisory_unlock($1)', [MIGRATE_LOCK]);
      expect(await pending).toEqual([LIST[LIST.length - 1]!.version]);
      // Up to date again: no lock taken (the holder has it back).
      await holder.query('SELECT pg_advisory_lock($1)', [MIGRATE_LOCK]);
      expect(await b.migrateTo(LIST)).toEqual([]);
      // A store a newer contract migration changed is refused without the lock too.
      await b.setCompatibleFrom(LIST[LIST.length - 1]!.version, LIST[LIST.length - 1]!.version);
      await expect(b.migrateTo(LIST.slice(0, -1))).rejects.toThrow('newer than this svc knows');
    } finally {
      await holder.end();
      await b.close();
    }
  });
});

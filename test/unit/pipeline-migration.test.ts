import { Database } from '../../src/store/sqlite-driver.js';
import { describe, expect, it } from 'vitest';
import { migrate } from '../../src/store/db.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { PG_MIGRATIONS } from '../../src/store/pg/migrations.js';

const PIPELINE = MIGRATIONS.find((m) => m.sql.includes('CREATE TABLE lead_calls'))!;

describe('the pipeline migration', () => {
  it('turns contacted leads into working ones and keeps every other status', () => {
    const db = new Database(':memory:');
    db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)');
    for (const m of MIGRATIONS) {
      if (m.version >= PIPELINE.version) continue;
      db.exec(m.sql);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(m.version, m.name, 0);
    }
    const insert = db.prepare(
      "INSERT INTO leads (id, site_id, profile_id, form_id, kind, workable, status, created_at) VALUES (?, 's', 'p', 'f', 'lead_form', 1, ?, 0)",
    );
    for (const [id, status] of [['l1', 'contacted'], ['l2', 'new'], ['l3', 'won'], ['l4', 'contacted'], ['l5', 'unworkable']]) insert.run(id, status);
    expect(migrate(db)).toContain(PIPELINE.version);
    expect(db.prepare('SELECT id, status, owner_id FROM leads ORDER BY id').all()).toEqual([
      { id: 'l1', status: 'working', owner_id: null },
      { id: 'l2', status: 'new', owner_id: null },
      { id: 'l3', status: 'won', owner_id: null },
      { id: 'l4', status: 'working', owner_id: null },
      { id: 'l5', status: 'unworkable', owner_id: null },
    ]);
    db.close();
  });

  it('creates the same tables and columns on PostgreSQL', () => {
    const pg = PG_MIGRATIONS.find((m) => m.sql.includes('CREATE TABLE lead_calls'))!;
    const tables = (sql: string) => [...sql.matchAll(/CREATE TABLE (\w+)/g)].map((m) => m[1]).sort();
    expect(tables(pg.sql)).toEqual(tables(PIPELINE.sql));
    expect(pg.sql).toContain("UPDATE leads SET status = 'working' WHERE status = 'contacted'");
  });
});

import type { Command } from 'commander';
import { SUMMARIES } from './summaries.js';
import { privateDbFile, privateDir } from '../store/private-files.js';
import { Database } from '../store/sqlite-driver.js';
import pg from 'pg';
import { databasePath, migrate, schemaVersion } from '../store/db.js';
import { MIGRATIONS } from '../store/migrations.js';
import { PG_MIGRATIONS } from '../store/pg/migrations.js';
import { migratePg, pgClientConfig, pgSchemaVersion } from '../store/pg/store.js';
import { print, storeConfig, withData } from './common.js';

export function registerMigrate(program: Command): void {
  withData(
    program
      .command('migrate')
      .description(SUMMARIES.migrate)
      .option('--json', 'print JSON'),
  ).action(async (opts: { data?: string; databaseUrl?: string; json?: boolean }) => {
    const config = storeConfig(opts);
    let applied: number[];
    let version: number;
    let list = MIGRATIONS;
    if (config.databaseUrl !== undefined) {
      // Under an advisory lock: instances and operators migrating at the same moment apply each migration once.
      const { schema, ...client } = pgClientConfig({ url: config.databaseUrl, poolSize: 1 });
      const pool = new pg.Pool(client);
      pool.on('error', () => undefined);
      try {
        applied = await migratePg(pool, schema);
        version = await pgSchemaVersion(pool);
      } finally {
        await pool.end();
      }
      list = PG_MIGRATIONS;
    } else {
      privateDir(config.dataDir);
      privateDbFile(databasePath(config.dataDir));
      const db = new Database(databasePath(config.dataDir));
      try {
        db.pragma('busy_timeout = 5000');
        db.pragma('journal_mode = WAL');
        applied = migrate(db);
        version = schemaVersion(db);
      } finally {
        db.close();
      }
    }
    const names = new Map(list.map((m) => [m.version, m.name]));
    print(opts.json, { applied, version }, () =>
      [
        ...applied.map((v) => `applied ${v}: ${names.get(v)}`),
        applied.length === 0 ? `up to date at schema version ${version}` : `schema version ${version}`,
      ].join('\n'),
    );
  });
}

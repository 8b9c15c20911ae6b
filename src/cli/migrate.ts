import type { Command } from 'commander';
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { databasePath, migrate, schemaVersion } from '../store/db.js';
import { MIGRATIONS } from '../store/migrations.js';
import { configFrom, print, withData } from './common.js';

export function registerMigrate(program: Command): void {
  withData(
    program
      .command('migrate')
      .description('Apply pending schema migrations to the data directory and print the schema version (svc serve also applies them at start)')
      .option('--json', 'print JSON'),
  ).action((opts: { data?: string; json?: boolean }) => {
    // dialect: sqlite-only: migrates the embedded SQLite database of the data directory.
    const config = configFrom({ dataDir: opts.data });
    mkdirSync(config.dataDir, { recursive: true });
    const db = new Database(databasePath(config.dataDir));
    try {
      db.pragma('busy_timeout = 5000');
      db.pragma('journal_mode = WAL');
      const applied = migrate(db);
      const version = schemaVersion(db);
      const names = new Map(MIGRATIONS.map((m) => [m.version, m.name]));
      print(opts.json, { applied, version }, () =>
        [
          ...applied.map((v) => `applied ${v}: ${names.get(v)}`),
          applied.length === 0 ? `up to date at schema version ${version}` : `schema version ${version}`,
        ].join('\n'),
      );
    } finally {
      db.close();
    }
  });
}

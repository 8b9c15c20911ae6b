import type { Command } from 'commander';
import { SUMMARIES } from './summaries.js';
import { migrateConfiguredStore } from '../store/open.js';
import { print, storeConfig, withData } from './common.js';

export function registerMigrate(program: Command): void {
  withData(
    program
      .command('migrate')
      .description(SUMMARIES.migrate)
      .option('--json', 'print JSON'),
  ).action(async (opts: { data?: string; databaseUrl?: string; json?: boolean }) => {
    const { applied, version, names } = await migrateConfiguredStore(storeConfig(opts));
    print(opts.json, { applied, version }, () =>
      [
        ...applied.map((v) => `applied ${v}: ${names.get(v)}`),
        applied.length === 0 ? `up to date at schema version ${version}` : `schema version ${version}`,
      ].join('\n'),
    );
  });
}

import type { Command } from 'commander';
import { SUMMARIES } from './summaries.js';
import { backupEmbeddedStore, restoreEmbeddedStore, type RestoreView } from '../domain/backup/service.js';
import { print, storeConfig, withData } from './common.js';

const KEY_NOTE: Record<RestoreView['secret_key'], string | null> = {
  opens_secrets: null,
  no_secrets: null,
  missing:
    'warning: the backup holds sealed secrets (webhook secrets, ad-platform credentials) and this data directory has no secret key: put the secret.key of the backed-up installation here, or set SVC_SECRET_KEY, before starting svc',
  does_not_open:
    "warning: this data directory's secret key does not open the backup's sealed secrets: use the secret.key (or SVC_SECRET_KEY) of the backed-up installation",
};

export function registerBackup(program: Command): void {
  withData(
    program
      .command('backup')
      .description(SUMMARIES.backup)
      .requiredOption('--to <file>', 'the backup file to write')
      .option('--force', 'replace FILE if it exists')
      .option('--json', 'print JSON')
      .addHelpText(
        'after',
        '\nKeep the secret key (SVC_SECRET_KEY, or secret.key of the data directory) beside the backup: without it the sealed webhook\nsecrets and ad-platform credentials in it cannot be opened. People erased after a backup remain in it.\nOn PostgreSQL use pg_dump and pg_restore (README: Backups and restores).',
      ),
  ).action(async (opts: { data?: string; databaseUrl?: string; to: string; force?: boolean; json?: boolean }) => {
    const view = await backupEmbeddedStore(storeConfig(opts), { to: opts.to, force: opts.force === true });
    print(opts.json, view, () => `backed up schema version ${view.schema_version} to ${view.file} (${view.bytes} bytes, ${view.duration_ms} ms)`);
    process.stderr.write('svc: keep the secret key (SVC_SECRET_KEY or secret.key) with this backup; it is not in the file\n');
  });

  withData(
    program
      .command('restore')
      .description(SUMMARIES.restore)
      .requiredOption('--from <file>', 'the backup file')
      .option('--force', 'replace a store already in the data directory (it is kept as svc.db.replaced-<time>)')
      .option('--json', 'print JSON'),
  ).action((opts: { data?: string; databaseUrl?: string; from: string; force?: boolean; json?: boolean }) => {
    const view = restoreEmbeddedStore(storeConfig(opts), { from: opts.from, force: opts.force === true });
    print(opts.json, view, () =>
      [
        `restored ${view.from} into ${view.data_dir} (schema version ${view.schema_version}${view.migrated_to !== view.schema_version ? `, migrated to ${view.migrated_to}` : ''})`,
        ...(view.replaced_kept_at ? [`the store that was there is kept as ${view.replaced_kept_at}`] : []),
      ].join('\n'),
    );
    const note = KEY_NOTE[view.secret_key];
    if (note) process.stderr.write(`svc: ${note}\n`);
  });
}

import { z } from 'zod';
import type { Config } from '../../config.js';
import { AppError } from '../../errors/app-error.js';
import { backupStore, restoreStore, StoreFileError } from '../../store/backup.js';
import { SecretBox } from '../../store/secret-box.js';
import { takeRestoreLock } from '../../store/serve-lock.js';

/** What `svc backup` made. */
export const backupViewSchema = z.object({
  file: z.string().describe('The backup file (mode 0600).'),
  bytes: z.number().int(),
  schema_version: z.number().int().describe('Schema version of the backed-up store.'),
  duration_ms: z.number().int(),
});
export type BackupView = z.infer<typeof backupViewSchema>;

/** What `svc restore` did. */
export const restoreViewSchema = z.object({
  data_dir: z.string(),
  from: z.string(),
  bytes: z.number().int(),
  schema_version: z.number().int().describe('Schema version of the backup.'),
  migrated_to: z.number().int().describe('Schema version after this svc applied its pending migrations.'),
  replaced_kept_at: z.string().nullable().describe('Where the store that was there before is kept (--force).'),
  secret_key: z
    .enum(['opens_secrets', 'no_secrets', 'missing', 'does_not_open'])
    .describe("Whether this data directory's secret key (SVC_SECRET_KEY or secret.key) opens the backup's sealed secrets."),
});
export type RestoreView = z.infer<typeof restoreViewSchema>;

export const backupInputSchema = z.object({ to: z.string().min(1), force: z.boolean().default(false) });
export const restoreInputSchema = z.object({ from: z.string().min(1), force: z.boolean().default(false) });

type StoreSettings = Pick<Config, 'dataDir' | 'databaseUrl'>;

function embeddedOnly(config: StoreSettings, what: 'backup' | 'restore'): void {
  if (config.databaseUrl === undefined) return;
  const tool = what === 'backup' ? 'pg_dump --format=custom' : 'pg_restore';
  throw new AppError(
    'bad_request',
    `svc ${what} is for the embedded SQLite store; on PostgreSQL use ${tool} (README: Backups and restores), and keep the secret key beside the dump`,
    { field: 'database_url' },
  );
}

function toAppError(err: unknown): unknown {
  if (!(err instanceof StoreFileError)) return err;
  switch (err.kind) {
    case 'not_found':
      return new AppError('not_found', err.message);
    case 'conflict':
    case 'busy':
      return new AppError('conflict', err.message);
    case 'invalid':
      return new AppError('bad_request', err.message);
  }
}

/** A consistent online copy of the embedded store, taken while servers keep running. */
export async function backupEmbeddedStore(config: StoreSettings, input: z.input<typeof backupInputSchema>): Promise<BackupView> {
  embeddedOnly(config, 'backup');
  const { to, force } = backupInputSchema.parse(input);
  const started = performance.now();
  try {
    const facts = await backupStore(config.dataDir, to, { force });
    return { file: to, bytes: facts.bytes, schema_version: facts.schemaVersion, duration_ms: Math.round(performance.now() - started) };
  } catch (err) {
    throw toAppError(err);
  }
}

/** Puts a backup back as the embedded store; refused while a server holds the data directory. */
export function restoreEmbeddedStore(config: StoreSettings, input: z.input<typeof restoreInputSchema>): RestoreView {
  embeddedOnly(config, 'restore');
  const { from, force } = restoreInputSchema.parse(input);
  const lock = takeRestoreLock(config.dataDir);
  if (lock === null) {
    throw new AppError('conflict', `an svc serve holds ${config.dataDir} (or another restore runs): stop it first, then restore`);
  }
  try {
    const facts = restoreStore(config.dataDir, from, { force });
    const box = SecretBox.existing(config.dataDir);
    let secretKey: RestoreView['secret_key'] = 'no_secrets';
    if (facts.sealedSample !== null) {
      if (box === null) secretKey = 'missing';
      else {
        try {
          box.open(facts.sealedSample);
          secretKey = 'opens_secrets';
        } catch {
          secretKey = 'does_not_open';
        }
      }
    }
    return {
      data_dir: config.dataDir,
      from,
      bytes: facts.bytes,
      schema_version: facts.schemaVersion,
      migrated_to: facts.migratedTo,
      replaced_kept_at: facts.replacedKeptAt,
      secret_key: secretKey,
    };
  } catch (err) {
    throw toAppError(err);
  } finally {
    lock.release();
  }
}

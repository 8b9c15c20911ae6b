import type { Command } from 'commander';
import { ZodError } from 'zod';
import { loadConfig, type Config } from '../config.js';
import { AppError } from '../errors/app-error.js';
import type { Store } from '../store/store.js';
import { openConfiguredStore, storeExists } from '../store/open.js';
import { configError } from './config-error.js';
import path from 'node:path';

/** Adds `--data DIR` and `--database-url URL` to a command. */
export function withData(cmd: Command): Command {
  return cmd
    .option('--data <dir>', 'data directory (env SVC_DATA_DIR, default ./.svc)')
    .option('--database-url <url>', 'PostgreSQL instead of the embedded SQLite store (env SVC_DATABASE_URL)');
}

/** The store settings of a command's `--data` / `--database-url` flags. */
export function storeConfig(opts: { data?: string; databaseUrl?: string }, extra: Partial<Record<keyof Config, unknown>> = {}): Config {
  return configFrom({ dataDir: opts.data, databaseUrl: opts.databaseUrl, ...extra });
}

/** Resolves the configuration of a command from its flags, mapping bad values to a usage error. */
export function configFrom(flags: Partial<Record<keyof Config, unknown>>): Config {
  try {
    return loadConfig(flags);
  } catch (err) {
    if (err instanceof ZodError) throw configError(err, flags);
    throw err;
  }
}

/**
 * Opens the store named by `--database-url` / SVC_DATABASE_URL (PostgreSQL), else the
 * SQLite store of the data directory named by `--data` / SVC_DATA_DIR, and runs `fn` with it.
 * A data directory without a store is refused (not_found, exit 1) rather than created,
 * unless `create` (svc site create makes the first one).
 */
export async function withStore<T>(
  opts: { data?: string; databaseUrl?: string },
  fn: (store: Store) => T | Promise<T>,
  { create = false }: { create?: boolean } = {},
): Promise<T> {
  const config = storeConfig(opts);
  if (!create && !storeExists(config)) {
    throw new AppError(
      'not_found',
      `there is no svc data directory at ${path.resolve(config.dataDir)} (no svc.db): create a site there with svc site create, or name another with --data / SVC_DATA_DIR`,
    );
  }
  const store = await openConfiguredStore(config);
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** Prints data: JSON with `--json`, else the human text. */
export function print(json: boolean | undefined, data: unknown, human: () => string): void {
  process.stdout.write(json ? `${JSON.stringify(data, null, 2)}\n` : `${human()}\n`);
}

/** A fixed-width table for human output. */
export function table(rows: Record<string, unknown>[], columns: string[]): string {
  if (rows.length === 0) return '(none)';
  const cells = rows.map((r) => columns.map((c) => (r[c] === null || r[c] === undefined ? '' : String(r[c]))));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const line = (vals: string[]) => vals.map((v, i) => v.padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(columns), ...cells.map(line)].join('\n');
}

export function usageError(message: string): AppError {
  return new AppError('bad_request', message);
}

import type { Command } from 'commander';
import { SUMMARIES } from './summaries.js';
import { print, table, withData, withStore } from './common.js';
import { SiteSettingsService } from '../domain/sites/service.js';

export function registerStats(program: Command): void {
  withData(
    program
      .command('stats')
      .description(SUMMARIES.stats)
      .option('--site <id>', 'only this site')
      .option('--json', 'print JSON'),
  ).action(async (opts: { site?: string; json?: boolean; data?: string }) => {
    const rows = await withStore(opts, (s) => new SiteSettingsService(s).stats(opts.site));
    print(opts.json, opts.site !== undefined ? rows[0] : rows, () =>
      table(rows as unknown as Record<string, unknown>[], [
        'site_id',
        'profiles',
        'sessions',
        'events',
        'scores',
        'conversions',
        'leads',
        'outbox_pending',
        'outbox_done',
      ]),
    );
  });
}

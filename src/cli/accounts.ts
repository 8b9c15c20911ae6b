import { readFileSync } from 'node:fs';
import { SUMMARIES } from './summaries.js';
import type { Command } from 'commander';
import { AppError } from '../errors/app-error.js';
import { parseRangesCsv } from '../domain/accounts/ip-ranges.js';
import { loadIpRanges } from '../domain/accounts/load-ranges.js';
import { SegmentMembership } from '../domain/segments/membership.js';
import { print, usageError, withData, withStore } from './common.js';

/** `svc accounts ip-ranges load`: the operator's IP-range-to-company CSV, as accounts_ip_ranges_load loads it over MCP. */
export function registerAccounts(program: Command): void {
  const accounts = program.command('accounts').description(SUMMARIES.accounts);
  const ranges = accounts.command('ip-ranges').description('IP-range-to-company enrichment of anonymous sessions');
  withData(
    ranges
      .command('load')
      .description("Replace a site's IP ranges with a CSV file (cidr,domain[,name] per line); any bad line loads nothing")
      .requiredOption('--site <id>', 'the site')
      .requiredOption('--file <path>', 'the CSV file')
      .option('--json', 'print JSON'),
  ).action(async (opts: { site: string; file: string; json?: boolean; data?: string }) => {
    let text: string;
    try {
      text = readFileSync(opts.file, 'utf8');
    } catch (err) {
      throw usageError(`--file: cannot read ${opts.file}: ${(err as Error).message}`);
    }
    const parsed = parseRangesCsv(text);
    if (parsed.errors.length > 0) {
      const lines = parsed.errors.slice(0, 20).map((e) => `line ${e.line}: ${e.message}`);
      throw new AppError('validation_failed', `${parsed.errors.length} bad line(s) in ${opts.file}; nothing loaded\n${lines.join('\n')}`, { errors: parsed.errors.slice(0, 20) });
    }
    const { replaced } = await withStore(opts, (s) => loadIpRanges(s, new SegmentMembership(s), opts.site, parsed.ranges));
    const out = { site_id: opts.site, loaded: parsed.ranges.length, replaced, companies: new Set(parsed.ranges.map((r) => r.domain)).size };
    print(opts.json, out, () => `loaded ${out.loaded} range(s) of ${out.companies} compan(ies); replaced ${out.replaced}`);
  });
}

import { existsSync, readFileSync } from 'node:fs';
import { SUMMARIES } from './summaries.js';
import type { Command } from 'commander';
import type { Store } from '../store/store.js';
import { SegmentMembership } from '../domain/segments/membership.js';
import { SegmentsService } from '../domain/segments/service.js';
import { SegmentCatalog } from '../domain/segments/catalog.js';
import { print, table, usageError, withData, withStore } from './common.js';

function readRule(arg: string): unknown {
  const text = arg.trim().startsWith('{') ? arg : existsSync(arg) ? readFileSync(arg, 'utf8') : null;
  if (text === null) throw usageError(`--rule: ${arg} is neither JSON nor a readable file`);
  try {
    return JSON.parse(text);
  } catch (err) {
    throw usageError(`--rule: not valid JSON (${(err as Error).message})`);
  }
}

/** The segment use cases over an open store. */
const catalogOf = (s: Store) => new SegmentCatalog(s, new SegmentsService(s, new SegmentMembership(s)));

export function registerSegment(program: Command): void {
  const seg = program.command('segment').description(SUMMARIES.segment);
  withData(
    seg
      .command('create')
      .description('Create a segment and compute its members')
      .requiredOption('--site <id>', 'site')
      .requiredOption('--name <name>', 'segment name (unique in the site)')
      .requiredOption('--rule <file|json>', 'the rule, as JSON or a file holding it')
      .option('--priority <n>', 'higher wins as primary segment', '0')
      .option('--json', 'print JSON'),
  ).action(async (opts: { site: string; name: string; rule: string; priority: string; json?: boolean; data?: string }) => {
    const priority = Number(opts.priority);
    if (!Number.isInteger(priority)) throw usageError('--priority must be a whole number');
    const rule = readRule(opts.rule);
    const out = await withStore(opts, (s) => catalogOf(s).createInSite(opts.site, { name: opts.name, rule, priority }));
    print(opts.json, out, () => `${out.id} (${out.members} members)`);
  });
  withData(seg.command('list').description('List segments').option('--site <id>', 'only this site').option('--json', 'print JSON')).action(
    async (opts: { site?: string; json?: boolean; data?: string }) => {
      const out = await withStore(opts, (s) => catalogOf(s).listAll(opts.site));
      print(opts.json, out, () => table(out as unknown as Record<string, unknown>[], ['id', 'site_id', 'name', 'priority', 'status', 'members', 'updated_at']));
    },
  );
  withData(seg.command('show').description('Show one segment with its rule').argument('<id>', 'segment id').option('--json', 'print JSON')).action(
    async (id: string, opts: { json?: boolean; data?: string }) => {
      const out = await withStore(opts, (s) => catalogOf(s).show(id));
      print(opts.json, out, () => `${out.id}  ${out.name}  priority ${out.priority}  ${out.status}  ${out.members} members\n${JSON.stringify(out.rule, null, 2)}`);
    },
  );
  withData(seg.command('delete').description('Delete a segment (refused while another segment uses it)').argument('<id>', 'segment id').option('--json', 'print JSON')).action(
    async (id: string, opts: { json?: boolean; data?: string }) => {
      const out = await withStore(opts, (s) => catalogOf(s).removeById(id));
      print(opts.json, out, () => `deleted ${out.removed} (${out.members} former members recomputed)`);
    },
  );
}

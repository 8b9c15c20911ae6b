import type { Command } from 'commander';
import { SUMMARIES } from './summaries.js';
import { recommendForSite } from '../domain/recommend/service.js';
import { RECOMMEND_LIMITS, recommendQuerySchema, type RecommendResult } from '../domain/recommend/schema.js';
import { DEFAULT_MIN_SUPPORT } from '../domain/recommend/measure.js';
import { print, table, usageError, withData, withStore } from './common.js';

interface RecommendOpts {
  site: string;
  sku: string[];
  k: string;
  minSupport: string;
  json?: boolean;
  data?: string;
}

const FLAG: Record<string, string> = { skus: '--sku', k: '--k', min_support: '--min-support' };

function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), ...value.split(',').map((s) => s.trim()).filter(Boolean)];
}

function whole(flag: string, raw: string): number {
  const n = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(n)) throw usageError(`${flag} must be a whole number, got ${JSON.stringify(raw)}`);
  return n;
}

function human(out: RecommendResult): string {
  const basket = out.basket.map((b) => `${b.sku} (${b.orders} orders)`).join(', ');
  const head = `companions of ${basket}; ${out.total_orders} orders in the site, min support ${out.min_support}`;
  const rows = out.items.map((r, i) => ({
    rank: i + 1,
    sku: r.sku,
    score: r.score.toFixed(4),
    support: r.support,
    orders: r.orders,
    lift: r.lift.toFixed(2),
    confidence: r.confidence.toFixed(3),
    ...(out.basket.length > 1 ? { anchor: r.anchor } : {}),
  }));
  const cols = ['rank', 'sku', 'score', 'support', 'orders', 'lift', 'confidence', ...(out.basket.length > 1 ? ['anchor'] : [])];
  return `${head}\n${table(rows, cols)}`;
}

export function registerRecommend(program: Command): void {
  withData(
    program
      .command('recommend')
      .description(SUMMARIES.recommend)
      .requiredOption('--site <id>', 'site')
      .requiredOption('--sku <sku>', `the sku; repeat it, or separate with commas, for a basket (at most ${RECOMMEND_LIMITS.skus})`, collect)
      .option('--k <n>', `how many to return, 1 to ${RECOMMEND_LIMITS.k}`, String(RECOMMEND_LIMITS.defaultK))
      .option('--min-support <n>', 'orders a pair must share to be considered', String(DEFAULT_MIN_SUPPORT))
      .option('--json', 'print JSON'),
  ).action(async (opts: RecommendOpts) => {
    const parsed = recommendQuerySchema.safeParse({ skus: opts.sku, k: whole('--k', opts.k), min_support: whole('--min-support', opts.minSupport) });
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw usageError(`${FLAG[String(issue.path[0])] ?? String(issue.path[0])}: ${issue.message}`);
    }
    const out = await withStore(opts, (s) => recommendForSite(s, opts.site, parsed.data));
    print(opts.json, out, () => human(out));
  });
}

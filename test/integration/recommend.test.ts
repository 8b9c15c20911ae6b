import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { cleanup, cli, cliJson, createSite, post, startSvc, tempDir, type Svc } from '../helpers/svc.js';
import { query } from '../helpers/db.js';
import { errorOf } from '../helpers/mcp-client.js';

/**
 * Through the running server: conversions posted to /api/convert update the
 * co-purchase counts in their transaction; `svc recommend` and the MCP tool
 * read the same ranking.
 *
 * Orders (N = 12): tent+stakes ×4 (one also with a lantern), tent+stakes+mallet ×2,
 * tent alone ×1, lantern alone ×3, mug+spoon ×1, and one order listing tent twice
 * with stakes (qty 3): a repeated sku counts once.
 */
let svc: Svc;
let dataDir: string;
let site: string;
let otherSite: string;
let client: Client;

const line = (sku: string, qty = 1) => ({ sku, qty, price: 10 });
const ORDERS: { sku: string; qty?: number }[][] = [
  [{ sku: 'tent' }, { sku: 'stakes' }],
  [{ sku: 'tent' }, { sku: 'stakes' }],
  [{ sku: 'tent' }, { sku: 'stakes' }],
  [{ sku: 'tent' }, { sku: 'stakes' }, { sku: 'lantern' }],
  [{ sku: 'tent' }, { sku: 'stakes' }, { sku: 'mallet' }],
  [{ sku: 'tent' }, { sku: 'stakes' }, { sku: 'mallet' }],
  [{ sku: 'tent' }],
  [{ sku: 'lantern' }],
  [{ sku: 'lantern' }],
  [{ sku: 'lantern' }],
  [{ sku: 'mug' }, { sku: 'spoon' }],
  [{ sku: 'tent', qty: 1 }, { sku: 'stakes', qty: 3 }, { sku: 'tent', qty: 2 }],
];

const recommendCli = (args: string[]) => cli(['recommend', '--site', site, ...args, '--data', dataDir]);

beforeAll(async () => {
  dataDir = tempDir();
  site = createSite(dataDir);
  otherSite = createSite(dataDir, 'Other');
  const token = cliJson<{ token: string }>(['token', 'mint', '--site', site, '--scope', 'read', '--read-only', '--areas', 'recommendations', '--data', dataDir]).token;
  svc = await startSvc({ dataDir });
  for (const [i, items] of ORDERS.entries()) {
    const r = await post(`${svc.url}/api/convert`, { site_id: site, session_id: `rec-s${i}`, revenue: 10, line_items: items.map((it) => line(it.sku, it.qty)) });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
  }
  expect((await post(`${svc.url}/api/convert`, { site_id: site, session_id: 'rec-empty', revenue: 5 })).status).toBe(201);
  for (let i = 0; i < 3; i++) {
    await post(`${svc.url}/api/convert`, { site_id: otherSite, session_id: `o-${i}`, revenue: 1, line_items: [line('tent'), line('canoe')] });
  }
  const transport = new StreamableHTTPClientTransport(new URL(`${svc.url}/api/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
  client = new Client({ name: 'svc-recommend-test', version: '1.0.0' });
  await client.connect(transport);
});

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await svc?.stop();
  cleanup(dataDir);
});

describe('co-purchase counts from /api/convert', () => {
  it('counts per order in the conversion’s transaction; a repeated sku counts once', () => {
    expect(query(dataDir, 'SELECT orders FROM copurchase_orders WHERE site_id = ?', site)).toEqual([{ orders: 12 }]);
    expect(query(dataDir, 'SELECT sku, orders FROM copurchase_items WHERE site_id = ? ORDER BY sku', site)).toEqual([
      { sku: 'lantern', orders: 4 },
      { sku: 'mallet', orders: 2 },
      { sku: 'mug', orders: 1 },
      { sku: 'spoon', orders: 1 },
      { sku: 'stakes', orders: 7 },
      { sku: 'tent', orders: 8 },
    ]);
    const PAIRS = `SELECT a.sku AS sku, b.sku AS other, p.orders AS orders FROM copurchase_pairs p
      JOIN copurchase_items a ON a.id = p.item JOIN copurchase_items b ON b.id = p.other WHERE a.site_id = ?`;
    expect(query(dataDir, `${PAIRS} AND a.sku = 'tent' ORDER BY other`, site)).toEqual([
      { sku: 'tent', other: 'lantern', orders: 1 },
      { sku: 'tent', other: 'mallet', orders: 2 },
      { sku: 'tent', other: 'stakes', orders: 7 },
    ]);
    // Both directions, never an item with itself, never across sites.
    expect(query(dataDir, `${PAIRS} AND a.sku = 'stakes' ORDER BY other`, site)).toEqual([
      { sku: 'stakes', other: 'lantern', orders: 1 },
      { sku: 'stakes', other: 'mallet', orders: 2 },
      { sku: 'stakes', other: 'tent', orders: 7 },
    ]);
    expect(query(dataDir, 'SELECT count(*) AS n FROM copurchase_pairs WHERE item = other')).toEqual([{ n: 0 }]);
    expect(query(dataDir, 'SELECT count(*) AS n FROM copurchase_pairs p JOIN copurchase_items a ON a.id = p.item JOIN copurchase_items b ON b.id = p.other WHERE a.site_id <> b.site_id')).toEqual([{ n: 0 }]);
    expect(query(dataDir, "SELECT count(*) AS n FROM copurchase_pairs p JOIN copurchase_items a ON a.id = p.item WHERE a.site_id = ? AND a.sku = 'tent'", otherSite)).toEqual([{ n: 1 }]);
  });
});

describe('svc recommend', () => {
  it('ranks companions with exact figures (--json), excluding the sku and pairs under the minimum support', () => {
    const r = recommendCli(['--sku', 'tent', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({ site_id: site, total_orders: 12, min_support: 3, basket: [{ sku: 'tent', orders: 8 }] });
    // mallet (2 orders with tent) and lantern (1) are under the default minimum support of 3.
    expect(out.items).toHaveLength(1);
    // stakes: N = 12, n_tent = 8, n_stakes = 7, n_both = 7.
    // lift = 12·7/(8·7) = 1.5; NPMI = ln 1.5 / −ln(7/12) = 0.752259; score = NPMI · 7/12 = 0.438818.
    expect(out.items[0]).toMatchObject({ sku: 'stakes', support: 7, orders: 7, anchor: 'tent', lift: 1.5, confidence: 0.875, matched: 1 });
    expect(out.items[0].npmi).toBeCloseTo(0.752259, 6);
    expect(out.items[0].score).toBeCloseTo(0.438818, 6);

    const low = JSON.parse(recommendCli(['--sku', 'tent', '--min-support', '1', '--json']).stdout);
    // mallet: lift 12·2/(8·2) = 1.5, NPMI ln 1.5/ln 6 = 0.226294, score · 2/7 = 0.064656.
    // lantern: lift 12·1/(8·4) = 0.375 (below chance), negative.
    expect(low.items.map((i: any) => [i.sku, i.support])).toEqual([['stakes', 7], ['mallet', 2], ['lantern', 1]]);
    expect(low.items[1].score).toBeCloseTo(0.064656, 6);
    expect(low.items[2].score).toBeLessThan(0);
    expect(JSON.parse(recommendCli(['--sku', 'tent', '--min-support', '1', '--k', '2', '--json']).stdout).items).toHaveLength(2);
  });

  it('recommends for a basket given as repeated --sku or a comma list', () => {
    const a = JSON.parse(recommendCli(['--sku', 'tent', '--sku', 'stakes', '--min-support', '2', '--json']).stdout);
    const b = JSON.parse(recommendCli(['--sku', 'stakes,tent', '--min-support', '2', '--json']).stdout);
    expect(a.basket).toEqual([{ sku: 'tent', orders: 8 }, { sku: 'stakes', orders: 7 }]);
    expect(b.items).toEqual(a.items);
    // mallet is a companion of both (2 orders each); neither basket item is recommended.
    expect(a.items.map((i: any) => [i.sku, i.support, i.matched])).toEqual([['mallet', 4, 2]]);
  });

  it('prints a table without --json', () => {
    const r = recommendCli(['--sku', 'tent']);
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toBe('companions of tent (8 orders); 12 orders in the site, min support 3');
    expect(lines[1]).toMatch(/^rank\s+sku\s+score\s+support\s+orders\s+lift\s+confidence$/);
    expect(lines[2]).toMatch(/^1\s+stakes\s+0\.4388\s+7\s+7\s+1\.50\s+0\.875$/);
  });

  it('answers an unknown sku with an empty list, and stays inside the site', () => {
    const r = recommendCli(['--sku', 'kayak', '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ basket: [{ sku: 'kayak', orders: 0 }], items: [] });
    expect(JSON.parse(recommendCli(['--sku', 'canoe', '--json']).stdout).items).toEqual([]);
    const other = cliJson<any>(['recommend', '--site', otherSite, '--sku', 'tent', '--data', dataDir]);
    expect(other.items.map((i: any) => i.sku)).toEqual(['canoe']);
  });

  it('fails with exit 1 for an unknown site and exit 2 for bad flags', () => {
    const r = cli(['recommend', '--site', 'site_missing', '--sku', 'tent', '--data', dataDir]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('svc: no site site_missing\n');
    for (const args of [['--k', '0'], ['--k', '101'], ['--k', 'ten'], ['--min-support', '0'], ['--min-support', '1.5']]) {
      const bad = recommendCli(['--sku', 'tent', ...args]);
      expect(bad.code, args.join(' ')).toBe(2);
      expect(bad.stderr, args.join(' ')).toMatch(/^svc: --(k|min-support)\b.*\n$/);
    }
    expect(cli(['recommend', '--site', site, '--data', dataDir]).code).toBe(2);
    const many = recommendCli(['--sku', Array.from({ length: 21 }, (_, i) => `x${i}`).join(',')]);
    expect(many.code).toBe(2);
    expect(many.stderr).toBe('svc: --sku: at most 20 skus\n');
    expect(cli(['recommend', '--help']).stdout).toContain('Usage: svc recommend');
  });
});

describe('svc seed', () => {
  it('fills the co-purchase counts of the conversions it writes', () => {
    const seeded = createSite(dataDir, 'Seeded');
    const r = cliJson<{ conversions: number }>(['seed', '--site', seeded, '--profiles', '2000', '--seed', '3', '--data', dataDir]);
    expect(r.conversions).toBeGreaterThan(50);
    expect(query(dataDir, 'SELECT orders FROM copurchase_orders WHERE site_id = ?', seeded)).toEqual([{ orders: r.conversions }]);
    const lines = query<{ line_items: string }>(dataDir, 'SELECT line_items FROM conversions WHERE site_id = ?', seeded);
    const n = new Map<string, number>();
    for (const l of lines) for (const sku of new Set((JSON.parse(l.line_items) as { sku: string }[]).map((i) => i.sku))) n.set(sku, (n.get(sku) ?? 0) + 1);
    const stored = query<{ sku: string; orders: number }>(dataDir, 'SELECT sku, orders FROM copurchase_items WHERE site_id = ?', seeded);
    expect(new Map(stored.map((x) => [x.sku, x.orders]))).toEqual(n);
  });
});

describe('MCP recommendations_co_purchased', () => {
  it('is listed as a read-only tool of the recommendations area', async () => {
    const { tools } = await client.listTools();
    const tool = tools.find((t) => t.name === 'recommendations_co_purchased')!;
    expect(tool.annotations).toEqual({ readOnlyHint: true, destructiveHint: false, openWorldHint: false });
    expect(tool.description).toMatch(/ Scope: read\.$/);
    expect((tool.inputSchema.properties as any).skus).toMatchObject({ type: 'array', minItems: 1, maxItems: 20 });
    expect((tool.inputSchema.properties as any).min_support.default).toBe(3);
  });

  it('returns the same ranking as the CLI', async () => {
    for (const args of [{ skus: ['tent'] }, { skus: ['tent'], min_support: 1, k: 2 }, { skus: ['tent', 'stakes'], min_support: 2 }]) {
      const r: any = await client.callTool({ name: 'recommendations_co_purchased', arguments: args });
      expect(r.isError, JSON.stringify(r.structuredContent)).toBeFalsy();
      const flags = [...args.skus.flatMap((s) => ['--sku', s]), '--k', String(args.k ?? 10), '--min-support', String(args.min_support ?? 3)];
      expect(r.structuredContent).toEqual(cliJson(['recommend', '--site', site, ...flags, '--data', dataDir]));
    }
    const one: any = await client.callTool({ name: 'recommendations_co_purchased', arguments: { skus: ['tent'] } });
    expect(one.structuredContent.items.map((i: any) => [i.sku, i.support, i.lift])).toEqual([['stakes', 7, 1.5]]);
  });

  it('answers unknown skus with an empty list and bad arguments with validation_failed', async () => {
    const empty: any = await client.callTool({ name: 'recommendations_co_purchased', arguments: { skus: ['kayak'] } });
    expect(empty.structuredContent.items).toEqual([]);
    const bad: any = await client.callTool({ name: 'recommendations_co_purchased', arguments: { skus: [], k: 500 } });
    expect(bad.isError).toBe(true);
    expect(errorOf(bad)).toMatchObject({ code: 'validation_failed', details: { field: 'skus' } });
  });
});

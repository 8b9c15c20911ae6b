/**
 * svc's CPU to serialise one pass of checked exposure statements (never part of the suite; no database):
 *
 *   node --import ./test/bench/register.mjs test/bench/decide-bind-micro.ts [--decisions 16 --binds 5000 --rounds 8]
 *
 * Builds the seven arrays of INSERT_EXPOSURES_IF_FACTS_PG for `decisions` decisions of 5 zones joined end to end, as
 * BatchPgSql's tagged append hands them to node-pg (site, visitor, profile, URL, time, the expected facts as renderFacts
 * gives them, the zones as insertIfFacts's JSON), then times pg-protocol's Bind message for them `binds` times, the
 * arrays in pg's text form (prepareValue: each element quoted and escaped) against their binary form (binaryTextArray,
 * pg/batch.ts), rounds interleaved with the order alternated. Prints this process's CPU (process.cpuUsage) per Bind.
 * `--only text|binary`: that form alone, warm-up included (for an instruction count under callgrind, by the difference
 * of two runs with different `--binds`).
 */
import { parseArgs } from 'node:util';
import { serialize } from 'pg-protocol';
import { createRequire } from 'node:module';
import { binaryTextArray } from '../../src/store/pg/batch.js';
import { renderFacts } from '../../src/store/exposures.js';
import { intFlag } from './lib/args.js';

const { values: flags } = parseArgs({
  options: { decisions: { type: 'string' }, binds: { type: 'string' }, rounds: { type: 'string' }, only: { type: 'string' }, help: { type: 'boolean', short: 'h', default: false } },
});
if (flags.help) {
  process.stdout.write('usage: decide-bind-micro.ts [--decisions 16] [--binds 5000] [--rounds 8] [--only text|binary]\n');
  process.exit(0);
}
const B = intFlag('decisions', flags.decisions, 16, 1, 1000);
const N = intFlag('binds', flags.binds, 5000, 1, 1_000_000);
const ROUNDS = intFlag('rounds', flags.rounds, 8, 1, 100);
/** node-pg's conversion of a parameter (what its Bind applies to each value). */
const only = flags.only;
if (only !== undefined && only !== 'text' && only !== 'binary') throw new Error('--only takes text or binary');
const prepareValue = (createRequire(import.meta.url)('pg/lib/utils.js') as { prepareValue: (v: unknown) => unknown }).prepareValue;

const columns: unknown[][] = Array.from({ length: 7 }, () => []);
for (let j = 0; j < B; j++) {
  const test = `exp_${j % 10}k3v9q2m7x1c8b4n6`;
  columns[0]!.push('site_3f2a9c1e5b7d4f60a8c2');
  columns[1]!.push(`bv-${(j * 7919) % 10_000}`);
  columns[2]!.push(null);
  columns[3]!.push(j % 2 ? `https://shop.example/p${j % 10}/item-${j}` : `https://shop.example/p${j % 10}?utm_source=bench`);
  columns[4]!.push(1_765_000_000_000 + j);
  columns[5]!.push(renderFacts([{ k: 2, a: test, b: 'arm_7d2c9e4b1a6f3h8j5k0m', c: null }]));
  columns[6]!.push(
    JSON.stringify(
      Array.from({ length: 5 }, (_, i) => ({
        zone_id: `zone_${i}x8c2v6b1n4m7q9w3e5r`,
        variant_id: `var_${i}t6y2u8i4o1p9a3s7d5f`,
        experiment_id: i === 0 ? test : null,
        arm_id: i === 0 ? 'arm_7d2c9e4b1a6f3h8j5k0m' : null,
        holdout: 0,
        f: 0,
      })),
    ),
  );
}

let bytes = 0;
function run(binary: boolean): number {
  const t = process.cpuUsage();
  for (let i = 0; i < N; i++) {
    const values = binary ? columns.map((c) => binaryTextArray(c) ?? c) : columns;
    bytes += serialize.bind({ statement: 's1', values, valueMapper: (v: unknown) => prepareValue(v) } as Parameters<typeof serialize.bind>[0]).length;
  }
  const u = process.cpuUsage(t);
  return (u.user + u.system) / N;
}

const forms = (r: number): boolean[] => (only !== undefined ? [only === 'binary'] : r % 2 ? [true, false] : [false, true]);
for (let r = 0; r < 3; r++) for (const binary of forms(r)) run(binary);
const res = { text: [] as number[], binary: [] as number[] };
for (let r = 0; r < ROUNDS; r++) for (const binary of forms(r)) res[binary ? 'binary' : 'text'].push(run(binary));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const [k, xs] of Object.entries(res)) {
  if (xs.length === 0) continue;
  process.stdout.write(`${k}: µs per Bind of ${B} decisions ${xs.map((x) => x.toFixed(1)).join(', ')} (median ${median(xs).toFixed(1)}, ${(median(xs) / B).toFixed(2)} a decision)\n`);
}
process.stdout.write(`(${bytes} bytes serialised)\n`);

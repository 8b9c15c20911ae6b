/**
 * How long the CLI takes to start (never part of the pass/fail suite):
 *
 *   npm run bench:cli [-- --runs 30]
 *
 * Runs `node -e 0` (the baseline), `svc --help`, `svc stats --help` and `svc verify --help` cold, in turn, --runs
 * times each (interleaved, so a busy host slows all of them alike), and prints each one's median and p90 wall time
 * and its median ratio to the baseline. Each command loads only its own file (src/cli/main.ts), so `svc --help`
 * pays for commander and the command summaries, nothing else.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { intFlag } from './lib/args.js';

const { values } = parseArgs({ options: { runs: { type: 'string' } } });
const runs = intFlag('runs', values.runs, 30, 3, 500);
const bin = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../bin/svc.js');

const cases: [string, string[]][] = [
  ['node -e 0', ['-e', '0']],
  ['svc --help', [bin, '--help']],
  ['svc stats --help', [bin, 'stats', '--help']],
  ['svc verify --help', [bin, 'verify', '--help']],
];
const times = new Map<string, number[]>(cases.map(([name]) => [name, []]));
for (let i = 0; i < runs; i++) {
  for (const [name, args] of cases) {
    const t0 = process.hrtime.bigint();
    const r = spawnSync(process.execPath, args, { stdio: ['ignore', 'ignore', 'inherit'] });
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (r.status !== 0) throw new Error(`${name} exited ${r.status}`);
    times.get(name)!.push(ms);
  }
}
const q = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))]!;
const base = q(times.get('node -e 0')!, 0.5);
console.log(`cold start, ${runs} runs each, interleaved (node ${process.version})`);
for (const [name] of cases) {
  const xs = times.get(name)!;
  console.log(
    `${name.padEnd(20)} median ${q(xs, 0.5).toFixed(0).padStart(5)} ms  p90 ${q(xs, 0.9).toFixed(0).padStart(5)} ms  ratio ${(q(xs, 0.5) / base).toFixed(2)}×`,
  );
}

import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * valgrind's arguments before node's, for a server run under callgrind that dumps into `dir` (a file per
 * process, `name-<pid>`, threads together); none when `dir` is undefined (the server runs as itself).
 */
export function callgrindArgs(dir: string | undefined, name: string): string[] {
  if (!dir) return [];
  const out = path.resolve(dir, `${name}-%p`);
  return ['--tool=callgrind', '--smc-check=all-non-file', '--separate-threads=no', `--callgrind-out-file=${out}`, process.execPath];
}

/** Instructions of process `pid` since its counters were zeroed: dumps them (callgrind_control -d) into `dir` and reads the dump's totals. */
export function callgrindInstructions(dir: string, pid: number): number {
  execFileSync('callgrind_control', ['-d', `m${Date.now()}`, String(pid)], { stdio: 'ignore' });
  const abs = path.resolve(dir);
  const dumps = readdirSync(abs)
    .filter((f) => f.includes(`-${pid}.`))
    .sort();
  const last = dumps[dumps.length - 1]!;
  // The larger of summary and totals: a process started with --instr-atstart=no writes `summary: 0` and the counts in totals.
  const text = readFileSync(path.join(abs, last), 'utf8');
  const found = [...text.matchAll(/^(?:summary|totals): (\d+)/gm)].map((m) => Number(m[1]));
  if (found.length === 0) throw new Error(`no totals in ${last}`);
  return Math.max(...found);
}

/**
 * Ingestion benchmark (never part of the pass/fail suite):
 *
 *   npm run bench:ingest [-- --seconds 10 --connections 32 --warmup 2 --sync normal]
 *
 * Drives POST /api/events of svc with a realistic ~300-byte pageview over
 * keep-alive connections and, in the same run and with the same load, a bare
 * node:http server that answers 202 without storing anything. Prints
 * requests/s, p50/p99 latency and the ratio to the bare server for each
 * target, then checks that svc stored exactly as many events as it
 * acknowledged with 201. Target: svc >= 0.5x the bare server, every request
 * durably stored (synchronous=full).
 *
 * Targets (see lib/targets.ts): bare, svc-raw (node:http fast path),
 * svc-express (same handler through express, to measure what the framework
 * costs) and with --sync normal also svc-raw-normal.
 *
 * The load generator runs in its own process (lib/load.ts). Exit status: 0
 * whatever the figures; 1 when a server fails to start, a load run fails, or
 * the stored count differs from the acknowledged count.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ChildRegistry, processCpuMs } from './lib/child.js';
import { runLoadInChild, type LoadResult } from './lib/load.js';
import { ingestTargets, removeTree, type StartedTarget, type Target } from './lib/targets.js';
import { UsageError, intFlag } from './lib/args.js';

const HELP = `usage: npm run bench:ingest -- [options]
  --seconds N        measured window per target (default 10, max 600)
  --warmup N         warm-up before the window, seconds (default 2, max 120)
  --connections N    keep-alive connections, one request in flight each (default 32, max 1024)
  --max-requests N   stop a target's run after N requests (default 2000000)
  --sessions N       distinct session_ids the events rotate through (default 10000)
  --sync normal      also run svc with SVC_SQLITE_SYNCHRONOUS=normal
  --only a,b         run only these targets (bare, svc-raw, svc-express, svc-raw-normal)
  --keep             keep the temporary data directories
  -h, --help         this text`;

interface Row {
  target: Target;
  result?: LoadResult;
  serverCpuPercent?: number | null;
  stored?: number;
  acknowledged?: number;
  failure?: string;
  notes: string[];
}

function parse(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    options: {
      seconds: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string' },
      'max-requests': { type: 'string' },
      sessions: { type: 'string' },
      sync: { type: 'string' },
      only: { type: 'string' },
      keep: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.sync !== undefined && values.sync !== 'normal' && values.sync !== 'full') {
    throw new UsageError(`--sync must be normal or full, got ${JSON.stringify(values.sync)}`);
  }
  return {
    help: values.help,
    seconds: intFlag('seconds', values.seconds, 10, 1, 600),
    warmup: intFlag('warmup', values.warmup, 2, 0, 120),
    connections: intFlag('connections', values.connections, 32, 1, 1024),
    maxRequests: intFlag('max-requests', values['max-requests'], 2_000_000, 1, 100_000_000),
    sessions: intFlag('sessions', values.sessions, 10_000, 1, 1_000_000),
    sync: (values.sync ?? 'full') as 'full' | 'normal',
    only: values.only?.split(',').map((s) => s.trim()).filter(Boolean),
    keep: values.keep,
  };
}

const fmt = {
  int: (n: number) => Math.round(n).toLocaleString('en-US'),
  ms: (us: number) => (us / 1000).toFixed(2),
  pct: (n: number | null | undefined) => (n === null || n === undefined ? '-' : `${Math.round(n)}%`),
};

function table(rows: string[][], right: boolean[]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows
    .map((r) => r.map((c, i) => (right[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd())
    .join('\n');
}

async function main(): Promise<number> {
  let opts: ReturnType<typeof parse>;
  try {
    opts = parse(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`bench:ingest: ${(err as Error).message}\n${HELP}\n`);
    return 2;
  }
  if (opts.help) {
    process.stdout.write(`${HELP}\n`);
    return 0;
  }

  const registry = new ChildRegistry();
  const tmpRoot = mkdtempSync(path.join(os.tmpdir(), 'svc-bench-ingest-'));
  const cleanup = () => {
    registry.killAll('SIGKILL');
    if (!opts.keep) removeTree(tmpRoot);
  };
  process.once('exit', cleanup);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(sig, () => {
      process.stderr.write(`\nbench:ingest: ${sig}, stopping every child process\n`);
      process.exit(130);
    });
  }

  let targets = ingestTargets({ sync: opts.sync });
  if (opts.only) {
    const known = new Set(targets.map((t) => t.name));
    const unknown = opts.only.filter((n) => !known.has(n) && !(n === 'svc-raw-normal'));
    if (unknown.length) {
      process.stderr.write(`bench:ingest: unknown target(s) ${unknown.join(', ')}; known: ${[...known].join(', ')}, svc-raw-normal\n`);
      return 2;
    }
    if (opts.only.includes('svc-raw-normal')) targets = ingestTargets({ sync: 'normal' });
    targets = targets.filter((t) => opts.only!.includes(t.name));
  }

  const log = (line: string) => process.stdout.write(`${line}\n`);
  log(
    `bench:ingest  node ${process.version}, ${os.cpus().length} CPU(s) (${os.cpus()[0]?.model.trim() ?? '?'}), ${os.platform()} ${os.release()}`,
  );
  log(
    `load: ${opts.connections} keep-alive connections, pipelining 1, warm-up ${opts.warmup} s, window ${opts.seconds} s, ` +
      `max ${fmt.int(opts.maxRequests)} requests, ${fmt.int(opts.sessions)} sessions; generator in its own process`,
  );
  log(`data: ${tmpRoot}${opts.keep ? ' (kept)' : ' (removed at exit)'}`);

  const rows: Row[] = [];
  for (const target of targets) {
    const row: Row = { target, notes: [] };
    rows.push(row);
    log(`\n[${target.name}] ${target.description} (host load average ${os.loadavg()[0]!.toFixed(2)})`);
    let started: StartedTarget;
    try {
      started = await target.setup({ registry, tmpRoot, log });
    } catch (err) {
      row.failure = `failed to start: ${(err as Error).message}`;
      log(`  ${row.failure}`);
      continue;
    }
    let cpuAtStart: number | null = null;
    let cpuWindowStart = 0;
    try {
      row.result = await runLoadInChild(
        registry,
        {
          origin: started.url,
          path: started.path,
          siteId: started.siteId,
          connections: opts.connections,
          warmupSeconds: opts.warmup,
          seconds: opts.seconds,
          maxRequests: opts.maxRequests,
          sessions: opts.sessions,
          drainSeconds: 30,
        },
        (phase) => {
          const now = performance.now();
          if (phase === 'measure') {
            cpuAtStart = processCpuMs(started.pid);
            cpuWindowStart = now;
          } else {
            const cpu = processCpuMs(started.pid);
            row.serverCpuPercent = cpu !== null && cpuAtStart !== null ? ((cpu - cpuAtStart) / (now - cpuWindowStart)) * 100 : null;
          }
        },
      );
    } catch (err) {
      row.failure = `load run failed: ${(err as Error).message}`;
    }
    const stopNote = await started.stop();
    if (stopNote) row.notes.push(`server ${stopNote}`);
    if (started.stderr && started.stderr.errorLines > 0) {
      row.notes.push(`server logged ${started.stderr.errorLines} error line(s); last: ${started.stderr.lastLines(3)}`);
    }
    const r = row.result;
    if (r) {
      const statuses = Object.entries(r.statuses)
        .map(([s, n]) => `${s}: ${fmt.int(n)}`)
        .join(', ');
      log(
        `  body ${r.bodyBytes} bytes; ${fmt.int(r.measuredRequests)} requests in ${r.measuredSeconds.toFixed(2)} s ` +
          `(stopped by ${r.stoppedBy}); whole run: sent ${fmt.int(r.sent)}, answered ${fmt.int(r.completed)} {${statuses}}, ` +
          `errors ${r.errors}, unfinished ${r.unfinished}`,
      );
      log(
        `  latency ms: min ${fmt.ms(r.latency.minUs)} p50 ${fmt.ms(r.latency.p50Us)} p90 ${fmt.ms(r.latency.p90Us)} ` +
          `p99 ${fmt.ms(r.latency.p99Us)} p99.9 ${fmt.ms(r.latency.p999Us)} max ${fmt.ms(r.latency.maxUs)}; ` +
          `CPU: server ${fmt.pct(row.serverCpuPercent)}, generator ${fmt.pct(r.generatorCpuPercent)} of one core`,
      );
      if (r.firstError) row.notes.push(`first error: ${r.firstError}`);
      if (r.firstNon2xx) row.notes.push(`first non-2xx: ${r.firstNon2xx}`);
      if (started.countStored && !row.failure) {
        row.acknowledged = r.statuses[started.ackStatus] ?? 0;
        try {
          row.stored = await started.countStored();
          log(`  stored ${fmt.int(row.stored)} of ${fmt.int(row.acknowledged)} acknowledged`);
          if (r.unfinished > 0) {
            row.failure = `${r.unfinished} request(s) still unanswered after the drain; the stored count cannot be checked`;
          } else if (row.stored !== row.acknowledged) {
            row.failure = `MISMATCH: stored ${row.stored} events but acknowledged ${row.acknowledged} with ${started.ackStatus}`;
          }
        } catch (err) {
          row.failure = `could not count stored events: ${(err as Error).message}`;
        }
      }
    }
    for (const n of row.notes) log(`  note: ${n}`);
    if (row.failure) log(`  FAILED: ${row.failure}`);
  }

  const bare = rows.find((r) => r.target.name === 'bare')?.result;
  const header = ['target', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'non-2xx', 'ratio vs bare', 'server CPU', 'gen CPU', 'stored/acked'];
  const lines: string[][] = [header];
  for (const row of rows) {
    const r = row.result;
    if (!r) {
      lines.push([row.target.name, 'FAILED', '-', '-', '-', '-', '-', '-', '-', '-']);
      continue;
    }
    lines.push([
      row.target.name,
      fmt.int(r.rps),
      fmt.ms(r.latency.p50Us),
      fmt.ms(r.latency.p99Us),
      String(r.errors),
      String(r.non2xx),
      bare && bare.rps > 0 ? (r.rps / bare.rps).toFixed(2) : '-',
      fmt.pct(row.serverCpuPercent),
      fmt.pct(r.generatorCpuPercent),
      row.stored !== undefined ? `${row.stored}/${row.acknowledged}` : '-',
    ]);
  }
  log('');
  log(table(lines, [false, true, true, true, true, true, true, true, true, true]));

  const raw = rows.find((r) => r.target.name === 'svc-raw')?.result;
  const viaExpress = rows.find((r) => r.target.name === 'svc-express')?.result;
  if (raw && viaExpress && raw.rps > 0) {
    log(`\nsvc-express / svc-raw throughput: ${(viaExpress.rps / raw.rps).toFixed(2)} (what express in front of the same ingestion handler costs)`);
  }
  if (raw && bare && bare.rps > 0) {
    log(`target svc-raw >= 0.50 x bare: ${(raw.rps / bare.rps).toFixed(2)} (${raw.rps / bare.rps >= 0.5 ? 'met' : 'NOT met'}; informational, never fails the run)`);
  }

  const failed = rows.filter((r) => r.failure);
  if (failed.length) {
    log(`\n${failed.length} target(s) failed: ${failed.map((r) => `${r.target.name} (${r.failure})`).join('; ')}`);
    return 1;
  }
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`bench:ingest: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);

/**
 * Ingestion benchmark (never part of the pass/fail suite):
 *
 *   npm run bench:ingest [-- --seconds 10 --connections 32 --warmup 2 --sync normal]
 *   npm run bench:ingest -- --database-url postgres://user@127.0.0.1:5432/db
 *
 * Drives POST /api/events of svc with a realistic ~300-byte pageview over
 * keep-alive connections and, in the same run and with the same load, a bare
 * node:http server that answers 202 without storing anything. Prints
 * requests/s, p50/p99 latency and the ratio to the bare server for each
 * target, then checks that svc stored exactly as many events as it
 * acknowledged with 201. Target: svc >= 0.5x the bare server, every request
 * durably stored (synchronous=full).
 *
 * Targets (see lib/targets.ts): bare, bare-store (node:http that durably
 * inserts one row into svc's events table with svc's group commit and fsync:
 * the storing baseline, target svc-raw >= 0.8x), svc-raw (node:http fast path),
 * svc-express (same handler through express, to measure what the framework
 * costs) and with --sync normal also svc-raw-normal, all on SQLite. With
 * --database-url also, in the same run, bare-store-pg (bare node:http inserting
 * one row a request into svc's own PostgreSQL events table, one set-based
 * statement a group, two groups in flight: the floor of storing an event on
 * PostgreSQL, server and backend CPU), svc-pg (svc on PostgreSQL, one
 * instance) and svc-pg-2x (two `svc serve` on the same schema and data
 * directory; the generator assigns its connections to the two round-robin,
 * as a load balancer would, and reports the share each answered). Each
 * PostgreSQL target gets a fresh schema bench_<pid>_<target> through svc's
 * `schema` URL parameter (any schema the URL names is replaced), dropped with
 * DROP SCHEMA ... CASCADE once its events are counted (kept with --keep).
 * The stored == acknowledged check holds for every target (svc stats --json
 * on the target's own storage). Server CPU is the sum over the target's svc
 * processes; for a PostgreSQL server on this host, pg CPU is what the
 * backends serving svc's connections used (found by their client ports), and
 * the host's busy share of all cores is printed for every target. Without
 * --database-url the targets are the SQLite ones only, as before.
 *
 * The load generator runs in its own process (lib/load.ts). Exit status: 0
 * whatever the figures; 1 when a server fails to start, a load run fails, or
 * the stored count differs from the acknowledged count (also when
 * PostgreSQL is unreachable at start).
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ChildRegistry, GroupCpu, hostCpuPercent, hostCpuTicks, processCpuMs } from './lib/child.js';
import { runLoadInChild, type LoadResult } from './lib/load.js';
import { BenchSchemas, databaseUrlError, redact } from './lib/pg.js';
import { localPgPort, pgBackendPids } from './lib/sockets.js';
import { ingestTargets, removeTree, type StartedTarget, type Target } from './lib/targets.js';
import { UsageError, intFlag } from './lib/args.js';

const PG_TARGETS = ['bare-store-pg', 'svc-pg', 'svc-pg-2x'];

const HELP = `usage: npm run bench:ingest -- [options]
  --seconds N        measured window per target (default 10, max 600)
  --warmup N         warm-up before the window, seconds (default 2, max 120)
  --connections N    keep-alive connections, one request in flight each (default 32, max 1024)
  --max-requests N   stop a target's run after N requests (default 2000000)
  --sessions N       distinct session_ids the events rotate through (default 10000)
  --sync normal      also run svc with SVC_SQLITE_SYNCHRONOUS=normal
  --database-url URL also run on PostgreSQL (postgres://user@host:5432/db): bare-store-pg (the storing
                     baseline there: one unnest INSERT a group into svc's events table), svc-pg, one instance,
                     and svc-pg-2x, two instances on one database with the connections split between
                     them round-robin; each target on a fresh schema bench_<pid>_<target>, dropped
                     at the end (SVC_DATABASE_URL is not read: give the flag)
  --only a,b         run only these targets (bare, bare-store, svc-raw, svc-express, svc-raw-normal,
                     and with --database-url bare-store-pg, svc-pg, svc-pg-2x)
  --keep             keep the temporary data directories (and the PostgreSQL schemas)
  -h, --help         this text
SVC_DATABASE_POOL_SIZE (PostgreSQL connections per svc instance) is passed on to svc when set.`;

interface Row {
  target: Target;
  result?: LoadResult;
  serverCpuPercent?: number | null;
  pgCpuPercent?: number | null;
  hostCpuPercent?: number | null;
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
      'database-url': { type: 'string' },
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
  const databaseUrl = values['database-url'];
  if (databaseUrl !== undefined) {
    const bad = databaseUrlError(databaseUrl);
    if (bad) throw new UsageError(bad);
  }
  return {
    help: values.help,
    seconds: intFlag('seconds', values.seconds, 10, 1, 600),
    warmup: intFlag('warmup', values.warmup, 2, 0, 120),
    connections: intFlag('connections', values.connections, 32, 1, 1024),
    maxRequests: intFlag('max-requests', values['max-requests'], 2_000_000, 1, 100_000_000),
    sessions: intFlag('sessions', values.sessions, 10_000, 1, 1_000_000),
    sync: (values.sync ?? 'full') as 'full' | 'normal',
    databaseUrl,
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

  const schemas = opts.databaseUrl !== undefined ? new BenchSchemas(opts.databaseUrl, opts.keep) : null;
  const pgOption = schemas && opts.databaseUrl !== undefined ? { databaseUrl: opts.databaseUrl, schemas } : undefined;
  let targets = ingestTargets({ sync: opts.sync, pg: pgOption });
  if (opts.only) {
    const known = ingestTargets({ sync: 'normal', pg: pgOption }).map((t) => t.name);
    const unknown = opts.only.filter((n) => !known.includes(n));
    if (unknown.length) {
      const needUrl = unknown.filter((n) => PG_TARGETS.includes(n));
      process.stderr.write(
        needUrl.length === unknown.length
          ? `bench:ingest: ${needUrl.join(', ')} ${needUrl.length > 1 ? 'need' : 'needs'} --database-url\n`
          : `bench:ingest: unknown target(s) ${unknown.join(', ')}; known: ${known.join(', ')}${pgOption ? '' : `, and with --database-url ${PG_TARGETS.join(', ')}`}\n`,
      );
      return 2;
    }
    if (opts.only.includes('svc-raw-normal')) targets = ingestTargets({ sync: 'normal', pg: pgOption });
    targets = targets.filter((t) => opts.only!.includes(t.name));
  }

  const registry = new ChildRegistry();
  const tmpRoot = mkdtempSync(path.join(os.tmpdir(), 'svc-bench-ingest-'));
  const cleanup = () => {
    registry.killAll('SIGKILL');
    if (!opts.keep) removeTree(tmpRoot);
  };
  process.once('exit', cleanup);
  let stopping = false;
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(sig, () => {
      process.stderr.write(`\nbench:ingest: ${sig}, stopping every child process\n`);
      stopping = true;
      registry.killAll('SIGKILL');
      if (!schemas || schemas.remaining.length === 0) process.exit(130);
      // The schemas of this run go too (bounded: the process exits after 15 s whatever happens).
      setTimeout(() => process.exit(130), 15_000).unref();
      void schemas.dropAll().then(
        (notes) => {
          for (const n of notes) process.stderr.write(`bench:ingest: ${n}\n`);
          process.exit(130);
        },
        () => process.exit(130),
      );
    });
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
  if (schemas && opts.databaseUrl !== undefined) {
    try {
      const version = await schemas.check();
      log(
        `postgres: ${version} at ${redact(opts.databaseUrl)}; one schema per target (${schemas.namePrefix}_<target>), ` +
          `${opts.keep ? 'kept (--keep)' : 'dropped once the target is done'}${schemas.urlHadSchema ? '; the URL\'s own schema parameter is replaced' : ''}`,
      );
    } catch (err) {
      log(`bench:ingest: PostgreSQL at ${redact(opts.databaseUrl)} is not reachable: ${(err as Error).message}`);
      return 1;
    }
  }

  const rows: Row[] = [];
  for (const target of targets) {
    if (stopping) break;
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
    // CPU of the target: the sum over its processes, in % of one core.
    const serverCpuMs = () => {
      let total = 0;
      for (const pid of started.pids) {
        const ms = processCpuMs(pid);
        if (ms === null) return null;
        total += ms;
      }
      return started.pids.length ? total : null;
    };
    // PostgreSQL backends serving this target's connections (a server on this host only).
    const pgPort = PG_TARGETS.includes(target.name) && opts.databaseUrl !== undefined ? localPgPort(opts.databaseUrl) : null;
    const pgCpu = pgPort !== null ? new GroupCpu(() => pgBackendPids(started.pids, pgPort)) : null;
    let cpuAtStart: number | null = null;
    let hostAtStart: ReturnType<typeof hostCpuTicks> = null;
    let cpuWindowStart = 0;
    try {
      row.result = await runLoadInChild(
        registry,
        {
          origins: started.origins,
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
            cpuAtStart = serverCpuMs();
            hostAtStart = hostCpuTicks();
            pgCpu?.start();
            cpuWindowStart = now;
          } else {
            const cpu = serverCpuMs();
            row.serverCpuPercent = cpu !== null && cpuAtStart !== null ? ((cpu - cpuAtStart) / (now - cpuWindowStart)) * 100 : null;
            row.hostCpuPercent = hostCpuPercent(hostAtStart, hostCpuTicks());
            if (pgCpu) row.pgCpuPercent = pgCpu.end();
          }
        },
      );
    } catch (err) {
      row.failure = `load run failed: ${(err as Error).message}`;
    }
    const stopNote = await started.stop();
    if (stopNote) row.notes.push(`server ${stopNote}`);
    started.stderr.forEach((tail, i) => {
      if (tail.errorLines > 0) {
        const who = started.stderr.length > 1 ? `instance #${i + 1}` : 'server';
        row.notes.push(`${who} logged ${tail.errorLines} error line(s); last: ${tail.lastLines(3)}`);
      }
    });
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
          `CPU: server ${fmt.pct(row.serverCpuPercent)}${started.pids.length > 1 ? ` (sum of ${started.pids.length} processes)` : ''}, ` +
          `${pgCpu ? `PostgreSQL backends ${fmt.pct(row.pgCpuPercent)}, ` : ''}` +
          `generator ${fmt.pct(r.generatorCpuPercent)} of one core; host ${fmt.pct(row.hostCpuPercent)} of all ${os.cpus().length} cores busy`,
      );
      if (r.perOrigin.length > 1) {
        log(
          `  load spread (connections round-robin): ` +
            r.perOrigin
              .map(
                (o, i) =>
                  `#${i + 1} ${o.connections} conns, ${fmt.int(o.measuredRequests)} requests (${r.measuredRequests ? Math.round((o.measuredRequests / r.measuredRequests) * 100) : 0}%)`,
              )
              .join('; '),
        );
      }
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
    const disposeNote = await started.dispose?.();
    if (disposeNote) row.notes.push(disposeNote);
    for (const n of row.notes) log(`  note: ${n}`);
    if (row.failure) log(`  FAILED: ${row.failure}`);
  }
  if (schemas && !opts.keep) {
    for (const n of await schemas.dropAll()) log(`note: ${n}`);
  }

  const bare = rows.find((r) => r.target.name === 'bare')?.result;
  const bareStore = rows.find((r) => r.target.name === 'bare-store')?.result;
  const header = ['target', 'inst', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'non-2xx', 'ratio vs bare', 'vs bare-store', 'server CPU', 'pg CPU', 'gen CPU', 'host CPU', 'stored/acked'];
  const lines: string[][] = [header];
  for (const row of rows) {
    const r = row.result;
    if (!r) {
      lines.push([row.target.name, String(row.target.instances), 'FAILED', ...header.slice(3).map(() => '-')]);
      continue;
    }
    lines.push([
      row.target.name,
      String(row.target.instances),
      fmt.int(r.rps),
      fmt.ms(r.latency.p50Us),
      fmt.ms(r.latency.p99Us),
      String(r.errors),
      String(r.non2xx),
      bare && bare.rps > 0 ? (r.rps / bare.rps).toFixed(2) : '-',
      bareStore && bareStore.rps > 0 ? (r.rps / bareStore.rps).toFixed(2) : '-',
      fmt.pct(row.serverCpuPercent),
      fmt.pct(row.pgCpuPercent),
      fmt.pct(r.generatorCpuPercent),
      fmt.pct(row.hostCpuPercent),
      row.stored !== undefined ? `${row.stored}/${row.acknowledged}` : '-',
    ]);
  }
  log('');
  log(table(lines, header.map((_, i) => i > 0)));
  log(
    `server CPU: svc processes (summed), % of one core; pg CPU: the PostgreSQL backends serving them, % of one core; ` +
      `host CPU: all ${os.cpus().length} cores, every process of the host (other work included)`,
  );

  const rps = (name: string) => rows.find((r) => r.target.name === name)?.result?.rps;
  const raw = rps('svc-raw');
  const viaExpress = rps('svc-express');
  if (raw && viaExpress) {
    log(`\nsvc-express / svc-raw throughput: ${(viaExpress / raw).toFixed(2)} (what express in front of the same ingestion handler costs)`);
  }
  if (raw && bare && bare.rps > 0) {
    log(`target svc-raw >= 0.50 x bare: ${(raw / bare.rps).toFixed(2)} (${raw / bare.rps >= 0.5 ? 'met' : 'NOT met'}; informational, never fails the run)`);
  }
  if (raw && bareStore && bareStore.rps > 0) {
    const q = raw / bareStore.rps;
    log(`target svc-raw >= 0.80 x bare-store (same durable insert, group commit and fsync): ${q.toFixed(2)} (${q >= 0.8 ? 'met' : 'NOT met'}; informational)`);
  }
  const onPg = rps('svc-pg');
  const onPg2 = rps('svc-pg-2x');
  if (onPg && raw) log(`svc-pg / svc-raw (PostgreSQL / SQLite, one instance each): ${(onPg / raw).toFixed(2)}`);
  const barePg = rps('bare-store-pg');
  if (barePg && raw) log(`bare-store-pg / svc-raw (the storing floor on PostgreSQL / svc on SQLite): ${(barePg / raw).toFixed(2)}`);
  if (barePg && onPg) log(`svc-pg / bare-store-pg (svc on PostgreSQL / the storing floor there): ${(onPg / barePg).toFixed(2)}`);
  if (onPg2 && raw) log(`svc-pg-2x / svc-raw (two instances on PostgreSQL / one on SQLite): ${(onPg2 / raw).toFixed(2)}`);
  if (onPg2 && onPg) {
    log(
      `svc-pg-2x / svc-pg (two instances on one database / one): ${(onPg2 / onPg).toFixed(2)} ` +
        `(the instances, the generator and PostgreSQL share this host's ${os.cpus().length} core(s): see host CPU)`,
    );
  }

  // CPU per acknowledged event over the window: % of one core / requests per second = core-µs per request.
  const perEvent = (pct: number | null | undefined, r: LoadResult | undefined) =>
    pct !== null && pct !== undefined && r && r.rps > 0 ? (pct / 100) * 1e6 / r.rps : null;
  const cpuLines: string[][] = [['target', 'svc µs/event', 'pg µs/event', 'svc+pg µs/event']];
  const cpuOf = new Map<string, number>();
  for (const row of rows) {
    const svcUs = perEvent(row.serverCpuPercent, row.result);
    if (svcUs === null) continue;
    const pgUs = perEvent(row.pgCpuPercent, row.result);
    const sum = svcUs + (pgUs ?? 0);
    cpuOf.set(row.target.name, sum);
    cpuLines.push([row.target.name, svcUs.toFixed(0), pgUs === null ? '-' : pgUs.toFixed(0), sum.toFixed(0)]);
  }
  if (cpuLines.length > 1) {
    log('');
    log(table(cpuLines, cpuLines[0]!.map((_, i) => i > 0)));
    const base = cpuOf.get('svc-raw');
    for (const name of PG_TARGETS) {
      const v = cpuOf.get(name);
      if (v !== undefined && base) log(`CPU per event ${name} (svc + PostgreSQL backends) / svc-raw: ${(v / base).toFixed(2)}`);
    }
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

/**
 * Load generator of the ingestion benchmark. It runs in its own process (the
 * server under test must not share its event loop) and is driven over IPC:
 * the orchestrator forks this file, sends one `start` message with the
 * options, gets `phase` messages as the run moves from warm-up to the
 * measured window to the drain, and one `result` (or `error`) message.
 *
 * Requests go through undici Pools: N keep-alive connections, pipelining 1,
 * one request in flight per connection. With several origins (several svc
 * instances on one database) the connections are assigned to them
 * round-robin, as a load balancer would: connection i goes to origin
 * i mod (number of origins), one Pool per origin. The run is bounded in time
 * (warm-up + measured window + a bounded drain) and in requests
 * (--max-requests).
 */
import { fork } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { realpathSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { Pool } from 'undici';
import { originPools } from './origin-pools.js';
import { Histogram, type HistogramSummary } from './histogram.js';
import { buildEventBodies } from './event.js';
import type { ChildRegistry } from './child.js';

export interface LoadOptions {
  /** Origins of the server's instances, e.g. [http://127.0.0.1:8787]; connections are assigned to them round-robin. */
  origins: string[];
  path: string;
  siteId: string;
  connections: number;
  warmupSeconds: number;
  seconds: number;
  maxRequests: number;
  sessions: number;
  /** Longest wait for in-flight requests after the window closes. */
  drainSeconds: number;
}

export interface LoadResult {
  bodyBytes: number;
  connections: number;
  /** Length of the measured window, in seconds (shorter when --max-requests stopped the run). */
  measuredSeconds: number;
  /** Responses completed inside the measured window. */
  measuredRequests: number;
  rps: number;
  latency: HistogramSummary;
  /** Over the whole run (warm-up, window and drain). */
  sent: number;
  completed: number;
  errors: number;
  non2xx: number;
  statuses: Record<string, number>;
  /** Requests still unanswered when the drain gave up (0 on a clean run). */
  unfinished: number;
  stoppedBy: 'time' | 'max-requests';
  firstError: string | null;
  firstNon2xx: string | null;
  /** CPU the generator used during the measured window, in % of one core. */
  generatorCpuPercent: number;
  /** Per origin (same order as `origins`): its connections and the responses it completed inside the measured window. */
  perOrigin: { origin: string; connections: number; measuredRequests: number }[];
}

type ToChild = { type: 'start'; options: LoadOptions };
export type FromChild =
  | { type: 'ready' }
  | { type: 'phase'; phase: 'measure' | 'drain' }
  | { type: 'result'; result: LoadResult }
  | { type: 'error'; message: string };

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Resolves with `value` after `ms`, or with whatever `other` settles to first; the timer never outlives the race. */
async function raceTimer<T, U>(ms: number, value: T, other: Promise<U>): Promise<T | U> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([new Promise<T>((r) => (timer = setTimeout(() => r(value), ms))), other]);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs the load in this process. */
export async function runLoad(opts: LoadOptions, onPhase: (phase: 'measure' | 'drain') => void = () => {}): Promise<LoadResult> {
  const { bodies, bytes } = buildEventBodies(opts.siteId, opts.sessions);
  const { pools, share } = originPools(opts.origins, opts.connections);
  const perOrigin = opts.origins.map((origin, k) => ({ origin, connections: share(k), measuredRequests: 0 }));
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) svc-bench/1.0',
  };
  const hist = new Histogram();
  const statuses: Record<string, number> = {};
  let sent = 0;
  let completed = 0;
  let inFlight = 0;
  let errors = 0;
  let non2xx = 0;
  let firstError: string | null = null;
  let firstNon2xx: string | null = null;
  let stopped = false;
  let measuring = false;
  let measureStart = 0;
  let measuredRequests = 0;

  const worker = async (k: number) => {
    const pool = pools[k]!;
    const counts = perOrigin[k]!;
    while (!stopped && sent < opts.maxRequests) {
      const body = bodies[sent % bodies.length]!;
      sent++;
      inFlight++;
      const t0 = performance.now();
      try {
        const res = await pool.request({ method: 'POST', path: opts.path, headers, body });
        if (res.statusCode >= 200 && res.statusCode < 300) {
          await res.body.dump();
        } else {
          const text = await res.body.text();
          non2xx++;
          firstNon2xx ??= `${res.statusCode} ${text.slice(0, 500)}`;
        }
        const t1 = performance.now();
        statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
        completed++;
        if (measuring && t0 >= measureStart) {
          hist.record((t1 - t0) * 1000);
          measuredRequests++;
          counts.measuredRequests++;
        }
      } catch (err) {
        errors++;
        firstError ??= `${(err as Error).name}: ${(err as Error).message} ${(err as { code?: string }).code ?? ''}`.trim();
        // A dead or refusing server must not turn this into a hot loop.
        await sleep(20);
      } finally {
        inFlight--;
      }
    }
  };

  const workers = Array.from({ length: opts.connections }, (_, i) => worker(i % opts.origins.length));
  const allDone = Promise.all(workers).then(() => 'done' as const);

  const warmup = await raceTimer(opts.warmupSeconds * 1000, 'time' as const, allDone);
  measuring = true;
  measureStart = performance.now();
  const cpu0 = process.cpuUsage();
  onPhase('measure');
  let end: 'time' | 'done' = warmup;
  if (warmup === 'time') {
    end = await raceTimer(opts.seconds * 1000, 'time' as const, allDone);
  }
  const measureEnd = performance.now();
  measuring = false;
  stopped = true;
  const cpu = process.cpuUsage(cpu0);
  onPhase('drain');

  const drained = (await raceTimer(opts.drainSeconds * 1000, 'timeout' as const, allDone)) === 'done';
  const unfinished = drained ? 0 : inFlight;
  const live = pools.filter((p): p is Pool => p !== null);
  if (drained) await Promise.all(live.map((p) => p.close()));
  else await Promise.all(live.map((p) => p.destroy()));

  const measuredSeconds = (measureEnd - measureStart) / 1000;
  return {
    bodyBytes: bytes,
    connections: opts.connections,
    measuredSeconds,
    measuredRequests,
    rps: measuredSeconds > 0 ? measuredRequests / measuredSeconds : 0,
    latency: hist.summary(),
    sent,
    completed,
    errors,
    non2xx,
    statuses,
    unfinished,
    stoppedBy: end === 'time' ? 'time' : 'max-requests',
    firstError,
    firstNon2xx,
    generatorCpuPercent: measuredSeconds > 0 ? ((cpu.user + cpu.system) / 1000 / (measureEnd - measureStart)) * 100 : 0,
    perOrigin,
  };
}

const registerHref = pathToFileURL(fileURLToPath(new URL('../register.mjs', import.meta.url))).href;
const thisFile = fileURLToPath(import.meta.url);

/**
 * Runs the load in a forked child process and resolves with its result.
 * `onPhase` is called when the measured window opens and closes, for CPU
 * sampling of the server. Bounded: the child is killed if it has not answered
 * within warm-up + window + drain + 60 s.
 */
export function runLoadInChild(
  registry: ChildRegistry,
  opts: LoadOptions,
  onPhase: (phase: 'measure' | 'drain') => void = () => {},
): Promise<LoadResult> {
  const child = registry.add(
    fork(thisFile, [], { execArgv: ['--import', registerHref], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
  );
  const limitMs = (opts.warmupSeconds + opts.seconds + opts.drainSeconds + 60) * 1000;
  return new Promise<LoadResult>((resolve, reject) => {
    let settled = false;
    const finish = (err: Error | null, result?: LoadResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (child.connected) child.disconnect();
      if (child.exitCode === null && child.signalCode === null) setTimeout(() => child.kill('SIGKILL'), 2_000).unref();
      if (err) reject(err);
      else resolve(result!);
    };
    const timer = setTimeout(() => finish(new Error(`load generator gave no result within ${limitMs} ms`)), limitMs);
    child.on('message', (m: FromChild) => {
      if (m.type === 'ready') child.send({ type: 'start', options: opts } satisfies ToChild);
      else if (m.type === 'phase') onPhase(m.phase);
      else if (m.type === 'result') finish(null, m.result);
      else if (m.type === 'error') finish(new Error(`load generator: ${m.message}`));
    });
    child.once('error', (err) => finish(err));
    child.once('exit', (code, signal) => finish(new Error(`load generator exited without a result (code ${code}, signal ${signal})`)));
  });
}

function isMain(): boolean {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === realpathSync(thisFile);
  } catch {
    return false;
  }
}

if (isMain() && process.send) {
  const send = (m: FromChild) => process.send!(m);
  process.on('disconnect', () => process.exit(0));
  process.once('message', (m: ToChild) => {
    if (m.type !== 'start') return;
    const o = m.options;
    setTimeout(() => process.exit(3), (o.warmupSeconds + o.seconds + o.drainSeconds + 30) * 1000).unref();
    runLoad(o, (phase) => send({ type: 'phase', phase })).then(
      (result) => send({ type: 'result', result }),
      (err: unknown) => send({ type: 'error', message: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
    );
  });
  send({ type: 'ready' });
}

/**
 * The closed-loop load of the HTTP benchmarks: `connections` workers, one
 * request in flight each, for a warm-up and then a measured window (or until
 * `maxRequests` are sent). `send(i)` makes request i and resolves with null
 * for a good answer or a text saying what was wrong with it; a rejection is a
 * transport error. Every answered request started inside the window counts in
 * the latency and the rate. With `pid`, the CPU that process used during the
 * window is reported too.
 */
import { Histogram, type HistogramSummary } from './histogram.js';
import { processCpuMs } from './child.js';

export interface ClosedLoopOptions {
  connections: number;
  warmupSeconds: number;
  seconds: number;
  maxRequests: number;
  /** A server process whose CPU over the window is reported. */
  pid?: number | undefined;
  /** Called when the measured window opens and when it closes (other CPU readings over the same window). */
  onWindow?: ((phase: 'start' | 'end') => void) | undefined;
}

export interface ClosedLoopResult {
  seconds: number;
  /** Answers to requests started inside the window. */
  requests: number;
  rps: number;
  latency: HistogramSummary;
  /** Good answers over the whole run. */
  ok: number;
  /** Answers `send` called wrong. */
  wrong: number;
  /** Transport errors. */
  errors: number;
  firstProblem: string | null;
  serverCpuPercent: number | null;
}

export async function closedLoop(o: ClosedLoopOptions, send: (i: number) => Promise<string | null>): Promise<ClosedLoopResult> {
  const hist = new Histogram();
  let sent = 0;
  let ok = 0;
  let wrong = 0;
  let errors = 0;
  let measured = 0;
  let firstProblem: string | null = null;
  let measuring = false;
  let stop = false;
  let measureStart = 0;
  const worker = async () => {
    while (!stop && sent < o.maxRequests) {
      const i = sent++;
      const t0 = performance.now();
      try {
        const problem = await send(i);
        if (problem === null) ok++;
        else {
          wrong++;
          firstProblem ??= problem.slice(0, 300);
        }
        if (measuring && t0 >= measureStart) {
          hist.record((performance.now() - t0) * 1000);
          measured++;
        }
      } catch (err) {
        errors++;
        firstProblem ??= (err as Error).message;
        await new Promise((r) => setTimeout(r, 20)); // a dead server must not turn this into a hot loop
      }
    }
  };
  const finished = Promise.all(Array.from({ length: o.connections }, () => worker()));
  await Promise.race([new Promise((r) => setTimeout(r, o.warmupSeconds * 1000)), finished]);
  measuring = true;
  measureStart = performance.now();
  const cpuStart = processCpuMs(o.pid);
  o.onWindow?.('start');
  await Promise.race([new Promise((r) => setTimeout(r, o.seconds * 1000)), finished]);
  const elapsed = (performance.now() - measureStart) / 1000;
  const cpuEnd = processCpuMs(o.pid);
  o.onWindow?.('end');
  measuring = false;
  stop = true;
  await Promise.race([finished, new Promise((r) => setTimeout(r, 10_000))]);
  return {
    seconds: elapsed,
    requests: measured,
    rps: elapsed > 0 ? measured / elapsed : 0,
    latency: hist.summary(),
    ok,
    wrong,
    errors,
    firstProblem,
    serverCpuPercent: cpuStart !== null && cpuEnd !== null && elapsed > 0 ? ((cpuEnd - cpuStart) / (elapsed * 1000)) * 100 : null,
  };
}

/**
 * Load generator of the webhook delivery benchmark, in its own process
 * (driven over IPC, see lib/ipc.ts). Two jobs:
 *
 * - `post`: the baseline. A bare undici POST loop straight to the receiver,
 *   `concurrency` requests in flight through one undici Agent with the same
 *   connection cap svc's delivery dispatcher uses (concurrency x 4), with a
 *   body and headers of the size svc sends (static signature, no per-request
 *   HMAC and no abort timer: the transport alone).
 * - `ingest`: POST /api/events pageviews to svc, each with a unique sequence
 *   number, over `connections` keep-alive connections; closed loop (as fast
 *   as svc answers) or paced at `rate` events/s. With several origins
 *   (several svc instances on one database) connection i goes to origin
 *   i mod (number of origins), one Pool per origin, as a load balancer would. It records when each event
 *   was acknowledged (201), as epoch ms, so the orchestrator can match it
 *   with its arrival at the receiver.
 *
 * Both are bounded in time (warm-up + window + bounded drain) and in requests.
 */
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Agent, request, type Dispatcher, type Pool } from 'undici';
import { originPools } from './origin-pools.js';
import { Histogram, type HistogramSummary } from './histogram.js';
import { isEntryPoint, serveRequests } from './ipc.js';
import { deliveryLikeBody, pageviewBody } from './webhook-event.js';
import { DurableLog, svcTableSchema } from './durable-log.js';

const INSERT_HEALTH = `INSERT INTO health_log (site_id, integration, destination_id, delivery_id, event_type, kind, attempt, ok, status, latency_ms, error_class, message, response_excerpt, created_at)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`;

export interface PostJob {
  type: 'post';
  /** Full URL of the receiver, e.g. http://127.0.0.1:41234/hook. */
  url: string;
  siteId: string;
  concurrency: number;
  /** Connection cap of the undici Agent. */
  connections: number;
  warmupSeconds: number;
  seconds: number;
  maxRequests: number;
  seqBase: number;
  sessions: number;
  drainSeconds: number;
  /**
   * The storing baseline: a directory where each outcome is recorded durably (one row in a table with svc's
   * health_log columns and indexes, group commit and WAL fsync, lib/durable-log.ts). As in svc's sender, the
   * slot sends again once the receiver answered; the run ends only when every outcome is on disk.
   */
  recordDir?: string;
}

export interface IngestJob {
  type: 'ingest';
  /** Origins of svc's instances, e.g. [http://127.0.0.1:8787]; connections are assigned to them round-robin. */
  origins: string[];
  siteId: string;
  connections: number;
  /** Events per second; 0 = closed loop (next request as soon as one is answered). */
  rate: number;
  seconds: number;
  maxRequests: number;
  seqBase: number;
  sessions: number;
  /** Return the acknowledgement time of every event. */
  recordAcks: boolean;
  drainSeconds: number;
}

export interface JobResult {
  bodyBytes: number;
  /** Epoch ms of the measured window (after the warm-up). */
  windowStart: number;
  windowEnd: number;
  measuredSeconds: number;
  /** 2xx answers to requests started inside the window. */
  measured: number;
  /** measured / measuredSeconds. */
  rate: number;
  /** Round trip of the measured requests. */
  latency: HistogramSummary;
  sent: number;
  /** 2xx answers over the whole run. */
  ok: number;
  errors: number;
  non2xx: number;
  statuses: Record<string, number>;
  unfinished: number;
  stoppedBy: 'time' | 'max-requests';
  firstError: string | null;
  firstNon2xx: string | null;
  /** CPU of this process during the window, % of one core. */
  cpuPercent: number;
  /** ingest with recordAcks: per event (index = seq - seqBase, length = sent), epoch ms of the 201, -1 when not acknowledged. */
  acks?: number[];
  /** Sequence numbers sent but not acknowledged with 2xx (at most 10,000). */
  unacknowledged: number[];
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function raceTimer<T, U>(ms: number, value: T, other: Promise<U>): Promise<T | U> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([new Promise<T>((r) => (timer = setTimeout(() => r(value), ms))), other]);
  } finally {
    clearTimeout(timer);
  }
}

export async function runJob(job: PostJob | IngestJob): Promise<JobResult> {
  const isPost = job.type === 'post';
  const workers = isPost ? job.concurrency : job.connections;
  const warmupSeconds = isPost ? job.warmupSeconds : 0;
  const rate = isPost ? 0 : job.rate;
  let send: (seq: number, worker: number) => Promise<Dispatcher.ResponseData>;
  let dispatchers: Dispatcher[];
  let bodyBytes = 0;
  let recorder: DurableLog | null = null;
  let recorded = 0;
  let recordError: string | null = null;
  if (job.type === 'post' && job.recordDir) {
    recorder = new DurableLog(path.join(job.recordDir, 'outcomes.db'), svcTableSchema(job.recordDir, 'health_log'), INSERT_HEALTH);
  }
  const siteId = job.siteId;
  if (job.type === 'post') {
    const url = new URL(job.url);
    const agent = new Agent({ connections: job.connections, connect: { timeout: 5_000 }, keepAliveTimeout: 60_000 });
    dispatchers = [agent];
    // The headers svc's sender sets, with values of the same sizes.
    const baseHeaders = {
      'content-type': 'application/json',
      'user-agent': 'svc-webhooks/0.1.0 (+https://www.npmjs.com/package/@svc-hq/svc)',
      'x-svc-signature': 'a'.repeat(64),
      'x-svc-event': 'pageview',
    };
    send = (seq) => {
      const body = deliveryLikeBody(job.siteId, seq, job.sessions);
      bodyBytes ||= body.length;
      return request(url, {
        method: 'POST',
        dispatcher: agent,
        headers: { ...baseHeaders, 'x-svc-delivery': `dlv_bench${String(seq).padStart(20, '0')}` },
        body,
      });
    };
  } else {
    const n = job.origins.length;
    // Worker (connection) i goes to origin i mod n.
    const { pools } = originPools(job.origins, job.connections);
    dispatchers = pools.filter((p): p is Pool => p !== null);
    const headers = { 'content-type': 'application/json', 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) svc-bench/1.0' };
    send = (seq, worker) => {
      const body = pageviewBody(job.siteId, seq, job.sessions);
      bodyBytes ||= body.length;
      return pools[worker % n]!.request({ method: 'POST', path: '/api/events', headers, body });
    };
  }

  const acks: number[] | null = job.type === 'ingest' && job.recordAcks ? [] : null;
  const unacknowledged: number[] = [];
  const hist = new Histogram();
  const statuses: Record<string, number> = {};
  let sent = 0;
  let ok = 0;
  let inFlight = 0;
  let errors = 0;
  let non2xx = 0;
  let firstError: string | null = null;
  let firstNon2xx: string | null = null;
  let stopped = false;
  let measuring = false;
  let measureStart = 0;
  let measured = 0;
  const t0 = performance.now();

  const worker = async (w: number) => {
    while (!stopped && sent < job.maxRequests) {
      if (rate > 0) {
        // Paced: wait for the due time of the next event, then look again (another worker may have taken it).
        const wait = t0 + (sent * 1000) / rate - performance.now();
        if (wait > 1) {
          await sleep(wait);
          continue;
        }
      }
      const i = sent++;
      const seq = job.seqBase + i;
      if (acks) acks[i] = -1;
      inFlight++;
      const started = performance.now();
      let good = false;
      try {
        const res = await send(seq, w);
        const answered = performance.now();
        if (res.statusCode >= 200 && res.statusCode < 300) {
          good = true;
          if (acks) acks[i] = performance.timeOrigin + answered;
          await res.body.dump();
        } else {
          const text = await res.body.text();
          non2xx++;
          firstNon2xx ??= `${res.statusCode} ${text.slice(0, 500)}`;
        }
        statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
        if (recorder) {
          const now = Date.now();
          const latencyMs = Math.round(performance.now() - started);
          const delivery = `dlv_bench${String(seq).padStart(20, '0')}`;
          // As svc's sender: the slot is free once the receiver answered; the outcome joins the next group commit.
          recorder.add([siteId, 'webhook', 'dst_bench', delivery, 'pageview', 'attempt', 1, good ? 1 : 0, res.statusCode, latencyMs, null, null, null, now]).then(
            () => recorded++,
            (err: unknown) => (recordError ??= (err as Error).message),
          );
        }
        if (good) {
          ok++;
          if (measuring && started >= measureStart) {
            hist.record((answered - started) * 1000);
            measured++;
          }
        }
      } catch (err) {
        errors++;
        firstError ??= `${(err as Error).name}: ${(err as Error).message} ${(err as { code?: string }).code ?? ''}`.trim();
        await sleep(20); // a dead server must not turn this into a hot loop
      } finally {
        inFlight--;
        if (!good && unacknowledged.length < 10_000) unacknowledged.push(seq);
      }
    }
  };

  const all = Promise.all(Array.from({ length: workers }, (_, w) => worker(w))).then(() => 'done' as const);
  const warm = warmupSeconds > 0 ? await raceTimer(warmupSeconds * 1000, 'time' as const, all) : ('time' as const);
  measuring = true;
  measureStart = performance.now();
  const windowStart = performance.timeOrigin + measureStart;
  const cpu0 = process.cpuUsage();
  let end: 'time' | 'done' = warm;
  if (warm === 'time') end = await raceTimer(job.seconds * 1000, 'time' as const, all);
  const measureEnd = performance.now();
  measuring = false;
  stopped = true;
  const cpu = process.cpuUsage(cpu0);
  const drained = (await raceTimer(job.drainSeconds * 1000, 'timeout' as const, all)) === 'done';
  const unfinished = drained ? 0 : inFlight;
  if (drained) await Promise.all(dispatchers.map((d) => d.close()));
  else await Promise.all(dispatchers.map((d) => d.destroy()));
  await recorder?.close();
  if (recorder && (recordError !== null || recorded !== ok + non2xx)) {
    throw new Error(`storing baseline: ${recorded} outcomes recorded of ${ok + non2xx} answers${recordError ? `, first error: ${recordError}` : ''}`);
  }
  const measuredSeconds = (measureEnd - measureStart) / 1000;
  return {
    bodyBytes,
    windowStart,
    windowEnd: performance.timeOrigin + measureEnd,
    measuredSeconds,
    measured,
    rate: measuredSeconds > 0 ? measured / measuredSeconds : 0,
    latency: hist.summary(),
    sent,
    ok,
    errors,
    non2xx,
    statuses,
    unfinished,
    stoppedBy: end === 'time' ? 'time' : 'max-requests',
    firstError,
    firstNon2xx,
    cpuPercent: measuredSeconds > 0 ? ((cpu.user + cpu.system) / 1000 / (measureEnd - measureStart)) * 100 : 0,
    ...(acks ? { acks } : {}),
    unacknowledged,
  };
}

if (isEntryPoint(import.meta.url)) {
  serveRequests(async (m) => {
    if (m.type !== 'post' && m.type !== 'ingest') throw new Error(`unknown job ${m.type}`);
    return runJob(m as unknown as PostJob | IngestJob);
  }, 6 * 3600_000);
}

import { z } from 'zod';
import type { Logger } from 'pino';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Store } from '../store/store.js';
import { schemaProblem } from '../store/schema-compat.js';
import { AppError, isStorageUnavailable } from '../errors/app-error.js';
import { sendError } from '../http/respond.js';

const check = z.object({ ok: z.boolean(), reason: z.string().optional() });

/** The body of GET /readyz: whether this instance should get traffic, and each check. Nothing secret: reasons, not raw errors. */
export const readyViewSchema = z.object({
  ready: z.boolean(),
  failed: z.array(z.enum(['shutdown', 'store', 'migrations', 'writer'])),
  checks: z.object({
    shutdown: check,
    store: check.extend({ latency_ms: z.number().int().optional() }),
    migrations: check.extend({ version: z.number().int().optional(), expected: z.number().int() }),
    writer: check.extend({ pending: z.number().int(), stalled_ms: z.number().int() }),
  }),
});
export type ReadyView = z.infer<typeof readyViewSchema>;

export interface ReadinessOptions {
  /** The newest migration this svc knows (its schema version). */
  schemaVersion: number;
  /** Deadline of the store check (SVC_READY_TIMEOUT_MS). */
  timeoutMs: number;
  /** Writes waiting this long with no commit mean a stalled writer (SVC_READY_STALL_MS). */
  stallMs: number;
  logger: Logger;
}

/**
 * The readiness of `svc serve` for a load balancer: the store answers within a
 * deadline (and, on SQLite, is still the file it opened), its migrations are
 * ones this svc runs against, the writer is not stalled, and the server is not
 * shutting down. Checks of concurrent probes are shared (one store query in
 * flight at a time), so a balancer polling hard cannot pile queries up.
 */
export class Readiness {
  private shuttingDown = false;
  private inflight: Promise<ReadyView> | null = null;
  private lastReady: boolean | null = null;

  constructor(
    private readonly store: Store,
    private readonly opts: ReadinessOptions,
  ) {}

  /** From now on /readyz answers 503 (SIGTERM: the balancer moves traffic away before the server stops). */
  beginShutdown(): void {
    this.shuttingDown = true;
  }

  check(): Promise<ReadyView> {
    this.inflight ??= this.run().finally(() => {
      this.inflight = null;
    });
    return this.inflight;
  }

  private async run(): Promise<ReadyView> {
    const started = performance.now();
    const expected = this.opts.schemaVersion;
    let store: ReadyView['checks']['store'];
    let migrations: ReadyView['checks']['migrations'];
    try {
      const rows = await deadline(this.store.migrationsApplied(), this.opts.timeoutMs);
      const latency = Math.round(performance.now() - started);
      const fileProblem = this.store.fileProblem?.() ?? null;
      store = fileProblem === null ? { ok: true, latency_ms: latency } : { ok: false, reason: fileProblem, latency_ms: latency };
      const version = Math.max(0, ...rows.map((r) => r.version));
      const problem = schemaProblem(expected, rows);
      migrations = problem === null ? { ok: true, version, expected } : { ok: false, reason: problem, version, expected };
    } catch (err) {
      const reason =
        err instanceof DeadlineError
          ? `no answer within ${this.opts.timeoutMs} ms`
          : isStorageUnavailable(err)
            ? 'unreachable'
            : 'the schema could not be read';
      store = { ok: false, reason };
      migrations = { ok: false, reason: 'unknown while the store does not answer', expected };
      this.opts.logger.debug({ err: { message: (err as Error)?.message, code: (err as { code?: string })?.code } }, 'readiness: store check failed');
    }
    const stalled = this.store.writerStalledMs();
    const pending = this.store.pendingWrites;
    const writer =
      stalled >= this.opts.stallMs
        ? { ok: false, reason: `writes have waited ${Math.round(stalled / 1000)} s with no commit`, pending, stalled_ms: Math.round(stalled) }
        : { ok: true, pending, stalled_ms: Math.round(stalled) };
    const shutdown = this.shuttingDown ? { ok: false, reason: 'shutting down' } : { ok: true };
    const checks = { shutdown, store, migrations, writer };
    const failed = (Object.keys(checks) as (keyof typeof checks)[]).filter((k) => !checks[k].ok);
    const view: ReadyView = { ready: failed.length === 0, failed, checks };
    if (this.lastReady !== view.ready) {
      if (this.lastReady !== null || !view.ready) {
        const level = view.ready ? 'info' : 'warn';
        this.opts.logger[level]({ failed, checks }, view.ready ? 'ready' : 'not ready');
      }
      this.lastReady = view.ready;
    }
    return view;
  }
}

class DeadlineError extends Error {}

function deadline<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new DeadlineError(`no answer within ${ms} ms`)), ms);
      timer.unref();
    }),
  ]).finally(() => clearTimeout(timer));
}

/** GET|HEAD /readyz: 200 when ready, else 503; no credentials, no rate limit, never cached. */
export async function handleReady(readiness: Readiness, req: IncomingMessage, res: ServerResponse): Promise<void> {
  req.resume();
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    sendError(res, new AppError('method_not_allowed', `${req.method} is not allowed on /readyz; use GET`, {}, { Allow: 'GET, HEAD' }));
    return;
  }
  const view = await readiness.check();
  const body = JSON.stringify(view);
  res.writeHead(view.ready ? 200 : 503, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    'Cache-Control': 'no-store',
  });
  res.end(req.method === 'HEAD' ? undefined : body);
}

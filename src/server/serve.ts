import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Store } from '../store/store.js';
import { openConfiguredStore } from '../store/open.js';
import { startCheckpointer } from '../store/checkpoint.js';
import { IngestionService } from '../domain/ingestion/service.js';
import { SegmentMembership } from '../domain/segments/membership.js';
import { SegmentsService } from '../domain/segments/service.js';
import { createPulseApi, PROFILE_PATH } from '../pulse/router.js';
import { createMcpEndpoint, MCP_PATH } from '../mcp/router.js';
import { mcpRatePolicy } from '../mcp/config.js';
import { createRateLimiter } from '../http/rate-limit.js';
import { handleIngest, isIngestPath, type IngestDeps } from '../ingest/router.js';
import { createApp, finishApp } from './app.js';
import { VERSION } from '../version.js';
import { redactUrl } from '../log.js';
import { WebhookDispatcher } from '../webhooks/dispatcher.js';
import { webhookPolicy } from '../webhooks/policy.js';
import { AdFanout } from '../adplatforms/worker.js';
import { adRetryPolicy } from '../adplatforms/policy.js';
import { Janitor } from '../workers/janitor.js';
import { startContentJobs } from '../workers/content-jobs.js';
import { StallWorker } from '../workers/stall.js';
import { TriggerFireWorker } from '../workers/trigger-fires.js';
import { ExperimentsWorker } from '../workers/experiments.js';
import { INSTANCE_ID, releaseDeadLocalLeases } from '../store/lane-lease.js';
import { claimHolder, type HolderClaim } from '../workers/holder-lock.js';
import { DECIDE_PATH, handleDecide, type DecideDeps } from '../ingest/decide.js';
import { decisionService } from '../domain/web/decisions.js';
import { loggerFor } from '../http/request-context.js';
import type { Metrics } from '../metrics/metrics.js';
import type { MetricsServer } from '../metrics/server.js';
import { MIGRATIONS } from '../store/migrations.js';
import { PG_MIGRATIONS } from '../store/pg/migrations.js';
import { TOOLS } from '../mcp/tools/index.js';
import { instrument } from './instrument.js';
import { handleReady, Readiness } from './readiness.js';
import { holdServeLock } from '../store/serve-lock.js';
import { answerClientError, MAX_HEADER_BYTES } from './client-error.js';
import { sendError } from '../http/respond.js';
import { AppError } from '../errors/app-error.js';
import { OriginPolicy } from '../ingest/origins.js';
import { handleTag, isTagPath, loadTag, type TagDeps } from '../ingest/tag.js';

export interface RunningServer {
  url: string;
  dispatcher: WebhookDispatcher;
  adFanout: AdFanout;
  store: Store;
  server: http.Server;
  /** The Prometheus exporter's URL, when SVC_METRICS_PORT is set. */
  metricsUrl: string | null;
  /** The name this process holds work-lane leases under (lane_leases.holder). */
  instanceId: string;
  /** Stops accepting, lets in-flight requests finish, flushes writes, closes the store. */
  close: () => Promise<void>;
  /**
   * SIGTERM: /readyz turns 503 at once and requests are still served for
   * `drainMs` (responses ask keep-alive clients to reconnect), so the load
   * balancer moves traffic away; then `close`. `endDrain` cuts the wait short.
   */
  shutdown: (drainMs: number) => Promise<void>;
  endDrain: () => void;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

export interface ServerOptions {
  /** Extra pages served before the API (svc demo's shop); true when it answered the request. */
  pages?: (pathname: string, req: http.IncomingMessage, res: http.ServerResponse) => boolean;
}

/** Starts every HTTP surface of svc in this process. */
export async function startServer(config: Config, logger: Logger, options: ServerOptions = {}): Promise<RunningServer> {
  const mcpLimit = mcpRatePolicy();
  const policy = webhookPolicy(config);
  const adRetry = adRetryPolicy(config);
  // On the embedded store: a shared lock that svc restore needs exclusively (refused while this server runs).
  const serveLock = config.databaseUrl === undefined ? holdServeLock(config.dataDir) : null;
  if (config.databaseUrl === undefined && serveLock === null) {
    throw new Error(`a restore is running in ${config.dataDir}: start svc serve once it has finished`);
  }
  // This process as a lease holder of the data directory; earlier ones that are gone are found here.
  let holder: HolderClaim;
  try {
    holder = claimHolder(config.dataDir, INSTANCE_ID);
  } catch (err) {
    serveLock?.release();
    throw err;
  }
  let store: Store;
  try {
    store = await openConfiguredStore(config, {
      server: true,
      onPoolError: (err) => logger.warn({ err: err.message }, 'database connection lost; reconnecting on demand'),
    });
  } catch (err) {
    holder.release();
    serveLock?.release();
    throw err;
  }
  const checkpointer = startCheckpointer(store, logger);
  const schemaVersion = Math.max(...(store.dialect === 'pg' ? PG_MIGRATIONS : MIGRATIONS).map((m) => m.version));
  const readiness = new Readiness(store, { schemaVersion, timeoutMs: config.readyTimeoutMs, stallMs: config.readyStallMs, logger });
  // prom-client is loaded only when the metrics listener is on.
  const metricsModules = config.metricsPort === undefined ? null : await Promise.all([import('../metrics/metrics.js'), import('../metrics/server.js')]);
  const metrics: Metrics | null =
    metricsModules === null
      ? null
      : new metricsModules[0].Metrics({
          version: VERSION,
          destinationLabels: config.metricsDestinationLabels,
          tools: TOOLS.map((t) => t.name),
          sources: {
            backlog: () => store.counts.backlog(),
            pool: store.poolUsage,
            writer: () => ({ pending: store.pendingWrites, stalledMs: store.writerStalledMs() }),
            partitions: partitionCounters(store),
          },
        });
  if (metrics) store.onGroupCommit((info) => metrics.groupCommit(info));
  const membership = new SegmentMembership(store);
  const service = new IngestionService(store, membership);
  const origins = new OriginPolicy(store, config.trustProxy);
  const limited = config.rateLimit === 'on';
  if (!limited) logger.warn('SVC_RATE_LIMIT=off: every rate limit is disabled; use this for benchmarks only');
  if (config.allowPrivateDestinations) {
    logger.warn('private and loopback webhook destinations are allowed; use this for local development and tests only');
  }
  const deps: IngestDeps = {
    service,
    ipLimiter: limited
      ? createRateLimiter(store, { name: 'ingest-client', rate: config.ingestIpRate, windowMs: 1000, burst: config.ingestIpBurst })
      : null,
    siteLimiter: limited
      ? createRateLimiter(store, { name: 'ingest-site', rate: config.ingestSiteRate, windowMs: 1000, burst: config.ingestSiteBurst })
      : null,
    trustProxy: config.trustProxy,
    origins,
    onUnexpected: (err, path, req) =>
      loggerFor(req, logger).error({ err: { message: (err as Error)?.message, code: (err as { code?: string })?.code }, path }, 'ingestion failed'),
  };

  // GET /api/decide: public like ingestion, limited per client address and per site with the ingestion rates.
  const decideDeps: DecideDeps = {
    decisions: decisionService(store, { fallbackMs: config.decideCacheFallbackMs }),
    ingestion: service,
    ipLimiter: limited ? createRateLimiter(store, { name: 'decide-client', rate: config.ingestIpRate, windowMs: 1000, burst: config.ingestIpBurst }) : null,
    siteLimiter: limited ? createRateLimiter(store, { name: 'decide-site', rate: config.ingestSiteRate, windowMs: 1000, burst: config.ingestSiteBurst }) : null,
    trustProxy: config.trustProxy,
    origins,
    onUnexpected: (err, req) =>
      loggerFor(req, logger).error({ err: { message: (err as Error)?.message, code: (err as { code?: string })?.code } }, 'decision failed'),
  };
  const tagDeps: TagDeps = {
    asset: loadTag(),
    origins,
    ingestion: service,
    // The tag's settings, read once per page view, share the client-address rate of ingestion (the tag file
    // itself is answered from memory and is not limited).
    configLimiter: limited ? createRateLimiter(store, { name: 'tag-config-client', rate: config.ingestIpRate, windowMs: 1000, burst: config.ingestIpBurst }) : null,
    trustProxy: config.trustProxy,
    onUnexpected: (err, req) =>
      loggerFor(req, logger).error({ err: { message: (err as Error)?.message, code: (err as { code?: string })?.code } }, 'tag request failed'),
  };
  if (!tagDeps.asset) logger.warn('the browser tag is not built (dist/tag/tag.js): /tag.js answers 404');

  const dispatcher = new WebhookDispatcher(store, {
    ...policy,
    allowPrivate: config.allowPrivateDestinations,
    concurrency: config.webhookConcurrency,
    pollMs: config.webhookPollMs,
    leaseMs: config.laneLeaseMs,
    logger,
    ...(metrics ? { onAttempt: (dest: string, r: { ok: boolean; errorClass: string | null; latencyMs: number }) => metrics.delivery(dest, r.ok ? 'delivered' : (r.errorClass ?? 'error'), r.latencyMs) } : {}),
  });

  const adFanout = new AdFanout(store, {
    retry: adRetry,
    pollMs: config.adPollMs,
    timeoutMs: config.adTimeoutMs,
    leaseMs: config.laneLeaseMs,
    allowPrivate: config.allowPrivateDestinations,
    meta: { baseUrl: config.metaBaseUrl, apiVersion: config.metaApiVersion },
    google: { baseUrl: config.googleAdsBaseUrl, apiVersion: config.googleAdsApiVersion, tokenUrl: config.googleOauthTokenUrl },
    logger,
    ...(metrics ? { onJobOutcome: (platform: string, conn: string, o: 'delivered' | 'retrying' | 'failed') => metrics.adJob(platform, conn, o) } : {}),
  });

  const app = createApp({ logger, version: VERSION });
  if (config.ingestRouter === 'express') {
    for (const path of ['/api/identify', '/api/convert', '/api/lead/capture', '/api/events', '/api/score'] as const) {
      app.all(path, (req, res) => void handleIngest(deps, path, req, res));
    }
  }
  const mcp = createMcpEndpoint({
    store,
    membership,
    allowPrivateDestinations: config.allowPrivateDestinations,
    logger,
    rateLimit: limited ? mcpLimit : null,
    loopback: LOOPBACK.has(config.host),
    ...(metrics ? { onToolCall: (tool: string, outcome: string, ms: number) => metrics.toolCall(tool, outcome, ms) } : {}),
  });
  app.use('/api/mcp', mcp.router);
  const pulse = createPulseApi(store, { allowPrivateDestinations: config.allowPrivateDestinations, rateLimit: limited }, logger);
  app.use('/api/pulse/v1', pulse.router);
  finishApp(app, logger);

  const hostGuard = LOOPBACK.has(config.host) ? loopbackHostGuard(config) : null;
  let inFlight = 0;
  let draining: (() => void) | null = null;
  let shuttingDown = false;
  const instrumentation = { logger, trustProxy: config.trustProxy, metrics, draining: () => shuttingDown };
  // One listener for every response ('close' is emitted once per response), not a closure and a once-wrapper each.
  const onClose = () => {
    inFlight--;
    if (inFlight === 0 && draining) draining();
  };
  const onRequest = (req: http.IncomingMessage, res: http.ServerResponse) => {
    inFlight++;
    res.on('close', onClose);
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const pathname = q === -1 ? url : url.slice(0, q);
    instrument(req, res, pathname, instrumentation);
    if (req.headers.host === undefined && req.httpVersion === '1.1') {
      res.setHeader('Connection', 'close');
      sendError(res, new AppError('bad_request', 'malformed HTTP request: an HTTP/1.1 request must carry a Host header'));
      return;
    }
    // The browser's public paths check Origin against the site's origins instead.
    const isPublic = pathname === DECIDE_PATH || isIngestPath(pathname) || isTagPath(pathname);
    if (!isPublic && options.pages?.(pathname, req, res)) return;
    if (!isPublic && hostGuard && !hostGuard(req.headers.host, req.headers.origin)) {
      sendError(res, new AppError('forbidden_host', 'Host or Origin header does not name this local server'));
      return;
    }
    if (pathname === '/readyz') {
      void handleReady(readiness, req, res);
      return;
    }
    if (pathname === DECIDE_PATH) {
      void handleDecide(decideDeps, req, res);
      return;
    }
    // The MCP endpoint without express (its /report and other spellings of the path still go through the router).
    if (pathname === MCP_PATH) {
      void mcp.handle(req, res);
      return;
    }
    if (isTagPath(pathname)) {
      void handleTag(tagDeps, pathname, req, res);
      return;
    }
    // The profile read without express (anything but a plain GET still goes through the router).
    if (pathname === PROFILE_PATH && pulse.answerProfile(req, res, url)) return;
    if (config.ingestRouter === 'raw' && isIngestPath(pathname)) {
      void handleIngest(deps, pathname, req, res);
      return;
    }
    app(req, res);
  };
  const server = http.createServer(
    {
      keepAliveTimeout: config.keepAliveTimeoutMs,
      headersTimeout: config.headersTimeoutMs,
      requestTimeout: config.requestTimeoutMs,
      // How often the two timeouts above are checked (Node's default, 30 s, would let a slow request run that much over).
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(config.headersTimeoutMs / 4))),
      maxHeaderSize: MAX_HEADER_BYTES,
      // A missing Host is answered below with our error shape rather than Node's empty 400.
      requireHostHeader: false,
    },
    onRequest,
  );
  server.on('clientError', answerClientError(logger));

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  const url = `http://${host}:${addr.port}`;
  let metricsServer: MetricsServer | null = null;
  if (metrics && metricsModules && config.metricsPort !== undefined) {
    try {
      metricsServer = await metricsModules[1].startMetricsServer(metrics, { host: config.metricsHost, port: config.metricsPort, logger });
    } catch (err) {
      server.close();
      await store.close();
      holder.release();
      serveLock?.release();
      throw err;
    }
  }

  // A process of this host that was killed holding leases need not be waited for.
  const freed = await releaseDeadLocalLeases(store, holder.dead).catch((err: unknown) => {
    logger.warn({ err: (err as Error).message }, 'could not look for leases of dead processes');
    return [];
  });
  if (freed.length > 0) logger.info({ lanes: freed }, 'took over the lanes of a process of this host that is gone');
  dispatcher.start();
  adFanout.start();
  const janitor = new Janitor(store, {
    retentionMs: config.retentionDays * 86_400_000,
    intervalMs: config.cleanupIntervalMs,
    leaseMs: config.laneLeaseMs,
    logger,
  });
  janitor.start();
  // The months ahead exist before the first write of this instance (a write into a missing month would land
  // in the DEFAULT partition and move at the next pass); instances starting together serialize on a lock.
  if (store.partitions !== null) {
    const created = await store.partitions.ensure(Date.now()).catch((err: unknown) => {
      logger.warn({ err: (err as Error).message }, 'could not create the time partitions ahead; the janitor tries again');
      return 0;
    });
    if (created > 0) logger.info({ created }, 'created time partitions ahead');
  }
  const contentJobs = startContentJobs(store, { allowPrivate: config.allowPrivateDestinations, logger });
  const stallWorker = new StallWorker(store, { intervalMs: 3_600_000, leaseMs: config.laneLeaseMs, logger });
  stallWorker.start();
  const triggerFires = new TriggerFireWorker(store, {
    retry: policy.retry,
    allowPrivate: config.allowPrivateDestinations,
    pollMs: config.webhookPollMs,
    leaseMs: config.laneLeaseMs,
    concurrency: config.webhookConcurrency,
    logger,
    ...(metrics ? { onAttempt: (outcome: string, latencyMs: number | null) => metrics.triggerMessage(outcome, latencyMs) } : {}),
  });
  triggerFires.start();
  const experiments = new ExperimentsWorker(store, { intervalMs: config.experimentsIntervalMs, leaseMs: config.laneLeaseMs, logger });
  experiments.start();

  // Windowed segment rules ("in the last 7 days") change with the clock, not only with new data.
  const segments = new SegmentsService(store, membership);
  let refreshing: Promise<void> | null = null;
  const refreshTimer = setInterval(() => {
    refreshing ??= segments
      .refreshWindowed()
      .then((n) => {
        if (n > 0) logger.debug({ profiles: n }, 'windowed segments re-evaluated');
      })
      .catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'could not re-evaluate windowed segments'))
      .finally(() => {
        refreshing = null;
      });
  }, config.segmentRefreshMs);
  refreshTimer.unref();

  let closing: Promise<void> | null = null;
  const close = () => {
    closing ??= (async () => {
      shuttingDown = true;
      readiness.beginShutdown();
      server.close();
      server.closeIdleConnections();
      if (inFlight > 0) {
        await Promise.race([
          new Promise<void>((r) => (draining = r)),
          new Promise<void>((r) => setTimeout(r, 10_000).unref()),
        ]);
      }
      server.closeAllConnections();
      clearInterval(refreshTimer);
      await refreshing;
      await Promise.all([
        dispatcher.stop(),
        adFanout.stop(),
        janitor.stop(),
        contentJobs.stop(),
        stallWorker.stop(),
        triggerFires.stop(),
        experiments.stop(),
      ]);
      await checkpointer.stop();
      await store.close();
      holder.release();
      serveLock?.release();
      await metricsServer?.close();
      logger.info('stopped');
    })();
    return closing;
  };
  let endDrain: (() => void) | null = null;
  let drainTimer: NodeJS.Timeout | null = null;
  const shutdown = async (drainMs: number) => {
    if (!shuttingDown) {
      shuttingDown = true;
      readiness.beginShutdown();
      if (drainMs > 0) {
        logger.info({ drain_ms: drainMs }, 'draining: /readyz answers 503; still serving until the drain delay ends');
        await new Promise<void>((resolve) => {
          endDrain = resolve;
          drainTimer = setTimeout(resolve, drainMs);
        });
        if (drainTimer) clearTimeout(drainTimer);
        endDrain = null;
      }
    }
    await close();
  };
  logger.debug({ url: redactUrl(url) }, 'listening');
  return {
    url,
    store,
    server,
    dispatcher,
    adFanout,
    metricsUrl: metricsServer?.url ?? null,
    instanceId: INSTANCE_ID,
    close,
    shutdown,
    endDrain: () => endDrain?.(),
  };
}

/**
 * DNS-rebinding guard for a server bound to loopback: the Host header (and
 * Origin, when present) must name a loopback host.
 */
function loopbackHostGuard(config: Config): (host: string | undefined, origin: string | undefined) => boolean {
  const okHost = (h: string) => {
    const name = h.startsWith('[') ? h.slice(1, h.indexOf(']')) : h.split(':')[0]!;
    return LOOPBACK.has(name.toLowerCase());
  };
  void config;
  return (host, origin) => {
    if (!host || !okHost(host)) return false;
    if (origin === undefined || origin === 'null') return true;
    try {
      return okHost(new URL(origin).host);
    } catch {
      return false;
    }
  };
}

/** The time-partition counters for /metrics (PostgreSQL), or null. */
function partitionCounters(store: Store): (() => { created: number; dropped: number }) | null {
  const p = store.partitions;
  return p === null ? null : () => p.counters;
}

import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { GroupCommitInfo } from '../store/observe.js';

/** Rows waiting in one queue of the store, and when the oldest was written (ms since the epoch). */
export interface BacklogFigure {
  queue: 'outbox' | 'webhook_deliveries' | 'adplatform_jobs';
  rows: number;
  oldestCreatedAt: number | null;
}

/** What /metrics reads at scrape time (each may fail: its series are then left out of that scrape). */
export interface MetricsSources {
  backlog: () => Promise<BacklogFigure[]>;
  /** Connection pool usage on PostgreSQL; null on SQLite. */
  pool: (() => { total: number; idle: number; waiting: number; max: number }) | null;
  /** Write operations queued or running, and how long they have waited for a commit (ms). */
  writer: () => { pending: number; stalledMs: number };
  /** Time partitions created and dropped by this process on PostgreSQL; null on SQLite. */
  partitions?: (() => { created: number; dropped: number }) | null;
}

const SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const COUNTS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/**
 * Label values from an unbounded set (destination ids): the first `max` seen
 * keep their own value, the rest are counted together as `other`, so a site
 * with thousands of destinations cannot blow up the series count.
 */
export class CappedLabel {
  private readonly seen = new Set<string>();

  constructor(private readonly max: number) {}

  value(v: string): string {
    if (this.seen.has(v)) return v;
    if (this.seen.size < this.max) {
      this.seen.add(v);
      return v;
    }
    return 'other';
  }
}

/**
 * The Prometheus metrics of one `svc serve` (prom-client, its own registry):
 * HTTP requests per surface, route and status; ingestion outcomes; rate-limit
 * refusals; the store's group commits and backlog; webhook deliveries and
 * ad-platform jobs per destination (capped); MCP tool calls; PostgreSQL pool
 * usage; and the process's default metrics. Labels never hold URLs, secrets
 * or personal data: routes are templates, destinations are ids.
 */
export class Metrics {
  readonly registry = new Registry();
  private readonly destinations: CappedLabel;
  private readonly tools: ReadonlySet<string>;
  private readonly http: Counter<'surface' | 'route' | 'method' | 'status'>;
  private readonly httpDuration: Histogram<'surface' | 'route' | 'method' | 'status'>;
  private readonly ingest: Counter<'endpoint' | 'outcome' | 'reason'>;
  private readonly rateLimited: Counter<'surface' | 'scope'>;
  private readonly groupOps: Histogram<'backend'>;
  private readonly groupTrips: Histogram<'backend'>;
  private readonly groupDuration: Histogram<'backend'>;
  private readonly groupModes: Counter<'backend' | 'mode'>;
  private readonly deliveries: Counter<'destination' | 'outcome'>;
  private readonly deliveryDuration: Histogram<'destination'>;
  private readonly triggerMessages: Counter<'outcome'>;
  private readonly triggerMessageDuration: Histogram;
  private readonly adJobs: Counter<'platform' | 'connection' | 'outcome'>;
  private readonly mcpCalls: Counter<'tool' | 'outcome'>;
  private readonly mcpDuration: Histogram<'tool'>;

  constructor(opts: { version: string; destinationLabels: number; tools: readonly string[]; sources: MetricsSources }) {
    const registers = [this.registry];
    this.destinations = new CappedLabel(opts.destinationLabels);
    this.tools = new Set(opts.tools);
    collectDefaultMetrics({ register: this.registry });
    new Gauge({ name: 'svc_build_info', help: 'svc version (always 1).', labelNames: ['version'], registers }).set({ version: opts.version }, 1);
    this.http = new Counter({
      name: 'svc_http_requests_total',
      help: 'HTTP requests answered, per surface, route template, method and status (499: the client went away first).',
      labelNames: ['surface', 'route', 'method', 'status'],
      registers,
    });
    this.httpDuration = new Histogram({
      name: 'svc_http_request_duration_seconds',
      help: 'Time from the request line to the end of the response, per surface, route template, method and status.',
      labelNames: ['surface', 'route', 'method', 'status'],
      buckets: SECONDS,
      registers,
    });
    this.ingest = new Counter({
      name: 'svc_ingest_requests_total',
      help: 'Ingestion requests per endpoint: acknowledged (reason ok) or refused, by error code.',
      labelNames: ['endpoint', 'outcome', 'reason'],
      registers,
    });
    this.rateLimited = new Counter({
      name: 'svc_rate_limit_refusals_total',
      help: 'Requests refused with 429 rate_limited, per surface and limit scope (client_address, site, token, key).',
      labelNames: ['surface', 'scope'],
      registers,
    });
    this.groupOps = new Histogram({
      name: 'svc_store_group_commit_operations',
      help: 'Write operations per committed group transaction (group commit).',
      labelNames: ['backend'],
      buckets: COUNTS,
      registers,
    });
    this.groupTrips = new Histogram({
      name: 'svc_store_group_commit_round_trips',
      help: 'Statements sent to the database per committed group, BEGIN and COMMIT included (PostgreSQL; 0 on SQLite).',
      labelNames: ['backend'],
      buckets: [0, ...COUNTS],
      registers,
    });
    this.groupModes = new Counter({
      name: 'svc_store_group_commits_total',
      help: 'Committed group transactions by how their operations ran: set_based (PostgreSQL: concurrently, one statement per SQL text and wave), in_turn (one after another; every SQLite group), rerun (in turn after a set-based pass was rolled back: an operation failed or lost a race).',
      labelNames: ['backend', 'mode'],
      registers,
    });
    this.groupDuration = new Histogram({
      name: 'svc_store_group_commit_duration_seconds',
      help: 'From BEGIN to durable COMMIT of a group transaction.',
      labelNames: ['backend'],
      buckets: [0.0005, ...SECONDS],
      registers,
    });
    this.deliveries = new Counter({
      name: 'svc_webhook_deliveries_total',
      help: 'Webhook delivery attempts per destination id (the first SVC_METRICS_DESTINATION_LABELS, the rest "other") and outcome (delivered, or the error class).',
      labelNames: ['destination', 'outcome'],
      registers,
    });
    this.deliveryDuration = new Histogram({
      name: 'svc_webhook_delivery_duration_seconds',
      help: 'Duration of webhook delivery attempts per destination id.',
      labelNames: ['destination'],
      buckets: SECONDS,
      registers,
    });
    this.triggerMessages = new Counter({
      name: 'svc_trigger_messages_total',
      help: 'Triggered-message attempts to the site\'s live endpoint by outcome (delivered, or the error class; gone when the trigger was deleted).',
      labelNames: ['outcome'],
      registers,
    });
    this.triggerMessageDuration = new Histogram({
      name: 'svc_trigger_message_duration_seconds',
      help: 'Duration of triggered-message attempts that reached the network.',
      buckets: SECONDS,
      registers,
    });
    this.adJobs = new Counter({
      name: 'svc_adplatform_jobs_total',
      help: 'Ad-platform job attempts per platform, connection id (capped like destinations) and outcome (delivered, retrying, failed).',
      labelNames: ['platform', 'connection', 'outcome'],
      registers,
    });
    this.mcpCalls = new Counter({
      name: 'svc_mcp_tool_calls_total',
      help: 'MCP tools/call per tool and outcome (ok, error, refused, invalid).',
      labelNames: ['tool', 'outcome'],
      registers,
    });
    this.mcpDuration = new Histogram({
      name: 'svc_mcp_tool_call_duration_seconds',
      help: 'Duration of MCP tool calls per tool.',
      labelNames: ['tool'],
      buckets: SECONDS,
      registers,
    });
    this.sourceGauges(opts.sources);
  }

  private sourceGauges(sources: MetricsSources): void {
    const registers = [this.registry];
    // Both backlog gauges read one query per scrape, and a store that does not answer within 2 s leaves them out.
    let inflight: Promise<BacklogFigure[]> | null = null;
    const backlog = (): Promise<BacklogFigure[]> =>
      (inflight ??= withDeadline(sources.backlog(), 2_000)
        .catch(() => [])
        .finally(() => {
          inflight = null;
        }));
    new Gauge({
      name: 'svc_outbox_backlog',
      help: 'Rows waiting per queue: outbox rows not yet fanned out, webhook deliveries and ad-platform jobs pending (due or scheduled for a retry).',
      labelNames: ['queue'],
      registers,
      async collect() {
        this.reset();
        for (const b of await backlog()) this.set({ queue: b.queue }, b.rows);
      },
    });
    new Gauge({
      name: 'svc_outbox_oldest_pending_age_seconds',
      help: 'Age of the oldest waiting row per queue (0 when none waits).',
      labelNames: ['queue'],
      registers,
      async collect() {
        this.reset();
        const now = Date.now();
        for (const b of await backlog()) {
          this.set({ queue: b.queue }, b.oldestCreatedAt === null ? 0 : Math.max(0, (now - b.oldestCreatedAt) / 1000));
        }
      },
    });
    new Gauge({
      name: 'svc_store_writes_pending',
      help: 'Write operations queued or running in this process.',
      registers,
      collect() {
        this.set(sources.writer().pending);
      },
    });
    new Gauge({
      name: 'svc_store_writer_stalled_seconds',
      help: 'How long writes have waited with no commit (0 when writes are flowing or none wait).',
      registers,
      collect() {
        this.set(sources.writer().stalledMs / 1000);
      },
    });
    const partitions = sources.partitions ?? null;
    if (partitions !== null) {
      new Counter({
        name: 'svc_store_partitions_total',
        help: 'PostgreSQL time partitions (events, exposures, health log, outbox) this process created ahead and dropped as wholly past retention, by action (created, dropped).',
        labelNames: ['action'],
        registers,
        collect() {
          const p = partitions();
          this.reset();
          this.inc({ action: 'created' }, p.created);
          this.inc({ action: 'dropped' }, p.dropped);
        },
      });
    }
    const pool = sources.pool;
    if (pool !== null) {
      new Gauge({
        name: 'svc_pg_pool_connections',
        help: 'PostgreSQL pool connections by state (idle, busy), requests waiting for one, and the pool size (max).',
        labelNames: ['state'],
        registers,
        collect() {
          const p = pool();
          this.set({ state: 'idle' }, p.idle);
          this.set({ state: 'busy' }, p.total - p.idle);
          this.set({ state: 'waiting' }, p.waiting);
          this.set({ state: 'max' }, p.max);
        },
      });
    }
  }

  /** One HTTP request answered (or abandoned by its client: status 499). */
  httpRequest(r: { surface: string; route: string; method: string; status: number; seconds: number }): void {
    const labels = { surface: r.surface, route: r.route, method: METHODS.has(r.method) ? r.method : 'other', status: String(r.status) };
    this.http.inc(labels);
    this.httpDuration.observe(labels, r.seconds);
  }

  /** One ingestion request: acknowledged, or refused with an error code. */
  ingestion(endpoint: string, errorCode: string | null): void {
    this.ingest.inc({ endpoint, outcome: errorCode === null ? 'acknowledged' : 'refused', reason: errorCode ?? 'ok' });
  }

  rateLimit(surface: string, scope: string): void {
    this.rateLimited.inc({ surface, scope });
  }

  groupCommit(info: GroupCommitInfo): void {
    const labels = { backend: info.backend };
    this.groupOps.observe(labels, info.operations);
    this.groupTrips.observe(labels, info.roundTrips);
    this.groupDuration.observe(labels, info.durationMs / 1000);
    this.groupModes.inc({ backend: info.backend, mode: info.mode ?? 'in_turn' });
  }

  /** One recorded webhook delivery attempt. */
  delivery(destinationId: string, outcome: string, latencyMs: number): void {
    const destination = this.destinations.value(destinationId);
    this.deliveries.inc({ destination, outcome });
    this.deliveryDuration.observe({ destination }, latencyMs / 1000);
  }

  /** One recorded triggered-message attempt; `latencyMs` null when it never reached the network. */
  triggerMessage(outcome: string, latencyMs: number | null): void {
    this.triggerMessages.inc({ outcome });
    if (latencyMs !== null) this.triggerMessageDuration.observe(latencyMs / 1000);
  }

  /** One recorded ad-platform job attempt. */
  adJob(platform: string, connectionId: string, outcome: 'delivered' | 'retrying' | 'failed'): void {
    this.adJobs.inc({ platform, connection: this.destinations.value(connectionId), outcome });
  }

  /** One MCP tools/call; a name outside the registry is counted as `unknown` (it cannot mint a label). */
  toolCall(tool: string, outcome: string, durationMs: number): void {
    const name = this.tools.has(tool) ? tool : 'unknown';
    this.mcpCalls.inc({ tool: name, outcome });
    this.mcpDuration.observe({ tool: name }, durationMs / 1000);
  }

  /** The text exposition (Prometheus text format 0.0.4). */
  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

function withDeadline<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
      timer.unref();
    }),
  ]).finally(() => clearTimeout(timer));
}

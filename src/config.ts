import { z } from 'zod';

const bool = z
  .union([z.boolean(), z.enum(['1', '0', 'true', 'false', 'yes', 'no', 'on', 'off'])])
  .transform((v) => v === true || v === '1' || v === 'true' || v === 'yes' || v === 'on');

const positiveInt = z.coerce.number().int().positive();

/** The sslmode values node-postgres understands; any other value would silently mean verify-full. */
const SSLMODES = ['disable', 'prefer', 'require', 'verify-ca', 'verify-full', 'no-verify'];

function sslmodeKnown(url: string): boolean {
  try {
    const mode = new URL(url).searchParams.get('sslmode');
    return mode === null || SSLMODES.includes(mode);
  } catch {
    return true; // not a URL: pgClientConfig says so
  }
}

/**
 * Every setting of svc in one schema. Values come from command-line flags,
 * then SVC_* environment variables, then these defaults.
 */
export const configSchema = z.object({
  host: z.string().min(1).default('127.0.0.1').describe('Address to listen on (SVC_HOST).'),
  port: z.coerce.number().int().min(0).max(65535).default(8787).describe('Port; 0 picks a free one (SVC_PORT).'),
  dataDir: z.string().min(1).default('./.svc').describe('Data directory (SVC_DATA_DIR).'),
  synchronous: z
    .enum(['full', 'full-inline', 'normal'])
    .default('full')
    .describe('full: on disk before acknowledged, fsync off the event loop; full-inline: SQLite fsyncs inline; normal: survives a process crash only (SVC_SQLITE_SYNCHRONOUS).'),
  sqliteCacheMb: positiveInt
    .max(1_048_576)
    .optional()
    .describe(
      'SQLite page cache of a process, in MiB; pages are held as they are read, up to this (SVC_SQLITE_CACHE_MB). Default: a quarter of the memory the process may use (its cgroup limit, else the machine), at most 1024.',
    ),
  databaseUrl: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
    .refine(sslmodeKnown, { message: `sslmode must be one of ${SSLMODES.join(', ')}` })
    .optional()
    .describe('PostgreSQL instead of the embedded SQLite store: postgres://user@host:5432/db[?sslmode=require][&schema=name] (SVC_DATABASE_URL).'),
  databasePoolSize: positiveInt.max(1000).default(10).describe('PostgreSQL connections per instance (SVC_DATABASE_POOL_SIZE).'),
  databaseStatementTimeoutMs: z.coerce
    .number()
    .int()
    .min(0)
    .default(30_000)
    .describe('PostgreSQL statement timeout in ms, 0 for none (SVC_DATABASE_STATEMENT_TIMEOUT_MS).'),
  rateLimit: z
    .enum(['on', 'off'])
    .default('on')
    .describe('off disables every rate limit, for benchmarks only (SVC_RATE_LIMIT).'),
  ingestSiteRate: positiveInt.default(1000).describe('Ingestion requests per second per site (SVC_INGEST_SITE_RATE).'),
  ingestSiteBurst: positiveInt.default(5000).describe('Ingestion burst per site (SVC_INGEST_SITE_BURST).'),
  ingestIpRate: positiveInt.default(200).describe('Ingestion requests per second per client address (also `/api/decide` and `/api/tag/config`, each its own bucket) (SVC_INGEST_IP_RATE).'),
  ingestIpBurst: positiveInt.default(1000).describe('Ingestion burst per client address (SVC_INGEST_IP_BURST).'),
  trustProxy: bool
    .default(false)
    .describe('Behind a proxy you run: take the client address from X-Forwarded-For and the request id from X-Request-Id (SVC_TRUST_PROXY).'),
  allowPrivateDestinations: bool
    .default(false)
    .describe('Allow webhook destinations on private/loopback addresses; development and tests only (SVC_ALLOW_PRIVATE_DESTINATIONS).'),
  webhookConcurrency: positiveInt.max(256).default(16).describe('Deliveries in flight per destination (SVC_WEBHOOK_CONCURRENCY).'),
  webhookRetrySchedule: z
    .string()
    .default('5s,5m,30m,2h,5h,10h,10h')
    .describe('Delays before each retry of a failed delivery (SVC_WEBHOOK_RETRY_SCHEDULE).'),
  webhookDisableAfterFailures: positiveInt
    .default(50)
    .describe('Consecutive failed attempts that disable a destination (SVC_WEBHOOK_DISABLE_AFTER_FAILURES).'),
  webhookDisableWindow: z
    .string()
    .default('24h')
    .describe('A destination is disabled only when those consecutive failures span at least this long (SVC_WEBHOOK_DISABLE_WINDOW).'),
  laneLeaseMs: positiveInt
    .min(10_000)
    .default(30_000)
    .describe(
      'With several instances on one database: how long one instance keeps a webhook destination or ad-platform connection to itself unless it renews; another takes over after it (SVC_LANE_LEASE_MS).',
    ),
  retentionDays: z.coerce
    .number()
    .positive()
    .default(30)
    .describe(
      'Delivered webhook deliveries and ad-platform jobs, fanned-out outbox rows and health-log rows are deleted this many days after (SVC_RETENTION_DAYS); pending and failed ones are kept.',
    ),
  cleanupIntervalMs: positiveInt.min(1000).default(3_600_000).describe('How often the retention clean-up runs, in ms (SVC_CLEANUP_INTERVAL_MS).'),
  experimentsIntervalMs: positiveInt
    .min(50)
    .default(60_000)
    .describe('How often layout tests are checked for their scheduled end, early stopping and the Core Web Vitals guardrail, in ms (SVC_EXPERIMENTS_INTERVAL_MS).'),
  decideCacheFallbackMs: positiveInt
    .default(2_000)
    .describe(
      'On PostgreSQL: a cached decision snapshot is reloaded after this long at the latest, in case a change notification was lost (SVC_DECIDE_CACHE_FALLBACK_MS).',
    ),
  webhookPollMs: positiveInt.default(500).describe('Longest pause between looks for due deliveries (SVC_WEBHOOK_POLL_MS).'),
  segmentRefreshMs: positiveInt
    .default(600_000)
    .describe('How often segments with time windows ("in the last 7 days") are re-evaluated as time passes, in ms (SVC_SEGMENT_REFRESH_MS).'),
  adRetrySchedule: z
    .string()
    .default('5s,1m,5m,30m,2h,6h,12h')
    .describe('Delays before each retry of a failed ad-platform send; keep the total under 7 days, past which Meta refuses the event (SVC_ADPLATFORM_RETRY_SCHEDULE).'),
  adTimeoutMs: positiveInt.default(30_000).describe('Time limit of one request to an ad platform, in ms (SVC_ADPLATFORM_TIMEOUT_MS).'),
  adPollMs: positiveInt.default(1000).describe('Longest pause between looks for due ad-platform jobs (SVC_ADPLATFORM_POLL_MS).'),
  metaBaseUrl: z.url().default('https://graph.facebook.com').describe('Meta Graph API base URL; tests point it at a local server (SVC_META_BASE_URL).'),
  metaApiVersion: z.string().regex(/^v\d+\.\d+$/).default('v24.0').describe('Meta Graph API version (SVC_META_API_VERSION).'),
  googleAdsBaseUrl: z.url().default('https://googleads.googleapis.com').describe('Google Ads API base URL (SVC_GOOGLE_ADS_BASE_URL).'),
  googleAdsApiVersion: z.string().regex(/^v\d+$/).default('v22').describe('Google Ads API version (SVC_GOOGLE_ADS_API_VERSION).'),
  googleOauthTokenUrl: z.url().default('https://oauth2.googleapis.com/token').describe('Google OAuth token endpoint (SVC_GOOGLE_OAUTH_TOKEN_URL).'),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info').describe('SVC_LOG_LEVEL.'),
  logFormat: z
    .enum(['auto', 'json', 'pretty'])
    .default('auto')
    .describe('auto: pretty lines when stderr is a terminal, JSON lines otherwise (SVC_LOG_FORMAT).'),
  metricsHost: z.string().min(1).default('127.0.0.1').describe('Address of the Prometheus /metrics listener (SVC_METRICS_HOST).'),
  metricsPort: z.coerce
    .number()
    .int()
    .min(0)
    .max(65535)
    .optional()
    .describe('Port of the Prometheus /metrics listener; unset: no listener; 0 picks a free one (SVC_METRICS_PORT).'),
  metricsDestinationLabels: z.coerce
    .number()
    .int()
    .min(0)
    .max(10_000)
    .default(50)
    .describe('Webhook destinations and ad-platform connections that get a label of their own in /metrics; the rest are counted as "other" (SVC_METRICS_DESTINATION_LABELS).'),
  shutdownDrainMs: z.coerce
    .number()
    .int()
    .min(0)
    .max(600_000)
    .default(5_000)
    .describe('On SIGTERM, how long /readyz answers 503 while requests are still served, before the server stops accepting (SVC_SHUTDOWN_DRAIN_MS).'),
  readyTimeoutMs: positiveInt
    .max(60_000)
    .default(2_000)
    .describe('Deadline of the store check of /readyz, in ms (SVC_READY_TIMEOUT_MS).'),
  readyStallMs: positiveInt
    .min(100)
    .default(10_000)
    .describe('/readyz fails when writes have waited this long with no commit (SVC_READY_STALL_MS).'),
  headersTimeoutMs: positiveInt
    .min(100)
    .default(20_000)
    .describe('A request whose headers have not all arrived this long after it began gets 408 (SVC_HEADERS_TIMEOUT_MS).'),
  requestTimeoutMs: positiveInt
    .min(100)
    .default(60_000)
    .describe('A request whose headers and body have not all arrived this long after it began gets 408 (SVC_REQUEST_TIMEOUT_MS).'),
  keepAliveTimeoutMs: positiveInt
    .default(75_000)
    .describe('How long an idle keep-alive connection is kept open; keep it above the idle timeout of the load balancer in front (SVC_KEEP_ALIVE_TIMEOUT_MS).'),
  ingestRouter: z.enum(['raw', 'express']).default('raw').describe('How ingestion routes are mounted (SVC_INGEST_ROUTER); for benchmarks.'),
});

export type Config = z.infer<typeof configSchema>;

const ENV: Record<keyof Config, string> = {
  host: 'SVC_HOST',
  port: 'SVC_PORT',
  dataDir: 'SVC_DATA_DIR',
  synchronous: 'SVC_SQLITE_SYNCHRONOUS',
  sqliteCacheMb: 'SVC_SQLITE_CACHE_MB',
  databaseUrl: 'SVC_DATABASE_URL',
  databasePoolSize: 'SVC_DATABASE_POOL_SIZE',
  databaseStatementTimeoutMs: 'SVC_DATABASE_STATEMENT_TIMEOUT_MS',
  rateLimit: 'SVC_RATE_LIMIT',
  ingestSiteRate: 'SVC_INGEST_SITE_RATE',
  ingestSiteBurst: 'SVC_INGEST_SITE_BURST',
  ingestIpRate: 'SVC_INGEST_IP_RATE',
  ingestIpBurst: 'SVC_INGEST_IP_BURST',
  trustProxy: 'SVC_TRUST_PROXY',
  allowPrivateDestinations: 'SVC_ALLOW_PRIVATE_DESTINATIONS',
  webhookConcurrency: 'SVC_WEBHOOK_CONCURRENCY',
  webhookRetrySchedule: 'SVC_WEBHOOK_RETRY_SCHEDULE',
  webhookDisableAfterFailures: 'SVC_WEBHOOK_DISABLE_AFTER_FAILURES',
  webhookDisableWindow: 'SVC_WEBHOOK_DISABLE_WINDOW',
  webhookPollMs: 'SVC_WEBHOOK_POLL_MS',
  experimentsIntervalMs: 'SVC_EXPERIMENTS_INTERVAL_MS',
  decideCacheFallbackMs: 'SVC_DECIDE_CACHE_FALLBACK_MS',
  laneLeaseMs: 'SVC_LANE_LEASE_MS',
  retentionDays: 'SVC_RETENTION_DAYS',
  cleanupIntervalMs: 'SVC_CLEANUP_INTERVAL_MS',
  segmentRefreshMs: 'SVC_SEGMENT_REFRESH_MS',
  adRetrySchedule: 'SVC_ADPLATFORM_RETRY_SCHEDULE',
  adPollMs: 'SVC_ADPLATFORM_POLL_MS',
  adTimeoutMs: 'SVC_ADPLATFORM_TIMEOUT_MS',
  metaBaseUrl: 'SVC_META_BASE_URL',
  metaApiVersion: 'SVC_META_API_VERSION',
  googleAdsBaseUrl: 'SVC_GOOGLE_ADS_BASE_URL',
  googleAdsApiVersion: 'SVC_GOOGLE_ADS_API_VERSION',
  googleOauthTokenUrl: 'SVC_GOOGLE_OAUTH_TOKEN_URL',
  logLevel: 'SVC_LOG_LEVEL',
  logFormat: 'SVC_LOG_FORMAT',
  metricsHost: 'SVC_METRICS_HOST',
  metricsPort: 'SVC_METRICS_PORT',
  metricsDestinationLabels: 'SVC_METRICS_DESTINATION_LABELS',
  shutdownDrainMs: 'SVC_SHUTDOWN_DRAIN_MS',
  readyTimeoutMs: 'SVC_READY_TIMEOUT_MS',
  readyStallMs: 'SVC_READY_STALL_MS',
  headersTimeoutMs: 'SVC_HEADERS_TIMEOUT_MS',
  requestTimeoutMs: 'SVC_REQUEST_TIMEOUT_MS',
  keepAliveTimeoutMs: 'SVC_KEEP_ALIVE_TIMEOUT_MS',
  ingestRouter: 'SVC_INGEST_ROUTER',
};

/** Resolves settings: flags (defined values only) > environment > defaults. Throws a ZodError on bad values. */
export function loadConfig(flags: Partial<Record<keyof Config, unknown>>, env: NodeJS.ProcessEnv = process.env): Config {
  const merged: Record<string, unknown> = {};
  for (const key of Object.keys(ENV) as (keyof Config)[]) {
    const fromFlag = flags[key];
    const fromEnv = env[ENV[key]];
    if (fromFlag !== undefined) merged[key] = fromFlag;
    else if (fromEnv !== undefined && fromEnv !== "") merged[key] = fromEnv;
  }
  const config = configSchema.parse(merged);
  if (config.headersTimeoutMs > config.requestTimeoutMs) {
    throw new z.ZodError([
      {
        code: 'custom',
        path: ['headersTimeoutMs'],
        message: `SVC_HEADERS_TIMEOUT_MS (${config.headersTimeoutMs}) must not exceed SVC_REQUEST_TIMEOUT_MS (${config.requestTimeoutMs})`,
        input: config.headersTimeoutMs,
      },
    ]);
  }
  return config;
}

/**
 * Environment variables read outside the config schema, for the settings
 * reference (docs/settings.md is generated from the schema and this list).
 */
export const OTHER_ENV: readonly { name: string; meaning: string }[] = [
  {
    name: 'SVC_SECRET_KEY',
    meaning:
      'Key for secrets at rest (webhook secrets, ad-platform credentials, report links); without it a random key is kept in `DIR/secret.key` (mode 0600). Every instance on one database needs the same key.',
  },
  { name: 'SVC_MCP_RATE', meaning: 'MCP requests per minute per token (default 600).' },
  { name: 'SVC_MCP_BURST', meaning: 'MCP burst per token (default 120).' },
  { name: 'SVC_MCP_TOKEN', meaning: '`svc plugin run` and the plugin entry: the MCP token to use when `--token` is not given.' },
  { name: 'SVC_URL', meaning: 'The plugin\'s HTTP server entry: the base URL of the svc server.' },
];

export function envName(key: keyof Config): string {
  return ENV[key];
}

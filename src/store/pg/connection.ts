import { createHash } from 'node:crypto';
import pg from 'pg';
import { PG_TYPES } from './sql.js';

/** Connecting to PostgreSQL: client settings from an svc database URL, the notification channels and the listener. */

export interface PgSettings {
  /** postgres://user:pass@host:port/db[?sslmode=require][&schema=name] */
  url: string;
  /** Connections in the pool (default 10). */
  poolSize?: number | undefined;
  /** Statement timeout in ms (default 30,000; 0 = none). */
  statementTimeoutMs?: number | undefined;
  /** How long to wait for a pool connection before failing (default 5,000 ms). */
  connectTimeoutMs?: number | undefined;
}

/** Wakes every instance's workers: NOTIFY on this channel after commits that wrote outbox rows or jobs. */
export const WORK_CHANNEL = 'svc_work';

/**
 * The work channel of the store in `schema`: `svc_work` for the database's default search path, else one of
 * its own (svc_work_ and 12 hex digits of the schema name's SHA-256; a channel name is an identifier, at most
 * 63 bytes), so that installs side by side in one database (or a test run's schemas) do not wake each other.
 */
export function workChannel(schema: string | null): string {
  return schema === null ? WORK_CHANNEL : `svc_work_${createHash('sha256').update(schema).digest('hex').slice(0, 12)}`;
}
/** Segment definitions changed (SegmentsRepo notifies in the changing transaction): drop cached segments. */
export const SEGMENTS_CHANNEL = 'svc_segments';
/** A site's web-experience configuration changed (triggers of PostgreSQL migration 8 notify): drop cached decision snapshots. */
export const WEB_CHANNEL = 'svc_web';

/** The advisory-lock key under which migrations run (instances starting together apply them once). */
export const MIGRATE_LOCK = 0x5356_4301;

/**
 * Client settings from an svc database URL. `schema` (ours, not libpq's) puts every
 * table in that schema (created if missing): tests and side-by-side installs use it.
 */
export function pgClientConfig(s: PgSettings): pg.PoolConfig & { schema: string | null } {
  let schema: string | null = null;
  let url = s.url;
  try {
    const u = new URL(s.url);
    const v = u.searchParams.get('schema');
    if (v !== null) {
      if (!/^[a-z_][a-z0-9_]{0,62}$/i.test(v)) throw new Error(`database URL: schema ${JSON.stringify(v)} is not a plain identifier`);
      schema = v;
      u.searchParams.delete('schema');
      url = u.toString();
    }
  } catch (err) {
    if (err instanceof TypeError) throw new Error('database URL: not a valid postgres:// URL');
    throw err;
  }
  const timeout = s.statementTimeoutMs ?? 30_000;
  return {
    connectionString: url,
    max: s.poolSize ?? 10,
    connectionTimeoutMillis: s.connectTimeoutMs ?? 5_000,
    idleTimeoutMillis: 30_000,
    ...(timeout > 0 ? { statement_timeout: timeout } : {}),
    ...(schema !== null ? { options: `-c search_path=${schema}` } : {}),
    types: PG_TYPES,
    application_name: 'svc',
    schema,
  };
}

/**
 * Listens for other instances' commits on one dedicated connection; reconnects
 * with a back-off when the connection drops. Workers poll as well, so a missed
 * notification only delays work.
 */
export class PgListener {
  private client: pg.Client | null = null;
  private stopped = false;
  private retry: NodeJS.Timeout | null = null;

  constructor(
    private readonly config: pg.ClientConfig,
    /** This store's work channel (workChannel). */
    private readonly work: string,
    /**
     * `channel` null: notifications may have been missed (the connection was down); `fromPid`: the
     * backend process that sent the notification.
     */
    private readonly onNotify: (channel: string | null, fromPid?: number) => void,
  ) {}

  start(): void {
    void this.connect(250);
  }

  private async connect(backoff: number): Promise<void> {
    if (this.stopped) return;
    const c = new pg.Client(this.config);
    c.on('error', () => this.reconnect(c, backoff));
    c.on('end', () => this.reconnect(c, backoff));
    c.on('notification', (n) => this.onNotify(n.channel, n.processId));
    try {
      await c.connect();
      await c.query(`LISTEN ${this.work}; LISTEN ${SEGMENTS_CHANNEL}; LISTEN ${WEB_CHANNEL}`);
      this.client = c;
      if (this.stopped) await c.end().catch(() => undefined);
    } catch {
      this.reconnect(c, backoff);
    }
  }

  private reconnect(c: pg.Client, backoff: number): void {
    if (this.client === c) this.client = null;
    c.removeAllListeners('end');
    c.removeAllListeners('notification');
    c.end().catch(() => undefined);
    if (this.stopped || this.retry !== null) return;
    this.retry = setTimeout(() => {
      this.retry = null;
      // Work may have been committed, and segments changed, while the connection was down.
      this.onNotify(null);
      void this.connect(Math.min(backoff * 2, 5_000));
    }, backoff);
    this.retry.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retry !== null) clearTimeout(this.retry);
    const c = this.client;
    this.client = null;
    if (c) {
      c.removeAllListeners('end');
      await c.end().catch(() => undefined);
    }
  }
}

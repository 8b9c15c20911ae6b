import type { Sql } from './sql.js';
import { newId } from './ids.js';
import { whereOf } from './where.js';

export type AdPlatform = 'meta' | 'google_ads';
export const AD_PLATFORMS: readonly AdPlatform[] = ['meta', 'google_ads'];

export interface AdConnectionRow {
  id: string;
  site_id: string;
  platform: AdPlatform;
  name: string | null;
  /** Non-secret settings, JSON. */
  config: string;
  /** The credentials, sealed JSON. */
  secrets_enc: string;
  token_enc: string | null;
  token_expires_at: number | null;
  enabled: number;
  created_at: number;
  updated_at: number;
}

export interface AdJobRow {
  id: string;
  site_id: string;
  connection_id: string;
  conversion_id: string;
  payload: string;
  state: 'pending' | 'delivered' | 'failed';
  attempts: number;
  next_attempt_at: number;
  last_status: number | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
  delivered_at: number | null;
}

/** What a session saw that the ad platforms match on. */
export interface SessionSignalsRow {
  ip: string | null;
  user_agent: string | null;
  landing_url: string | null;
  fbclid: string | null;
  fbclid_at: number | null;
  gclid: string | null;
  first_seen: number;
}

/** A failed attempt of a job: failed for good (`final`) or due again at `nextAttemptAt`. */
export interface FailedAttempt {
  final: boolean;
  nextAttemptAt: number;
  status: number | null;
  error: string;
  now: number;
}

function failParams(id: string, r: FailedAttempt): unknown[] {
  return [r.final ? 'failed' : 'pending', r.nextAttemptAt, r.status, r.error, r.now, id];
}

const CONNECTION_BY_ID = 'SELECT * FROM ad_connections WHERE id = ?';
const INSERT_JOB = `INSERT INTO ad_jobs (id, site_id, connection_id, conversion_id, payload, state, attempts, next_attempt_at, created_at, updated_at)
  VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?) ON CONFLICT (connection_id, conversion_id) DO NOTHING`;
const DUE = `SELECT * FROM ad_jobs WHERE connection_id = ? AND state = 'pending' AND next_attempt_at <= ?
  ORDER BY next_attempt_at, id LIMIT ?`;
const SUCCEED =
  "UPDATE ad_jobs SET state = 'delivered', attempts = attempts + 1, last_status = ?, last_error = NULL, delivered_at = ?, updated_at = ? WHERE id = ?";
// last_status is cast: in a set of failures without any status (all refused locally) PostgreSQL's set-based
// rewrite (pg/batch.ts) would otherwise carry the column as text.
const FAIL =
  'UPDATE ad_jobs SET state = ?, attempts = attempts + 1, next_attempt_at = ?, last_status = CAST(? AS integer), last_error = ?, updated_at = ? WHERE id = ?';

/** Ad-platform connections, their conversion jobs (the fan-out outbox) and the signals jobs are built from. */
export class AdPlatformsRepo {
  /**
   * @param enqueued counts jobs written by this process in `adJobs` (shared by every repository set of
   *   the store); the worker compares it after each commit.
   */
  constructor(
    private readonly x: Sql,
    private readonly enqueued: { outbox: number; adJobs: number },
  ) {}

  /** Writes: call inside a write operation. */
  async create(c: { siteId: string; platform: AdPlatform; name: string | null; config: unknown; secretsEnc: string }): Promise<AdConnectionRow> {
    const id = newId(c.platform === 'meta' ? 'adm' : 'adg');
    const now = Date.now();
    await this.x.run(
      `INSERT INTO ad_connections (id, site_id, platform, name, config, secrets_enc, enabled, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?)`,
      [id, c.siteId, c.platform, c.name, JSON.stringify(c.config), c.secretsEnc, now, now],
    );
    return (await this.connection(id))!;
  }

  connection(id: string): Promise<AdConnectionRow | undefined> {
    return this.x.get<AdConnectionRow>(CONNECTION_BY_ID, [id]);
  }

  list(siteId?: string): Promise<AdConnectionRow[]> {
    return siteId === undefined
      ? this.x.all<AdConnectionRow>('SELECT * FROM ad_connections ORDER BY created_at, id')
      : this.x.all<AdConnectionRow>('SELECT * FROM ad_connections WHERE site_id = ? ORDER BY created_at, id', [siteId]);
  }

  /** Ids of the enabled connections of a site: hot path of every conversion. */
  async enabledIds(siteId: string): Promise<string[]> {
    const rows = await this.x.all<{ id: string }>('SELECT id FROM ad_connections WHERE site_id = ? AND enabled = 1', [siteId]);
    return rows.map((r) => r.id);
  }

  enabled(): Promise<AdConnectionRow[]> {
    return this.x.all<AdConnectionRow>('SELECT * FROM ad_connections WHERE enabled = 1');
  }

  /** Writes: call inside a write operation. */
  async setEnabled(id: string, enabled: boolean): Promise<boolean> {
    return (await this.x.run('UPDATE ad_connections SET enabled = ?, updated_at = ? WHERE id = ?', [enabled ? 1 : 0, Date.now(), id])).changes > 0;
  }

  /**
   * Removes a connection; its jobs and health log stay for audit, pending jobs fail for good.
   * Writes: call inside a write operation.
   */
  async remove(id: string): Promise<boolean> {
    const now = Date.now();
    const removed = (await this.x.run('DELETE FROM ad_connections WHERE id = ?', [id])).changes > 0;
    if (removed) {
      await this.x.run("UPDATE ad_jobs SET state = 'failed', last_error = ?, updated_at = ? WHERE connection_id = ? AND state = 'pending'", [
        'connection removed',
        now,
        id,
      ]);
    }
    return removed;
  }

  async saveToken(id: string, tokenEnc: string | null, expiresAt: number | null): Promise<void> {
    await this.x.run('UPDATE ad_connections SET token_enc = ?, token_expires_at = ? WHERE id = ?', [tokenEnc, expiresAt, id]);
  }

  /** One job per (connection, conversion); a second insert of the same pair is a no-op. Writes: call inside a write operation. */
  async insertJob(j: { siteId: string; connectionId: string; conversionId: string; payload: string; now: number }): Promise<void> {
    await this.x.run(INSERT_JOB, [newId('adj'), j.siteId, j.connectionId, j.conversionId, j.payload, j.now, j.now, j.now]);
    this.enqueued.adJobs++;
  }

  due(connectionId: string, now: number, limit: number): Promise<AdJobRow[]> {
    return this.x.all<AdJobRow>(DUE, [connectionId, now, limit]);
  }

  async nextDue(connectionId: string): Promise<number | null> {
    const row = await this.x.get<{ t: number | null }>(
      "SELECT min(next_attempt_at) AS t FROM ad_jobs WHERE connection_id = ? AND state = 'pending'",
      [connectionId],
    );
    return row?.t ?? null;
  }

  job(id: string): Promise<AdJobRow | undefined> {
    return this.x.get<AdJobRow>('SELECT * FROM ad_jobs WHERE id = ?', [id]);
  }

  async markDelivered(id: string, status: number, now: number): Promise<void> {
    await this.x.run(SUCCEED, [status, now, now, id]);
  }

  async markFailedAttempt(
    id: string,
    r: FailedAttempt,
  ): Promise<void> {
    await this.x.run(FAIL, failParams(id, r));
  }

  /**
   * markDelivered of several jobs: one `UPDATE … FROM unnest` on PostgreSQL,
   * the prepared update once per job on SQLite. Writes: call inside a write operation.
   */
  async markDeliveredMany(rows: readonly { id: string; status: number }[], now: number): Promise<void> {
    if (rows.length === 0) return;
    await this.x.runEach(
      SUCCEED,
      rows.map((r) => [r.status, now, now, r.id]),
    );
  }

  /** markFailedAttempt of several jobs, set-based like markDeliveredMany. Writes: call inside a write operation. */
  async markFailedMany(rows: readonly ({ id: string } & FailedAttempt)[]): Promise<void> {
    if (rows.length === 0) return;
    await this.x.runEach(
      FAIL,
      rows.map((r) => failParams(r.id, r)),
    );
  }

  /** Puts a job that failed for good back in the queue (after credentials were fixed, say); it keeps its event id. */
  async requeue(id: string, now: number): Promise<boolean> {
    return (await this.x.run("UPDATE ad_jobs SET state = 'pending', next_attempt_at = ?, updated_at = ? WHERE id = ? AND state = 'failed'", [now, now, id]))
      .changes > 0;
  }

  /** Requeues every failed job of a connection; returns how many. Writes: call inside a write operation. */
  async requeueFailed(connectionId: string, now: number): Promise<number> {
    const info = await this.x.run(
      "UPDATE ad_jobs SET state = 'pending', next_attempt_at = ?, updated_at = ? WHERE connection_id = ? AND state = 'failed'",
      [now, now, connectionId],
    );
    return info.changes;
  }

  /** Replaces the sealed credentials and forgets the cached access token. Writes: call inside a write operation. */
  async setSecrets(id: string, secretsEnc: string): Promise<void> {
    await this.x.run('UPDATE ad_connections SET secrets_enc = ?, token_enc = NULL, token_expires_at = NULL, updated_at = ? WHERE id = ?', [
      secretsEnc,
      Date.now(),
      id,
    ]);
  }

  sessionSignals(siteId: string, sessionId: string): Promise<SessionSignalsRow | undefined> {
    return this.x.get<SessionSignalsRow>(
      'SELECT ip, user_agent, landing_url, fbclid, fbclid_at, gclid, first_seen FROM sessions WHERE site_id = ? AND id = ?',
      [siteId, sessionId],
    );
  }

  jobs(f: { siteId?: string | undefined; connectionId?: string | undefined; state?: AdJobRow['state'] | undefined; limit: number }): Promise<AdJobRow[]> {
    const w = whereOf([
      ['site_id = ?', f.siteId],
      ['connection_id = ?', f.connectionId],
      ['state = ?', f.state],
    ]);
    const sql = `SELECT * FROM (SELECT * FROM ad_jobs ${w.sql} ORDER BY created_at DESC, id DESC LIMIT ?) AS newest ORDER BY created_at, id`;
    return this.x.all<AdJobRow>(sql, [...w.params, f.limit]);
  }
}

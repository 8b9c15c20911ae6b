import type { Db } from './db.js';
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

/** Ad-platform connections, their conversion jobs (the fan-out outbox) and the signals jobs are built from. */
export class AdPlatformsRepo {
  private readonly q;
  /** Jobs written by this process; the worker compares it after each commit. */
  enqueued = 0;

  constructor(private readonly db: Db) {
    this.q = {
      insert: db.prepare(
        `INSERT INTO ad_connections (id, site_id, platform, name, config, secrets_enc, enabled, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?)`,
      ),
      get: db.prepare<[string], AdConnectionRow>('SELECT * FROM ad_connections WHERE id = ?'),
      bySite: db.prepare<[string], AdConnectionRow>('SELECT * FROM ad_connections WHERE site_id = ? ORDER BY created_at, id'),
      all: db.prepare<[], AdConnectionRow>('SELECT * FROM ad_connections ORDER BY created_at, id'),
      enabledIds: db.prepare<[string], { id: string }>('SELECT id FROM ad_connections WHERE site_id = ? AND enabled = 1'),
      enabled: db.prepare<[], AdConnectionRow>('SELECT * FROM ad_connections WHERE enabled = 1'),
      remove: db.prepare('DELETE FROM ad_connections WHERE id = ?'),
      failPending: db.prepare(
        "UPDATE ad_jobs SET state = 'failed', last_error = ?, updated_at = ? WHERE connection_id = ? AND state = 'pending'",
      ),
      setEnabled: db.prepare('UPDATE ad_connections SET enabled = ?, updated_at = ? WHERE id = ?'),
      saveToken: db.prepare('UPDATE ad_connections SET token_enc = ?, token_expires_at = ? WHERE id = ?'),
      insertJob: db.prepare(
        `INSERT INTO ad_jobs (id, site_id, connection_id, conversion_id, payload, state, attempts, next_attempt_at, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?) ON CONFLICT (connection_id, conversion_id) DO NOTHING`,
      ),
      due: db.prepare<[string, number, number], AdJobRow>(
        `SELECT * FROM ad_jobs WHERE connection_id = ? AND state = 'pending' AND next_attempt_at <= ?
          ORDER BY next_attempt_at, id LIMIT ?`,
      ),
      nextDue: db.prepare<[string], { t: number | null }>(
        "SELECT min(next_attempt_at) AS t FROM ad_jobs WHERE connection_id = ? AND state = 'pending'",
      ),
      job: db.prepare<[string], AdJobRow>('SELECT * FROM ad_jobs WHERE id = ?'),
      succeed: db.prepare(
        "UPDATE ad_jobs SET state = 'delivered', attempts = attempts + 1, last_status = ?, last_error = NULL, delivered_at = ?, updated_at = ? WHERE id = ?",
      ),
      fail: db.prepare(
        'UPDATE ad_jobs SET state = ?, attempts = attempts + 1, next_attempt_at = ?, last_status = ?, last_error = ?, updated_at = ? WHERE id = ?',
      ),
      requeue: db.prepare(
        "UPDATE ad_jobs SET state = 'pending', next_attempt_at = ?, updated_at = ? WHERE id = ? AND state = 'failed'",
      ),
      requeueConnection: db.prepare(
        "UPDATE ad_jobs SET state = 'pending', next_attempt_at = ?, updated_at = ? WHERE connection_id = ? AND state = 'failed'",
      ),
      setSecrets: db.prepare('UPDATE ad_connections SET secrets_enc = ?, token_enc = NULL, token_expires_at = NULL, updated_at = ? WHERE id = ?'),
      signals: db.prepare<[string, string], SessionSignalsRow>(
        'SELECT ip, user_agent, landing_url, fbclid, fbclid_at, gclid, first_seen FROM sessions WHERE site_id = ? AND id = ?',
      ),
    };
  }

  create(c: { siteId: string; platform: AdPlatform; name: string | null; config: unknown; secretsEnc: string }): AdConnectionRow {
    const id = newId(c.platform === 'meta' ? 'adm' : 'adg');
    const now = Date.now();
    this.q.insert.run(id, c.siteId, c.platform, c.name, JSON.stringify(c.config), c.secretsEnc, now, now);
    return this.q.get.get(id)!;
  }

  connection(id: string): AdConnectionRow | undefined {
    return this.q.get.get(id);
  }

  list(siteId?: string): AdConnectionRow[] {
    return siteId === undefined ? this.q.all.all() : this.q.bySite.all(siteId);
  }

  /** Ids of the enabled connections of a site: hot path of every conversion. */
  enabledIds(siteId: string): string[] {
    return this.q.enabledIds.all(siteId).map((r) => r.id);
  }

  enabled(): AdConnectionRow[] {
    return this.q.enabled.all();
  }

  setEnabled(id: string, enabled: boolean): boolean {
    return this.q.setEnabled.run(enabled ? 1 : 0, Date.now(), id).changes > 0;
  }

  /** Removes a connection; its jobs and health log stay for audit, pending jobs fail for good. */
  remove(id: string): boolean {
    const now = Date.now();
    const removed = this.q.remove.run(id).changes > 0;
    if (removed) this.q.failPending.run('connection removed', now, id);
    return removed;
  }

  saveToken(id: string, tokenEnc: string | null, expiresAt: number | null): void {
    this.q.saveToken.run(tokenEnc, expiresAt, id);
  }

  /** One job per (connection, conversion); a second insert of the same pair is a no-op. */
  insertJob(j: { siteId: string; connectionId: string; conversionId: string; payload: string; now: number }): void {
    this.q.insertJob.run(newId('adj'), j.siteId, j.connectionId, j.conversionId, j.payload, j.now, j.now, j.now);
    this.enqueued++;
  }

  due(connectionId: string, now: number, limit: number): AdJobRow[] {
    return this.q.due.all(connectionId, now, limit);
  }

  nextDue(connectionId: string): number | null {
    return this.q.nextDue.get(connectionId)?.t ?? null;
  }

  job(id: string): AdJobRow | undefined {
    return this.q.job.get(id);
  }

  markDelivered(id: string, status: number, now: number): void {
    this.q.succeed.run(status, now, now, id);
  }

  markFailedAttempt(id: string, r: { final: boolean; nextAttemptAt: number; status: number | null; error: string; now: number }): void {
    this.q.fail.run(r.final ? 'failed' : 'pending', r.nextAttemptAt, r.status, r.error, r.now, id);
  }

  /** Puts a job that failed for good back in the queue (after credentials were fixed, say); it keeps its event id. */
  requeue(id: string, now: number): boolean {
    return this.q.requeue.run(now, now, id).changes > 0;
  }

  /** Requeues every failed job of a connection; returns how many. */
  requeueFailed(connectionId: string, now: number): number {
    return this.q.requeueConnection.run(now, now, connectionId).changes;
  }

  /** Replaces the sealed credentials and forgets the cached access token. */
  setSecrets(id: string, secretsEnc: string): void {
    this.q.setSecrets.run(secretsEnc, Date.now(), id);
  }

  sessionSignals(siteId: string, sessionId: string): SessionSignalsRow | undefined {
    return this.q.signals.get(siteId, sessionId);
  }

  jobs(f: { siteId?: string | undefined; connectionId?: string | undefined; state?: AdJobRow['state'] | undefined; limit: number }): AdJobRow[] {
    const w = whereOf([
      ['site_id = ?', f.siteId],
      ['connection_id = ?', f.connectionId],
      ['state = ?', f.state],
    ]);
    const sql = `SELECT * FROM (SELECT * FROM ad_jobs ${w.sql} ORDER BY created_at DESC, id DESC LIMIT ?) ORDER BY created_at, id`;
    return this.db.prepare(sql).all(...w.params, f.limit) as AdJobRow[];
  }
}

import type { Db } from './db.js';
import { newId } from './ids.js';
import { whereOf, type Filter } from './where.js';

export interface DestinationRow {
  id: string;
  site_id: string;
  url: string;
  secret_enc: string | null;
  events: string;
  enabled: number;
  disabled_reason: string | null;
  description: string | null;
  api_key_id: string | null;
  consecutive_failures: number;
  first_failure_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface DeliveryRow {
  id: string;
  site_id: string;
  destination_id: string;
  outbox_id: number | null;
  event_type: string;
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

export interface HealthRow {
  id: number;
  site_id: string;
  integration: string;
  destination_id: string;
  delivery_id: string | null;
  event_type: string | null;
  kind: 'attempt' | 'test' | 'replay' | 'disabled' | 'enabled';
  attempt: number | null;
  ok: number;
  status: number | null;
  latency_ms: number | null;
  error_class: string | null;
  message: string | null;
  response_excerpt: string | null;
  created_at: number;
}

export type HealthInput = Omit<HealthRow, 'id' | 'ok'> & { ok: boolean };

export interface DeliveryFilter {
  siteId?: string | undefined;
  destinationId?: string | undefined;
  eventType?: string | undefined;
  failedOnly?: boolean | undefined;
  since?: number | undefined;
  until?: number | undefined;
  limit?: number | undefined;
}

/** Destinations, deliveries and the integration health log. */
export class WebhooksRepo {
  private readonly q;

  constructor(private readonly db: Db) {
    this.q = {
      insertDest: db.prepare(
        `INSERT INTO destinations (id, site_id, url, secret_enc, events, enabled, description, api_key_id, created_at, updated_at)
         VALUES (@id, @site_id, @url, @secret_enc, @events, 1, @description, @api_key_id, @created_at, @created_at)`,
      ),
      dest: db.prepare<[string], DestinationRow>('SELECT * FROM destinations WHERE id = ?'),
      enabledDests: db.prepare<[], DestinationRow>('SELECT * FROM destinations WHERE enabled = 1'),
      pendingOutbox: db.prepare<[number], { id: number; site_id: string; event_type: string; payload: string; created_at: number }>(
        "SELECT id, site_id, event_type, payload, created_at FROM outbox WHERE id > (SELECT last_id FROM outbox_cursor WHERE name = 'webhooks') ORDER BY id LIMIT ?",
      ),
      advanceCursor: db.prepare("UPDATE outbox_cursor SET last_id = ? WHERE name = 'webhooks' AND last_id < ?"),
      insertDelivery: db.prepare(
        `INSERT INTO deliveries (id, site_id, destination_id, outbox_id, event_type, payload, state, attempts, next_attempt_at, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?)`,
      ),
      due: db.prepare<[string, number, number], DeliveryRow>(
        `SELECT * FROM deliveries WHERE destination_id = ? AND state = 'pending' AND next_attempt_at <= ?
          ORDER BY next_attempt_at, id LIMIT ?`,
      ),
      delivery: db.prepare<[string], DeliveryRow>('SELECT * FROM deliveries WHERE id = ?'),
      succeed: db.prepare(
        "UPDATE deliveries SET state = 'delivered', attempts = attempts + 1, last_status = ?, last_error = NULL, delivered_at = ?, updated_at = ? WHERE id = ?",
      ),
      fail: db.prepare(
        'UPDATE deliveries SET state = ?, attempts = attempts + 1, next_attempt_at = ?, last_status = ?, last_error = ?, updated_at = ? WHERE id = ?',
      ),
      destOk: db.prepare('UPDATE destinations SET consecutive_failures = 0, first_failure_at = NULL WHERE id = ? AND consecutive_failures > 0'),
      destFail: db.prepare(
        'UPDATE destinations SET consecutive_failures = consecutive_failures + 1, first_failure_at = coalesce(first_failure_at, ?) WHERE id = ? RETURNING consecutive_failures, first_failure_at, enabled',
      ),
      disable: db.prepare('UPDATE destinations SET enabled = 0, disabled_reason = ?, updated_at = ? WHERE id = ? AND enabled = 1'),
      health: db.prepare(
        `INSERT INTO health_log (site_id, integration, destination_id, delivery_id, event_type, kind, attempt, ok, status, latency_ms, error_class, message, response_excerpt, created_at)
         VALUES (@site_id, @integration, @destination_id, @delivery_id, @event_type, @kind, @attempt, @ok, @status, @latency_ms, @error_class, @message, @response_excerpt, @created_at)`,
      ),
      requeue: db.prepare(
        "UPDATE deliveries SET state = 'pending', next_attempt_at = ?, updated_at = ? WHERE id = ? AND state = 'failed'",
      ),
    };
  }

  createDestination(d: {
    siteId: string;
    url: string;
    secretEnc: string | null;
    events: string[];
    description?: string | null | undefined;
    apiKeyId?: string | null | undefined;
  }): DestinationRow {
    const id = newId('dst');
    this.q.insertDest.run({
      id,
      site_id: d.siteId,
      url: d.url,
      secret_enc: d.secretEnc,
      events: JSON.stringify(d.events),
      description: d.description ?? null,
      api_key_id: d.apiKeyId ?? null,
      created_at: Date.now(),
    });
    return this.q.dest.get(id)!;
  }

  destination(id: string): DestinationRow | undefined {
    return this.q.dest.get(id);
  }

  listDestinations(filter: { siteId?: string | undefined; apiKeyId?: string | undefined } = {}): DestinationRow[] {
    const w = whereOf([
      ['site_id = ?', filter.siteId],
      ['api_key_id = ?', filter.apiKeyId],
    ]);
    const sql = `SELECT * FROM destinations ${w.sql} ORDER BY created_at, id`;
    return this.db.prepare(sql).all(...w.params) as DestinationRow[];
  }

  enabledDestinations(): DestinationRow[] {
    return this.q.enabledDests.all();
  }

  updateDestination(
    id: string,
    patch: { url?: string; secretEnc?: string | null; events?: string[]; enabled?: boolean; description?: string | null },
  ): DestinationRow | undefined {
    const sets: string[] = [];
    const params: unknown[] = [];
    if (patch.url !== undefined) {
      sets.push('url = ?');
      params.push(patch.url);
    }
    if (patch.secretEnc !== undefined) {
      sets.push('secret_enc = ?');
      params.push(patch.secretEnc);
    }
    if (patch.events !== undefined) {
      sets.push('events = ?');
      params.push(JSON.stringify(patch.events));
    }
    if (patch.description !== undefined) {
      sets.push('description = ?');
      params.push(patch.description);
    }
    if (patch.enabled !== undefined) {
      sets.push('enabled = ?', 'disabled_reason = ?');
      params.push(patch.enabled ? 1 : 0, patch.enabled ? null : 'disabled by an operator');
      if (patch.enabled) sets.push('consecutive_failures = 0', 'first_failure_at = NULL');
    }
    sets.push('updated_at = ?');
    params.push(Date.now(), id);
    this.db.prepare(`UPDATE destinations SET ${sets.join(', ')} WHERE id = ?`).run(...params);
    return this.destination(id);
  }

  /** Removes a destination; its delivery history and health log stay for audit. Pending deliveries fail for good. */
  removeDestination(id: string): boolean {
    const now = Date.now();
    const info = this.db.prepare('DELETE FROM destinations WHERE id = ?').run(id);
    this.db
      .prepare("UPDATE deliveries SET state = 'failed', last_error = 'destination removed', updated_at = ? WHERE destination_id = ? AND state = 'pending'")
      .run(now, id);
    return info.changes > 0;
  }

  pendingOutbox(limit: number) {
    return this.q.pendingOutbox.all(limit);
  }

  /**
   * Marks every outbox row up to `outboxId` as fanned out. The outbox is
   * append-only (AUTOINCREMENT ids, written by one writer at a time), so a
   * cursor replaces a per-row update and a partial index on the hot path.
   */
  advanceCursor(outboxId: number): void {
    this.q.advanceCursor.run(outboxId, outboxId);
  }

  insertDelivery(d: { siteId: string; destinationId: string; outboxId: number | null; eventType: string; payload: string; now: number }): string {
    const id = newId('dlv');
    this.q.insertDelivery.run(id, d.siteId, d.destinationId, d.outboxId, d.eventType, d.payload, d.now, d.now, d.now);
    return id;
  }

  due(destinationId: string, now: number, limit: number): DeliveryRow[] {
    return this.q.due.all(destinationId, now, limit);
  }

  delivery(id: string): DeliveryRow | undefined {
    return this.q.delivery.get(id);
  }

  markDelivered(id: string, status: number, now: number): void {
    this.q.succeed.run(status, now, now, id);
  }

  markFailedAttempt(id: string, r: { final: boolean; nextAttemptAt: number; status: number | null; error: string; now: number }): void {
    this.q.fail.run(r.final ? 'failed' : 'pending', r.nextAttemptAt, r.status, r.error, r.now, id);
  }

  destinationSucceeded(id: string): void {
    this.q.destOk.run(id);
  }

  /** Counts a failed attempt against the destination; returns the streak. */
  destinationFailed(id: string, now: number): { consecutive: number; since: number; enabled: boolean } | undefined {
    const row = this.q.destFail.get(now, id) as { consecutive_failures: number; first_failure_at: number; enabled: number } | undefined;
    return row ? { consecutive: row.consecutive_failures, since: row.first_failure_at, enabled: row.enabled === 1 } : undefined;
  }

  disableDestination(id: string, reason: string, now: number): boolean {
    return this.q.disable.run(reason, now, id).changes > 0;
  }

  /** Puts failed deliveries back in the queue (replay through the dispatcher). */
  requeue(id: string, now: number): boolean {
    return this.q.requeue.run(now, now, id).changes > 0;
  }

  log(h: HealthInput): void {
    this.q.health.run({ ...h, ok: h.ok ? 1 : 0 });
  }

  deliveries(f: DeliveryFilter): DeliveryRow[] {
    const { where, params } = deliveryWhere(f);
    return this.db
      .prepare(`SELECT * FROM deliveries ${where} ORDER BY created_at, id LIMIT ?`)
      .all(...params, f.limit ?? 1_000_000) as DeliveryRow[];
  }

  /** The newest `limit` entries of the integration health log (oldest first); `integration` names one or several integrations. */
  healthLog(f: DeliveryFilter & { integration?: string | readonly string[] | undefined }): HealthRow[] {
    const names = typeof f.integration === 'string' ? [f.integration] : f.integration;
    const w = whereOf([
      ...deliveryFilters(f),
      [`integration IN (${(names ?? []).map(() => '?').join(', ')})`, names],
      ['ok = 0', f.failedOnly],
    ]);
    const sql = `SELECT * FROM (SELECT * FROM health_log ${w.sql} ORDER BY id DESC LIMIT ?) ORDER BY id`;
    return this.db.prepare(sql).all(...w.params, f.limit ?? 100) as HealthRow[];
  }
}

/** The filters a delivery list and the health log share (time bounds on created_at). */
function deliveryFilters(f: DeliveryFilter): Filter[] {
  return [
    ['site_id = ?', f.siteId],
    ['destination_id = ?', f.destinationId],
    ['event_type = ?', f.eventType],
    ['created_at >= ?', f.since],
    ['created_at < ?', f.until],
  ];
}

function deliveryWhere(f: DeliveryFilter): { where: string; params: unknown[] } {
  const w = whereOf([...deliveryFilters(f), ["state = 'failed'", f.failedOnly]]);
  return { where: w.sql, params: w.params };
}

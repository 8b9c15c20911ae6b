import type { Sql } from './sql.js';
import { newId, newIds } from './ids.js';
import { whereOf, type Filter } from './where.js';
import type { WriterCaches } from './writer-caches.js';
import { PendingAsk } from './pending-ask.js';

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
  /** svc: X-SVC-Signature only; standard: Standard Webhooks headers as well. */
  signing_mode: 'svc' | 'standard';
  /** The sealed key before the last rotation, valid until previous_secret_expires_at (ms). */
  previous_secret_enc: string | null;
  previous_secret_expires_at: number | null;
  secret_rotated_at: number | null;
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

/** What `due` reads of a delivery: what sending it and recording the attempt's outcome need. */
export type DueRow = Pick<DeliveryRow, 'id' | 'site_id' | 'destination_id' | 'event_type' | 'payload' | 'state' | 'attempts' | 'next_attempt_at'>;

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

/** What one outbound attempt gave (the sender's AttemptResult): the health log's outcome columns. */
export interface AttemptOutcome {
  ok: boolean;
  status: number | null;
  latencyMs: number;
  errorClass: string | null;
  message: string | null;
  excerpt: string | null;
}

/** Which attempt a health-log row is about: everything but its outcome and time. */
export type AttemptWhere = Pick<HealthInput, 'site_id' | 'integration' | 'destination_id' | 'delivery_id' | 'event_type' | 'kind' | 'attempt'>;

export interface DeliveryFilter {
  siteId?: string | undefined;
  destinationId?: string | undefined;
  eventType?: string | undefined;
  failedOnly?: boolean | undefined;
  since?: number | undefined;
  until?: number | undefined;
  limit?: number | undefined;
}

const INSERT_DESTINATION = `INSERT INTO destinations (id, site_id, url, secret_enc, events, enabled, description, api_key_id, signing_mode, created_at, updated_at)
  VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?)`;
const DESTINATION_BY_ID = 'SELECT * FROM destinations WHERE id = ?';
const PENDING_OUTBOX =
  "SELECT id, site_id, event_type, payload, created_at FROM outbox WHERE id > (SELECT last_id FROM outbox_cursor WHERE name = 'webhooks') ORDER BY id LIMIT ?";
const ADVANCE_CURSOR = "UPDATE outbox_cursor SET last_id = ? WHERE name = 'webhooks' AND last_id < ?";
// PostgreSQL: several instances fan out at once, and sequence ids commit out of order, so rows are
// claimed (locked, skipping rows another instance holds) and marked one by one.
const CLAIM_OUTBOX_PG =
  'SELECT id, site_id, event_type, payload, created_at FROM outbox WHERE dispatched_at IS NULL ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED';
/** The cursor and the outbox's last id, for skipOutbox (max(id) reads the table's last page only). */
const OUTBOX_SPAN = "SELECT (SELECT last_id FROM outbox_cursor WHERE name = 'webhooks') AS cursor, (SELECT max(id) FROM outbox) AS last";
const SKIP_OUTBOX_PG =
  'UPDATE outbox SET dispatched_at = ? WHERE id IN (SELECT id FROM outbox WHERE dispatched_at IS NULL ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED)';
const MARK_DISPATCHED_PG = 'UPDATE outbox SET dispatched_at = ? WHERE id = ANY(?::bigint[])';
const INSERT_DELIVERY = `INSERT INTO deliveries (id, site_id, destination_id, outbox_id, event_type, payload, state, attempts, next_attempt_at, created_at, updated_at)
  VALUES (?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?)`;
// The columns a lane sends and records a delivery with (DueRow): half of a delivery's columns, read for every delivery a drain sends.
const DUE_COLUMNS = 'id, site_id, destination_id, event_type, payload, state, attempts, next_attempt_at';
const DUE = `SELECT ${DUE_COLUMNS} FROM deliveries WHERE destination_id = ? AND state = 'pending' AND next_attempt_at <= ?
  ORDER BY next_attempt_at, id LIMIT ?`;
// The same rows past a point of the order above: the next page of a lane's drain, without re-reading the page before.
const DUE_AFTER = `SELECT ${DUE_COLUMNS} FROM deliveries WHERE destination_id = ? AND state = 'pending' AND next_attempt_at <= ?
  AND (next_attempt_at, id) > (?, ?) ORDER BY next_attempt_at, id LIMIT ?`;
const SUCCEED =
  "UPDATE deliveries SET state = 'delivered', attempts = attempts + 1, last_status = ?, last_error = NULL, delivered_at = ?, updated_at = ? WHERE id = ?";
const FAIL = 'UPDATE deliveries SET state = ?, attempts = attempts + 1, next_attempt_at = ?, last_status = ?, last_error = ?, updated_at = ? WHERE id = ?';
const DESTINATION_OK = 'UPDATE destinations SET consecutive_failures = 0, first_failure_at = NULL WHERE id = ? AND consecutive_failures > 0';
const DESTINATION_FAIL =
  'UPDATE destinations SET consecutive_failures = consecutive_failures + 1, first_failure_at = coalesce(first_failure_at, ?) WHERE id = ? RETURNING consecutive_failures, first_failure_at, enabled';
const DISABLE = 'UPDATE destinations SET enabled = 0, disabled_reason = ?, updated_at = ? WHERE id = ? AND enabled = 1';
/** The event types a site's enabled destinations subscribe to, each destination's JSON list (SQLite: WebhooksRepo.receives). */
const SUBSCRIBED_EVENTS = 'SELECT events FROM destinations WHERE site_id = ? AND enabled = 1';
/** PostgreSQL: the same question asked under the shared destinations lock, with a snapshot taken after it (migration 18). */
const RECEIVES_PG = 'SELECT svc_destination_receives(?, ?) AS yes';
/** PostgreSQL: the exclusive side of that lock, taken by every change that can make a destination receive an event type. */
const DESTINATIONS_CHANGING_PG = 'SELECT svc_destinations_changing() AS done';
const INSERT_HEALTH = `INSERT INTO health_log (site_id, integration, destination_id, delivery_id, event_type, kind, attempt, ok, status, latency_ms, error_class, message, response_excerpt, created_at)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
const REQUEUE = "UPDATE deliveries SET state = 'pending', next_attempt_at = ?, updated_at = ? WHERE id = ? AND state = 'failed'";

/** A place in a destination's due order (next_attempt_at, then id): where the next page of `due` starts. */
export interface DueKey {
  at: number;
  id: string;
}

/** A delivery to create: one outbox row for one subscribed destination. */
export interface NewDelivery {
  siteId: string;
  destinationId: string;
  outboxId: number | null;
  eventType: string;
  payload: string;
  now: number;
}

export interface OutboxRow {
  id: number;
  site_id: string;
  event_type: string;
  payload: string;
  created_at: number;
}

/** Destinations, deliveries and the integration health log. */
export class WebhooksRepo {
  /**
   * @param caches the event types each site's enabled destinations subscribe to (SQLite writer only); every change of
   *   a destination drops them.
   */
  constructor(
    private readonly x: Sql,
    private readonly enqueued: { deliveries: number },
    private readonly caches?: WriterCaches,
  ) {}

  /**
   * Whether an enabled destination of the site subscribes to `eventType` (its events name it, or `all`): a
   * behavioural event writes its outbox row only then. Call inside the write operation that would write the row,
   * before writing it. Exact for every destination change committed before that operation's commit:
   * - SQLite: one writer commits at a time, so a read inside the operation sees every change committed before it;
   *   with the writer's caches on, the site's subscribed types are read once and kept (an event costs no statement),
   *   dropped by every change of a destination in this process (`changed`) and by another connection's commit.
   * - PostgreSQL: svc_destination_receives takes a lock shared with every asking transaction and exclusive to a
   *   change that can make a destination receive (`changed(true)`), held to each one's commit, and reads after it:
   *   a change that commits before the asking transaction does is seen. The operations of a group commit ask it
   *   together (each event of the group, one statement wave): an ask for the site and type of one still unanswered in
   *   this transaction shares its answer (the statement the batch layer would send for both is the same one; nothing
   *   of the ask is made again per event). An ask after the answer came, or after a destination change of this
   *   transaction (`changed`), asks anew.
   */
  receives(siteId: string, eventType: string): Promise<boolean> {
    if (this.x.dialect !== 'pg') return this.receivesHere(siteId, eventType);
    return this.asking.ask(siteId, eventType, () => this.x.get<{ yes: boolean }>(RECEIVES_PG, [siteId, eventType]).then((r) => r?.yes === true));
  }

  /** PostgreSQL: the subscriptions ask of this transaction not answered yet (see receives). */
  private readonly asking = new PendingAsk<boolean>();

  /** receives on SQLite: the writer's caches, else the destinations read. */
  private async receivesHere(siteId: string, eventType: string): Promise<boolean> {
    const caches = this.caches;
    let types = caches?.enabled ? caches.destinationTypes.get(siteId) : undefined;
    if (types === undefined) {
      const rows = await this.x.all<{ events: string }>(SUBSCRIBED_EVENTS, [siteId]);
      const set = new Set<string>();
      for (const r of rows) for (const t of JSON.parse(r.events) as string[]) set.add(t);
      types = set;
      if (caches?.enabled) {
        if (caches.destinationTypes.size >= 10_000) caches.destinationTypes.clear();
        caches.destinationTypes.set(siteId, types);
      }
    }
    return types.has('all') || types.has(eventType);
  }

  /**
   * A destination is about to change (in this write operation): the cached subscriptions go (SQLite); with
   * `receiving` (a destination created, enabled or subscribed anew) on PostgreSQL, the exclusive side of the
   * lock `receives` shares is taken first, so the change and every transaction that asked are ordered by commit.
   */
  private async changed(receiving: boolean): Promise<void> {
    this.caches?.destinationTypes.clear();
    this.asking.forget();
    if (receiving && this.x.dialect === 'pg') await this.x.get(DESTINATIONS_CHANGING_PG);
  }

  /** Writes: call inside a write operation. */
  async createDestination(d: {
    siteId: string;
    url: string;
    secretEnc: string | null;
    events: string[];
    description?: string | null | undefined;
    apiKeyId?: string | null | undefined;
    signingMode?: DestinationRow['signing_mode'] | undefined;
  }): Promise<DestinationRow> {
    const id = newId('dst');
    await this.changed(true);
    const createdAt = Date.now();
    await this.x.run(INSERT_DESTINATION, [
      id,
      d.siteId,
      d.url,
      d.secretEnc,
      JSON.stringify(d.events),
      d.description ?? null,
      d.apiKeyId ?? null,
      d.signingMode ?? 'svc',
      createdAt,
      createdAt,
    ]);
    return (await this.destination(id))!;
  }

  destination(id: string): Promise<DestinationRow | undefined> {
    return this.x.get<DestinationRow>(DESTINATION_BY_ID, [id]);
  }

  listDestinations(filter: { siteId?: string | undefined; apiKeyId?: string | undefined } = {}): Promise<DestinationRow[]> {
    const w = whereOf([
      ['site_id = ?', filter.siteId],
      ['api_key_id = ?', filter.apiKeyId],
    ]);
    return this.x.all<DestinationRow>(`SELECT * FROM destinations ${w.sql} ORDER BY created_at, id`, w.params);
  }

  enabledDestinations(): Promise<DestinationRow[]> {
    return this.x.all<DestinationRow>('SELECT * FROM destinations WHERE enabled = 1');
  }

  /** Writes: call inside a write operation. */
  async updateDestination(
    id: string,
    patch: {
      url?: string;
      secretEnc?: string | null;
      events?: string[];
      enabled?: boolean;
      description?: string | null;
      signingMode?: DestinationRow['signing_mode'];
      /** The key before a rotation and the end of its grace period (both null: no previous key). */
      previous?: { secretEnc: string; expiresAt: number } | null;
      secretRotatedAt?: number;
    },
  ): Promise<DestinationRow | undefined> {
    if (patch.enabled !== undefined || patch.events !== undefined) await this.changed(patch.enabled === true || patch.events !== undefined);
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
    if (patch.signingMode !== undefined) {
      sets.push('signing_mode = ?');
      params.push(patch.signingMode);
    }
    if (patch.previous !== undefined) {
      sets.push('previous_secret_enc = ?', 'previous_secret_expires_at = ?');
      params.push(patch.previous?.secretEnc ?? null, patch.previous?.expiresAt ?? null);
    }
    if (patch.secretRotatedAt !== undefined) {
      sets.push('secret_rotated_at = ?');
      params.push(patch.secretRotatedAt);
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
    await this.x.run(`UPDATE destinations SET ${sets.join(', ')} WHERE id = ?`, params);
    return this.destination(id);
  }

  /**
   * Forgets the keys of rotations whose grace period has ended (they no longer sign anything).
   * Writes: call inside a write operation.
   */
  async clearExpiredPreviousSecrets(now: number): Promise<number> {
    const r = await this.x.run(
      'UPDATE destinations SET previous_secret_enc = NULL, previous_secret_expires_at = NULL WHERE previous_secret_expires_at <= ?',
      [now],
    );
    return r.changes;
  }

  /**
   * Removes a destination; its delivery history and health log stay for audit. Pending deliveries fail for good.
   * Writes: call inside a write operation.
   */
  async removeDestination(id: string): Promise<boolean> {
    const now = Date.now();
    await this.changed(false);
    const info = await this.x.run('DELETE FROM destinations WHERE id = ?', [id]);
    await this.x.run(
      "UPDATE deliveries SET state = 'failed', last_error = 'destination removed', updated_at = ? WHERE destination_id = ? AND state = 'pending'",
      [now, id],
    );
    return info.changes > 0;
  }

  /**
   * The oldest outbox rows not yet fanned out, claimed for this transaction:
   * on PostgreSQL they stay locked until it ends and other instances skip them.
   * Call inside a write operation, then `markDispatched` with the same rows.
   */
  claimOutbox(limit: number): Promise<OutboxRow[]> {
    return this.x.all<OutboxRow>(this.x.dialect === 'pg' ? CLAIM_OUTBOX_PG : PENDING_OUTBOX, [limit]);
  }

  /**
   * Marks outbox rows not yet fanned out as dispatched without reading them: the fan-out when no
   * destination is enabled (otherwise the ingestion path's outbox rows are each read back once,
   * payload and all, to be dropped). On SQLite the cursor moves to the outbox's last row, all of them
   * at once, and the result is the span of ids it passed (ids of rows erased meanwhile included); on
   * PostgreSQL up to `limit` rows are claimed and marked in one statement and counted.
   * Writes: call inside a write operation.
   */
  async skipOutbox(limit: number, now: number): Promise<number> {
    if (this.x.dialect === 'pg') return (await this.x.run(SKIP_OUTBOX_PG, [now, limit])).changes;
    const span = await this.x.get<{ cursor: number | null; last: number | null }>(OUTBOX_SPAN);
    if (span?.cursor == null || span.last == null || span.last <= span.cursor) return 0;
    await this.x.run(ADVANCE_CURSOR, [span.last, span.last]);
    return span.last - span.cursor;
  }

  /**
   * Marks claimed outbox rows as fanned out. On SQLite the outbox is
   * append-only (AUTOINCREMENT ids, written by one writer at a time), so a
   * cursor past the last row replaces a per-row update and a partial index on
   * the hot path; on PostgreSQL each row is marked.
   * Writes: call inside a write operation.
   */
  async markDispatched(rows: readonly OutboxRow[], now: number): Promise<void> {
    if (rows.length === 0) return;
    if (this.x.dialect === 'pg') {
      await this.x.run(MARK_DISPATCHED_PG, [now, rows.map((r) => r.id)]);
      return;
    }
    const last = rows[rows.length - 1]!.id;
    await this.x.run(ADVANCE_CURSOR, [last, last]);
  }

  async insertDelivery(d: NewDelivery): Promise<string> {
    return (await this.insertDeliveries([d]))[0]!;
  }

  /**
   * Inserts deliveries, in order; returns their ids. One statement on PostgreSQL
   * (multi-row VALUES), the prepared insert once per row on SQLite.
   * Writes: call inside a write operation.
   */
  async insertDeliveries(list: readonly NewDelivery[]): Promise<string[]> {
    if (list.length === 0) return [];
    // Ascending: a lane drains in (due time, id) order, and the batch shares one due time, so the
    // rows it updates one after another lie side by side in the table (one page per few rows).
    const ids = newIds('dlv', list.length);
    await this.x.runEach(
      INSERT_DELIVERY,
      list.map((d, i) => [ids[i], d.siteId, d.destinationId, d.outboxId, d.eventType, d.payload, d.now, d.now, d.now]),
    );
    this.enqueued.deliveries += list.length;
    return ids;
  }

  /**
   * The destination's pending deliveries due at `now` (the columns of DueRow), oldest due first (then by id), at most `limit`;
   * with `after`, only those past that (next_attempt_at, id) in the same order (keyset paging).
   */
  due(destinationId: string, now: number, limit: number, after?: DueKey): Promise<DueRow[]> {
    if (after) return this.x.all<DueRow>(DUE_AFTER, [destinationId, now, after.at, after.id, limit]);
    return this.x.all<DueRow>(DUE, [destinationId, now, limit]);
  }

  delivery(id: string): Promise<DeliveryRow | undefined> {
    return this.x.get<DeliveryRow>('SELECT * FROM deliveries WHERE id = ?', [id]);
  }

  async markDelivered(id: string, status: number, now: number): Promise<void> {
    await this.x.run(SUCCEED, [status, now, now, id]);
  }

  /**
   * markDelivered of several deliveries: one `UPDATE … FROM unnest` on
   * PostgreSQL, the prepared update once per row on SQLite.
   * Writes: call inside a write operation.
   */
  async markDeliveredMany(rows: readonly { id: string; status: number }[], now: number): Promise<void> {
    if (rows.length === 0) return;
    await this.x.runEach(
      SUCCEED,
      rows.map((r) => [r.status, now, now, r.id]),
    );
  }

  async markFailedAttempt(
    id: string,
    r: { final: boolean; nextAttemptAt: number; status: number | null; error: string; now: number },
  ): Promise<void> {
    await this.x.run(FAIL, [r.final ? 'failed' : 'pending', r.nextAttemptAt, r.status, r.error, r.now, id]);
  }

  async destinationSucceeded(id: string): Promise<void> {
    await this.x.run(DESTINATION_OK, [id]);
  }

  /** destinationSucceeded of several destinations (each once). Writes: call inside a write operation. */
  async destinationsSucceeded(ids: readonly string[]): Promise<void> {
    const distinct = [...new Set(ids)];
    if (distinct.length === 1) await this.destinationSucceeded(distinct[0]!);
    else if (distinct.length > 1) await this.x.runEach(DESTINATION_OK, distinct.map((id) => [id]));
  }

  /** Counts a failed attempt against the destination; returns the streak. Writes: call inside a write operation. */
  async destinationFailed(id: string, now: number): Promise<{ consecutive: number; since: number; enabled: boolean } | undefined> {
    const row = await this.x.get<{ consecutive_failures: number; first_failure_at: number; enabled: number }>(DESTINATION_FAIL, [now, id]);
    return row
      ? { consecutive: Number(row.consecutive_failures), since: Number(row.first_failure_at), enabled: Number(row.enabled) === 1 }
      : undefined;
  }

  async disableDestination(id: string, reason: string, now: number): Promise<boolean> {
    await this.changed(false);
    return (await this.x.run(DISABLE, [reason, now, id])).changes > 0;
  }

  /** Puts failed deliveries back in the queue (replay through the dispatcher). Writes: call inside a write operation. */
  async requeue(id: string, now: number): Promise<boolean> {
    const requeued = (await this.x.run(REQUEUE, [now, now, id])).changes > 0;
    if (requeued) this.enqueued.deliveries++;
    return requeued;
  }

  /** Writes one outbound attempt (webhook delivery, test send, trigger message) to the health log. */
  async logAttempt(where: AttemptWhere, r: AttemptOutcome, now: number): Promise<void> {
    await this.x.run(INSERT_HEALTH, attemptParams(where, r, now));
  }

  /**
   * logAttempt of several attempts, rows in order: one multi-row INSERT on
   * PostgreSQL, the prepared insert once per row on SQLite.
   * Writes: call inside a write operation.
   */
  async logAttempts(attempts: readonly { where: AttemptWhere; outcome: AttemptOutcome }[], now: number): Promise<void> {
    if (attempts.length === 0) return;
    await this.x.runEach(
      INSERT_HEALTH,
      attempts.map(({ where, outcome }) => attemptParams(where, outcome, now)),
    );
  }

  async log(h: HealthInput): Promise<void> {
    await this.x.run(INSERT_HEALTH, healthParams(h));
  }

  deliveries(f: DeliveryFilter): Promise<DeliveryRow[]> {
    const { where, params } = deliveryWhere(f);
    return this.x.all<DeliveryRow>(`SELECT * FROM deliveries ${where} ORDER BY created_at, id LIMIT ?`, [...params, f.limit ?? 1_000_000]);
  }

  /** The newest `limit` entries of the integration health log (oldest first); `integration` names one or several integrations. */
  healthLog(f: DeliveryFilter & { integration?: string | readonly string[] | undefined }): Promise<HealthRow[]> {
    const names = typeof f.integration === 'string' ? [f.integration] : f.integration;
    const w = whereOf([
      ...deliveryFilters(f),
      [`integration IN (${(names ?? []).map(() => '?').join(', ')})`, names],
      ['ok = 0', f.failedOnly],
    ]);
    const sql = `SELECT * FROM (SELECT * FROM health_log ${w.sql} ORDER BY id DESC LIMIT ?) AS newest ORDER BY id`;
    return this.x.all<HealthRow>(sql, [...w.params, f.limit ?? 100]);
  }
}

/** The INSERT_HEALTH parameters of an attempt, built directly (a hot path: one row per delivery). */
function attemptParams(w: AttemptWhere, r: AttemptOutcome, now: number): unknown[] {
  return [w.site_id, w.integration, w.destination_id, w.delivery_id, w.event_type, w.kind, w.attempt, r.ok ? 1 : 0, r.status, r.latencyMs, r.errorClass, r.message, r.excerpt, now];
}

function healthParams(h: HealthInput): unknown[] {
  return [
    h.site_id,
    h.integration,
    h.destination_id,
    h.delivery_id,
    h.event_type,
    h.kind,
    h.attempt,
    h.ok ? 1 : 0,
    h.status,
    h.latency_ms,
    h.error_class,
    h.message,
    h.response_excerpt,
    h.created_at,
  ];
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

import type { Sql } from './sql.js';
import { whereOf } from './where.js';
import type { WriterCaches } from './writer-caches.js';
import { PendingAsk } from './pending-ask.js';

export interface TriggerRow {
  id: string;
  site_id: string;
  name: string;
  on_kind: 'segment_entered' | 'event' | 'score';
  on_value: string | null;
  score_min: number | null;
  message_id: string;
  message_values: string;
  include_email: number;
  cap_count: number;
  cap_window_ms: number;
  quiet_start: string | null;
  quiet_end: string | null;
  enabled: number;
  capped_count: number;
  created_by: string;
  created_at: number;
  updated_at: number;
}

export interface TriggerEndpointRow {
  site_id: string;
  url: string | null;
  secret_enc: string | null;
  test_url: string | null;
  updated_by: string;
  updated_at: number;
}

export type FireState = 'pending' | 'delivered' | 'failed' | 'cancelled';

export interface FireRow {
  id: string;
  site_id: string;
  trigger_id: string;
  profile_id: string;
  mode: 'live' | 'test';
  reason: string;
  state: FireState;
  due_at: number;
  deferred: number;
  attempts: number;
  next_attempt_at: number;
  last_status: number | null;
  last_error: string | null;
  created_by: string;
  created_at: number;
  delivered_at: number | null;
}

/** Columns a trigger's create or update sets. */
export type TriggerFields = Pick<
  TriggerRow,
  'name' | 'on_kind' | 'on_value' | 'score_min' | 'message_id' | 'message_values' | 'include_email' | 'cap_count' | 'cap_window_ms' | 'quiet_start' | 'quiet_end'
>;

const FIELDS = ['name', 'on_kind', 'on_value', 'score_min', 'message_id', 'message_values', 'include_email', 'cap_count', 'cap_window_ms', 'quiet_start', 'quiet_end'] as const;

/** Triggered messages: triggers, the site's endpoints and the fires table the worker delivers from. Writes run inside a write operation. */
export class TriggersRepo {
  /**
   * @param enqueued counts fires written by this process; the trigger worker looks after commits that moved it.
   * @param caches the event types each site's triggers listen for (SQLite writer only); every change of a trigger drops them.
   */
  constructor(
    private readonly x: Sql,
    private readonly enqueued: { fires: number },
    private readonly caches?: WriterCaches,
  ) {}

  private changed(): void {
    this.caches?.eventTriggerTypes.clear();
    this.asking.forget();
  }

  /** PostgreSQL: the event triggers' ask of this transaction not answered yet (see listeningForEvent). */
  private readonly asking = new PendingAsk<readonly Readonly<TriggerRow>[]>();

  async create(id: string, siteId: string, f: TriggerFields, by: string, now: number): Promise<TriggerRow> {
    this.changed();
    await this.x.run(
      `INSERT INTO triggers (id, site_id, ${FIELDS.join(', ')}, enabled, capped_count, created_by, created_at, updated_at)
       VALUES (?, ?, ${FIELDS.map(() => '?').join(', ')}, 0, 0, ?, ?, ?)`,
      [id, siteId, ...FIELDS.map((k) => f[k]), by, now, now],
    );
    return (await this.get(siteId, id))!;
  }

  get(siteId: string, id: string): Promise<TriggerRow | undefined> {
    return this.x.get<TriggerRow>('SELECT * FROM triggers WHERE id = ? AND site_id = ?', [id, siteId]);
  }

  list(siteId: string, enabled?: boolean): Promise<TriggerRow[]> {
    const w = whereOf([
      ['site_id = ?', siteId],
      ['enabled = ?', enabled === undefined ? undefined : enabled ? 1 : 0],
    ]);
    return this.x.all<TriggerRow>(`SELECT * FROM triggers ${w.sql} ORDER BY created_at, id`, w.params);
  }

  async update(siteId: string, id: string, f: TriggerFields, now: number): Promise<void> {
    this.changed();
    await this.x.run(`UPDATE triggers SET ${FIELDS.map((k) => `${k} = ?`).join(', ')}, updated_at = ? WHERE id = ? AND site_id = ?`, [
      ...FIELDS.map((k) => f[k]),
      now,
      id,
      siteId,
    ]);
  }

  async setEnabled(siteId: string, id: string, enabled: boolean, now: number): Promise<void> {
    this.changed();
    await this.x.run('UPDATE triggers SET enabled = ?, updated_at = ? WHERE id = ? AND site_id = ?', [enabled ? 1 : 0, now, id, siteId]);
  }

  /** Deletes a trigger and its fires; returns the fires deleted. */
  async remove(siteId: string, id: string): Promise<number> {
    this.changed();
    const n = (await this.x.run('DELETE FROM trigger_fires WHERE trigger_id = ? AND site_id = ?', [id, siteId])).changes;
    await this.x.run('DELETE FROM triggers WHERE id = ? AND site_id = ?', [id, siteId]);
    return n;
  }

  /** Enabled triggers of a site listening for one kind (and value: segment id or event type). */
  listening(siteId: string, kind: TriggerRow['on_kind'], value: string | null): Promise<TriggerRow[]> {
    return value === null
      ? this.x.all<TriggerRow>('SELECT * FROM triggers WHERE site_id = ? AND on_kind = ? AND enabled = 1', [siteId, kind])
      : this.x.all<TriggerRow>('SELECT * FROM triggers WHERE site_id = ? AND on_kind = ? AND on_value = ? AND enabled = 1', [siteId, kind, value]);
  }

  /**
   * Enabled triggers of a site listening for an event type (listening(site, 'event', type)). With the
   * writer's caches on (SQLite), the types a site's triggers listen for are read once and kept, so an
   * event no trigger listens for costs no statement. Call inside a write operation.
   *
   * On PostgreSQL the operations of a group commit ask it together (each event of the group, one statement
   * wave, one parameter set): an ask for the site and type of one still unanswered in this transaction
   * shares its answer, the same rows (read-only: no caller may change them), as WebhooksRepo.receives does.
   * An ask after the answer came, or after a change of a trigger in this transaction, asks anew; so the
   * sequential rerun (one operation after another) asks per operation as before. Per transaction (one
   * TriggersRepo per group), never across.
   */
  listeningForEvent(siteId: string, type: string): Promise<readonly Readonly<TriggerRow>[]> {
    if (this.x.dialect !== 'pg') return this.listeningHere(siteId, type);
    return this.asking.ask(siteId, type, () => this.listening(siteId, 'event', type));
  }

  /** listeningForEvent on SQLite: the writer's caches, then the read. */
  private async listeningHere(siteId: string, type: string): Promise<TriggerRow[]> {
    const caches = this.caches;
    if (caches?.enabled) {
      let types = caches.eventTriggerTypes.get(siteId);
      if (types === undefined) {
        const rows = await this.x.all<{ on_value: string | null }>(
          "SELECT DISTINCT on_value FROM triggers WHERE site_id = ? AND on_kind = 'event' AND enabled = 1",
          [siteId],
        );
        types = new Set(rows.flatMap((r) => (r.on_value === null ? [] : [r.on_value])));
        if (caches.eventTriggerTypes.size >= 10_000) caches.eventTriggerTypes.clear();
        caches.eventTriggerTypes.set(siteId, types);
      }
      if (!types.has(type)) return [];
    }
    return this.listening(siteId, 'event', type);
  }

  async countCapped(id: string): Promise<void> {
    this.asking.forget();
    await this.x.run('UPDATE triggers SET capped_count = capped_count + 1 WHERE id = ?', [id]);
  }

  /** The profile's newest score before the one with row id `exceptId` (null: none, or no value). */
  async previousScore(siteId: string, profileId: string, exceptId: number): Promise<number | null> {
    const r = await this.x.get<{ score: number | null }>(
      'SELECT score FROM scores WHERE profile_id = ? AND site_id = ? AND id <> ? AND score IS NOT NULL ORDER BY received_at DESC, id DESC LIMIT 1',
      [profileId, siteId, exceptId],
    );
    return r?.score ?? null;
  }

  endpoint(siteId: string): Promise<TriggerEndpointRow | undefined> {
    return this.x.get<TriggerEndpointRow>('SELECT * FROM trigger_endpoints WHERE site_id = ?', [siteId]);
  }

  async setEndpoint(e: TriggerEndpointRow): Promise<void> {
    await this.x.run(
      `INSERT INTO trigger_endpoints (site_id, url, secret_enc, test_url, updated_by, updated_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (site_id) DO UPDATE SET url = excluded.url, secret_enc = excluded.secret_enc, test_url = excluded.test_url,
       updated_by = excluded.updated_by, updated_at = excluded.updated_at`,
      [e.site_id, e.url, e.secret_enc, e.test_url, e.updated_by, e.updated_at],
    );
  }

  /**
   * Serializes cap checks of one trigger and profile until the transaction ends: on PostgreSQL two
   * instances could otherwise both count the same fires and both fire. SQLite has a single writer.
   */
  async lockCap(triggerId: string, profileId: string): Promise<void> {
    if (this.x.dialect === 'pg') await this.x.get('SELECT pg_advisory_xact_lock(hashtextextended(?, 0))', [`trigger-cap:${triggerId}:${profileId}`]);
  }

  /** Live fires of a trigger for a profile created after `since` (not cancelled), for the frequency cap. */
  async firesSince(triggerId: string, profileId: string, since: number): Promise<number> {
    const r = await this.x.get<{ n: number }>(
      "SELECT count(*) AS n FROM trigger_fires WHERE trigger_id = ? AND profile_id = ? AND created_at > ? AND mode = 'live' AND state <> 'cancelled'",
      [triggerId, profileId, since],
    );
    return Number(r?.n ?? 0);
  }

  async insertFire(f: Omit<FireRow, 'attempts' | 'last_status' | 'last_error' | 'delivered_at'>): Promise<void> {
    await this.x.run(
      `INSERT INTO trigger_fires (id, site_id, trigger_id, profile_id, mode, reason, state, due_at, deferred, attempts, next_attempt_at, created_by, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?)`,
      [f.id, f.site_id, f.trigger_id, f.profile_id, f.mode, f.reason, f.state, f.due_at, f.deferred, f.next_attempt_at, f.created_by, f.created_at],
    );
    this.enqueued.fires++;
  }

  fire(siteId: string, id: string): Promise<FireRow | undefined> {
    return this.x.get<FireRow>('SELECT * FROM trigger_fires WHERE id = ? AND site_id = ?', [id, siteId]);
  }

  fires(f: { siteId: string; triggerId?: string | undefined; profileId?: string | undefined; state?: string | undefined; limit: number }): Promise<FireRow[]> {
    const w = whereOf([
      ['site_id = ?', f.siteId],
      ['trigger_id = ?', f.triggerId],
      ['profile_id = ?', f.profileId],
      ['state = ?', f.state],
    ]);
    return this.x.all<FireRow>(`SELECT * FROM trigger_fires ${w.sql} ORDER BY created_at DESC, id DESC LIMIT ?`, [...w.params, f.limit]);
  }

  /** Live pending fires due by `now`, oldest first (the worker's queue). */
  due(now: number, limit: number): Promise<FireRow[]> {
    return this.x.all<FireRow>(
      "SELECT * FROM trigger_fires WHERE state = 'pending' AND mode = 'live' AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ?",
      [now, limit],
    );
  }

  /** The earliest due time of a pending live fire (the worker sleeps until then). */
  async nextDue(): Promise<number | null> {
    const r = await this.x.get<{ t: number | null }>("SELECT min(next_attempt_at) AS t FROM trigger_fires WHERE state = 'pending' AND mode = 'live'");
    return r?.t === null || r?.t === undefined ? null : Number(r.t);
  }

  /**
   * Marks a fire delivered; false when it was already recorded. A fire cancelled while its POST was in
   * flight was delivered all the same, so it is recorded as delivered too.
   */
  async markDelivered(id: string, status: number, now: number): Promise<boolean> {
    return (
      (
        await this.x.run(
          "UPDATE trigger_fires SET state = 'delivered', attempts = attempts + 1, last_status = ?, last_error = NULL, delivered_at = ? WHERE id = ? AND state IN ('pending', 'cancelled')",
          [status, now, id],
        )
      ).changes > 0
    );
  }

  async markFailedAttempt(id: string, r: { final: boolean; nextAttemptAt: number; status: number | null; error: string }): Promise<void> {
    await this.x.run(
      "UPDATE trigger_fires SET state = ?, attempts = attempts + 1, next_attempt_at = ?, last_status = ?, last_error = ? WHERE id = ? AND state = 'pending'",
      [r.final ? 'failed' : 'pending', r.nextAttemptAt, r.status, r.error, id],
    );
  }

  /** Records a test fire's one attempt. */
  async recordTest(id: string, r: { ok: boolean; status: number | null; error: string | null; now: number }): Promise<void> {
    await this.x.run('UPDATE trigger_fires SET state = ?, attempts = 1, last_status = ?, last_error = ?, delivered_at = ? WHERE id = ?', [
      r.ok ? 'delivered' : 'failed',
      r.status,
      r.error,
      r.ok ? r.now : null,
      id,
    ]);
  }

  /** Cancels the pending automatic fires of a trigger (it was disabled); returns how many. */
  async cancelPending(siteId: string, triggerId: string): Promise<number> {
    return (
      await this.x.run(
        "UPDATE trigger_fires SET state = 'cancelled', last_error = 'trigger disabled' WHERE site_id = ? AND trigger_id = ? AND state = 'pending' AND reason <> 'manual'",
        [siteId, triggerId],
      )
    ).changes;
  }
}

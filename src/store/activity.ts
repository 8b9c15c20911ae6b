import type { Params, Sql } from './sql.js';

const INSERT_EVENT = 'INSERT INTO events (site_id, session_id, profile_id, visitor_id, type, ts, body, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)';
const INSERT_SCORE = 'INSERT INTO scores (site_id, session_id, profile_id, visitor_id, score, body, received_at) VALUES (?, ?, ?, ?, ?, ?, ?)';
const INSERT_EVENT_WITH_ID =
  'INSERT INTO events (id, site_id, session_id, profile_id, visitor_id, type, ts, body, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)';
const INSERT_CONVERSION =
  'INSERT INTO conversions (id, site_id, session_id, profile_id, revenue, currency, line_items, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)';
const INSERT_LEAD = `INSERT INTO leads (id, site_id, profile_id, form_id, kind, email, name, phone, appointment_slot, source, workable, status, created_at)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
const INSERT_OUTBOX = 'INSERT INTO outbox (site_id, event_type, payload, created_at) VALUES (?, ?, ?, ?)';
/** The same inserts on PostgreSQL, where the new id comes back as a row. */
const RETURNING_ID = new Map([INSERT_EVENT, INSERT_SCORE, INSERT_OUTBOX].map((text) => [text, `${text} RETURNING id`]));

/** Append-only activity rows (events, scores, conversions, leads) and the outbox. */
export class ActivityRepo {
  /**
   * @param enqueued counts outbox rows written by this process (shared by every repository set of
   *   the store); the dispatcher compares it after each commit.
   */
  constructor(
    private readonly x: Sql,
    private readonly enqueued: { outbox: number },
    private readonly eventIds: { take(): Promise<number>; takeNow(): number | undefined } | null = null,
  ) {}

  /**
   * Inserts one row of a table keyed by an integer `id` and returns that id. On SQLite the insert
   * runs without RETURNING and the id is the connection's last insert rowid (no result row is
   * built: about a microsecond less per row, two rows per event); PostgreSQL returns it.
   */
  private async insertId(text: string, params: Params): Promise<number> {
    if (this.x.dialect === 'sqlite') return (await this.x.run(text, params)).lastInsertId!;
    const row = await this.x.get<{ id: number }>(RETURNING_ID.get(text)!, params);
    return Number(row!.id);
  }

  /**
   * Inserts an event; returns its row id. `notice`, when given, makes the event's outbox row from that
   * id (enqueue, same transaction). On PostgreSQL the id is reserved ahead (RepoShared.eventIds), so
   * both inserts are asked together and share a statement wave (one round trip per group commit
   * fewer); on SQLite the event is inserted first and its id is the connection's last insert rowid.
   */
  async insertEvent(
    r: {
      siteId: string;
      sessionId: string;
      profileId: string;
      visitorId: string | null;
      type: string;
      ts: number;
      body: string;
      now: number;
    },
    notice?: (rowId: number) => { eventType: string; payload: unknown },
  ): Promise<number> {
    if (this.eventIds !== null && this.x.dialect === 'pg') {
      const id = this.eventIds.takeNow() ?? (await this.eventIds.take());
      const n = notice?.(id);
      const inserted = this.x.run(INSERT_EVENT_WITH_ID, [id, r.siteId, r.sessionId, r.profileId, r.visitorId, r.type, r.ts, r.body, r.now]);
      if (n === undefined) await inserted;
      else await Promise.all([inserted, this.enqueue(r.siteId, n.eventType, n.payload, r.now)]);
      return id;
    }
    const id = await this.insertId(INSERT_EVENT, [r.siteId, r.sessionId, r.profileId, r.visitorId, r.type, r.ts, r.body, r.now]);
    const n = notice?.(id);
    if (n !== undefined) await this.enqueue(r.siteId, n.eventType, n.payload, r.now);
    return id;
  }

  async insertScore(r: {
    siteId: string;
    sessionId: string;
    profileId: string;
    visitorId: string | null;
    score: number | null;
    body: string;
    now: number;
  }): Promise<number> {
    return this.insertId(INSERT_SCORE, [r.siteId, r.sessionId, r.profileId, r.visitorId, r.score, r.body, r.now]);
  }

  async insertConversion(r: {
    id: string;
    siteId: string;
    sessionId: string;
    profileId: string;
    revenue: number | null;
    currency: string;
    lineItems: string;
    now: number;
  }): Promise<void> {
    await this.x.run(INSERT_CONVERSION, [r.id, r.siteId, r.sessionId, r.profileId, r.revenue, r.currency, r.lineItems, r.now]);
  }

  async insertLead(r: {
    id: string;
    siteId: string;
    profileId: string;
    formId: string;
    kind: 'lead_form' | 'optin';
    email: string | null;
    name: string | null;
    phone: string | null;
    appointmentSlot: string | null;
    source: string | null;
    workable: boolean;
    now: number;
  }): Promise<void> {
    await this.x.run(INSERT_LEAD, [
      r.id,
      r.siteId,
      r.profileId,
      r.formId,
      r.kind,
      r.email,
      r.name,
      r.phone,
      r.appointmentSlot,
      r.source,
      r.workable ? 1 : 0,
      r.workable ? 'new' : 'unworkable',
      r.now,
    ]);
  }

  /** Writes a webhook event to the outbox; call inside the transaction that stores its cause. */
  async enqueue(siteId: string, eventType: string, payload: unknown, now: number): Promise<number> {
    const id = await this.insertId(INSERT_OUTBOX, [siteId, eventType, JSON.stringify(payload), now]);
    this.enqueued.outbox++;
    return id;
  }
}

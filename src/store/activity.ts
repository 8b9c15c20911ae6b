import type { Db } from './db.js';

/** Append-only activity rows (events, scores, conversions, leads) and the outbox. */
export class ActivityRepo {
  private readonly q;
  /** Outbox rows written by this process; the dispatcher compares it after each commit. */
  enqueued = 0;

  constructor(db: Db) {
    this.q = {
      event: db.prepare(
        'INSERT INTO events (site_id, session_id, profile_id, visitor_id, type, ts, body, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      ),
      score: db.prepare(
        'INSERT INTO scores (site_id, session_id, profile_id, visitor_id, score, body, received_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      ),
      conversion: db.prepare(
        'INSERT INTO conversions (id, site_id, session_id, profile_id, revenue, currency, line_items, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      ),
      lead: db.prepare(
        `INSERT INTO leads (id, site_id, profile_id, form_id, kind, email, name, phone, appointment_slot, source, workable, status, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      outbox: db.prepare('INSERT INTO outbox (site_id, event_type, payload, created_at) VALUES (?, ?, ?, ?)'),
    };
  }

  insertEvent(r: {
    siteId: string;
    sessionId: string;
    profileId: string;
    visitorId: string | null;
    type: string;
    ts: number;
    body: string;
    now: number;
  }): number {
    const info = this.q.event.run(r.siteId, r.sessionId, r.profileId, r.visitorId, r.type, r.ts, r.body, r.now);
    return Number(info.lastInsertRowid);
  }

  insertScore(r: {
    siteId: string;
    sessionId: string;
    profileId: string;
    visitorId: string | null;
    score: number | null;
    body: string;
    now: number;
  }): number {
    const info = this.q.score.run(r.siteId, r.sessionId, r.profileId, r.visitorId, r.score, r.body, r.now);
    return Number(info.lastInsertRowid);
  }

  insertConversion(r: {
    id: string;
    siteId: string;
    sessionId: string;
    profileId: string;
    revenue: number | null;
    currency: string;
    lineItems: string;
    now: number;
  }): void {
    this.q.conversion.run(r.id, r.siteId, r.sessionId, r.profileId, r.revenue, r.currency, r.lineItems, r.now);
  }

  insertLead(r: {
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
  }): void {
    this.q.lead.run(
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
    );
  }

  /** Writes a webhook event to the outbox; call inside the transaction that stores its cause. */
  enqueue(siteId: string, eventType: string, payload: unknown, now: number): number {
    const info = this.q.outbox.run(siteId, eventType, JSON.stringify(payload), now);
    this.enqueued++;
    return Number(info.lastInsertRowid);
  }
}

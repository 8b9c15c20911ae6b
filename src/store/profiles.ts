import type { Db } from './db.js';
import { newId } from './ids.js';
import type { Owner } from '../domain/identity/plan.js';

export type IdentityKind = 'email' | 'external_id' | 'visitor';

export interface SessionRow {
  profile_id: string;
  visitor_id: string | null;
  last_seen: number;
  fbclid: string | null;
  gclid: string | null;
}

export interface SessionContext {
  ip?: string | undefined;
  userAgent?: string | undefined;
  url?: unknown;
  fbclid?: string | undefined;
  gclid?: string | undefined;
}

/** How often a session's last_seen is refreshed at most, to keep the hot path to one write per event. */
const TOUCH_INTERVAL_MS = 30_000;

/**
 * Profiles, their identities and the sessions that link to them. Methods are
 * synchronous and must run inside a write transaction (the group-commit writer).
 */
export class ProfilesRepo {
  private readonly q;

  constructor(db: Db) {
    this.q = {
      owner: db.prepare<[string, string, string], { id: string; known: number }>(
        `SELECT p.id, p.known FROM identities i JOIN profiles p ON p.id = i.profile_id
          WHERE i.site_id = ? AND i.kind = ? AND i.value = ?`,
      ),
      session: db.prepare<[string, string], SessionRow>(
        'SELECT profile_id, visitor_id, last_seen, fbclid, gclid FROM sessions WHERE site_id = ? AND id = ?',
      ),
      profileKnown: db.prepare<[string], { known: number }>('SELECT known FROM profiles WHERE id = ?'),
      insertProfile: db.prepare(
        'INSERT INTO profiles (id, site_id, known, traits, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      insertIdentity: db.prepare(
        'INSERT INTO identities (site_id, kind, value, profile_id, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (site_id, kind, value) DO NOTHING',
      ),
      upsertIdentity: db.prepare(
        'INSERT INTO identities (site_id, kind, value, profile_id, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (site_id, kind, value) DO UPDATE SET profile_id = excluded.profile_id',
      ),
      insertSession: db.prepare(
        `INSERT INTO sessions (site_id, id, profile_id, visitor_id, first_seen, last_seen, ip, user_agent, landing_url, fbclid, fbclid_at, gclid)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      touchSession: db.prepare('UPDATE sessions SET last_seen = ? WHERE site_id = ? AND id = ?'),
      linkSession: db.prepare(
        'UPDATE sessions SET profile_id = ?, visitor_id = coalesce(?, visitor_id), last_seen = ? WHERE site_id = ? AND id = ?',
      ),
      sessionVisitor: db.prepare('UPDATE sessions SET visitor_id = ? WHERE site_id = ? AND id = ? AND visitor_id IS NULL'),
      sessionClickIds: db.prepare(
        `UPDATE sessions SET fbclid = coalesce(?, fbclid), fbclid_at = CASE WHEN ? IS NULL THEN fbclid_at ELSE ? END,
                gclid = coalesce(?, gclid) WHERE site_id = ? AND id = ?`,
      ),
      traits: db.prepare<[string], { traits: string; known: number; primary_segment: string | null }>(
        'SELECT traits, known, primary_segment FROM profiles WHERE id = ?',
      ),
      setTraits: db.prepare('UPDATE profiles SET traits = ?, known = ?, updated_at = ? WHERE id = ?'),
      moveSessions: db.prepare('UPDATE sessions SET profile_id = ? WHERE profile_id = ?'),
      moveIdentities: db.prepare('UPDATE identities SET profile_id = ? WHERE profile_id = ?'),
      moveHashes: db.prepare('UPDATE OR IGNORE identity_hashes SET profile_id = ? WHERE profile_id = ?'),
      upsertHash: db.prepare(
        'INSERT INTO identity_hashes (site_id, kind, hash, profile_id, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (site_id, kind, hash) DO UPDATE SET profile_id = excluded.profile_id',
      ),
      moveEvents: db.prepare('UPDATE events SET profile_id = ? WHERE profile_id = ?'),
      moveScores: db.prepare('UPDATE scores SET profile_id = ? WHERE profile_id = ?'),
      moveConversions: db.prepare('UPDATE conversions SET profile_id = ? WHERE profile_id = ?'),
      moveLeads: db.prepare('UPDATE leads SET profile_id = ? WHERE profile_id = ?'),
      dropMemberships: db.prepare('DELETE FROM segment_members WHERE profile_id = ?'),
      markMerged: db.prepare('UPDATE profiles SET merged_into = ?, updated_at = ? WHERE id = ? OR merged_into = ?'),
    };
  }

  owner(siteId: string, kind: IdentityKind, value: string | undefined): Owner | undefined {
    if (value === undefined) return undefined;
    const row = this.q.owner.get(siteId, kind, value);
    return row ? { id: row.id, known: row.known === 1 } : undefined;
  }

  session(siteId: string, sessionId: string): SessionRow | undefined {
    return this.q.session.get(siteId, sessionId);
  }

  isKnown(profileId: string): boolean {
    return this.q.profileKnown.get(profileId)?.known === 1;
  }

  createProfile(siteId: string, now: number, known = false, traits: Record<string, string> = {}): string {
    const id = newId('prf');
    this.q.insertProfile.run(id, siteId, known ? 1 : 0, JSON.stringify(traits), now, now);
    return id;
  }

  addIdentity(siteId: string, kind: IdentityKind, value: string, profileId: string, now: number): void {
    this.q.insertIdentity.run(siteId, kind, value, profileId, now);
  }

  /** Records the SHA-256 of a normalized email or phone for hashed look-ups (the newest owner wins). */
  setHash(siteId: string, kind: 'email_sha256' | 'phone_sha256', hash: string, profileId: string, now: number): void {
    this.q.upsertHash.run(siteId, kind, hash, profileId, now);
  }

  /** Points an identity at a profile, moving it from whichever profile held it. */
  setIdentity(siteId: string, kind: IdentityKind, value: string, profileId: string, now: number): void {
    this.q.upsertIdentity.run(siteId, kind, value, profileId, now);
  }

  /**
   * The profile a session belongs to, creating the session (and an anonymous
   * profile, or the visitor's existing one) on first sight. Hot path: one read
   * and at most one write for a session already seen in the last 30 s.
   */
  ensureSession(
    siteId: string,
    sessionId: string,
    visitorId: string | undefined,
    ctx: SessionContext,
    now: number,
  ): { profileId: string; visitorId: string | null } {
    const row = this.q.session.get(siteId, sessionId);
    if (row) {
      if (now - row.last_seen > TOUCH_INTERVAL_MS) this.q.touchSession.run(now, siteId, sessionId);
      if (visitorId !== undefined && row.visitor_id === null) {
        this.q.sessionVisitor.run(visitorId, siteId, sessionId);
        this.q.insertIdentity.run(siteId, 'visitor', visitorId, row.profile_id, now);
      }
      if ((ctx.fbclid && ctx.fbclid !== row.fbclid) || (ctx.gclid && ctx.gclid !== row.gclid)) {
        const fb = ctx.fbclid ?? null;
        this.q.sessionClickIds.run(fb, fb, now, ctx.gclid ?? null, siteId, sessionId);
      }
      return { profileId: row.profile_id, visitorId: row.visitor_id ?? visitorId ?? null };
    }
    let profileId = visitorId !== undefined ? this.q.owner.get(siteId, 'visitor', visitorId)?.id : undefined;
    if (profileId === undefined) {
      profileId = this.createProfile(siteId, now);
      if (visitorId !== undefined) this.q.insertIdentity.run(siteId, 'visitor', visitorId, profileId, now);
    }
    this.insertSession(siteId, sessionId, profileId, visitorId, ctx, now);
    return { profileId, visitorId: visitorId ?? null };
  }

  insertSession(
    siteId: string,
    sessionId: string,
    profileId: string,
    visitorId: string | undefined,
    ctx: SessionContext,
    now: number,
  ): void {
    this.q.insertSession.run(
      siteId,
      sessionId,
      profileId,
      visitorId ?? null,
      now,
      now,
      ctx.ip ?? null,
      ctx.userAgent ?? null,
      typeof ctx.url === 'string' ? ctx.url.slice(0, 2048) : null,
      ctx.fbclid ?? null,
      ctx.fbclid ? now : null,
      ctx.gclid ?? null,
    );
  }

  linkSession(siteId: string, sessionId: string, profileId: string, visitorId: string | undefined, now: number): void {
    this.q.linkSession.run(profileId, visitorId ?? null, now, siteId, sessionId);
  }

  traits(profileId: string): { traits: Record<string, string>; known: boolean; primarySegment: string | null } {
    const row = this.q.traits.get(profileId);
    if (!row) return { traits: {}, known: false, primarySegment: null };
    return {
      traits: JSON.parse(row.traits) as Record<string, string>,
      known: row.known === 1,
      primarySegment: row.primary_segment,
    };
  }

  setTraits(profileId: string, traits: Record<string, string>, known: boolean, now: number): void {
    this.q.setTraits.run(JSON.stringify(traits), known ? 1 : 0, now, profileId);
  }

  /** Moves everything of profile `from` to profile `to` and marks `from` (and its aliases) merged. */
  mergeInto(from: string, to: string, now: number): void {
    this.q.moveSessions.run(to, from);
    this.q.moveIdentities.run(to, from);
    this.q.moveHashes.run(to, from);
    this.q.moveEvents.run(to, from);
    this.q.moveScores.run(to, from);
    this.q.moveConversions.run(to, from);
    this.q.moveLeads.run(to, from);
    this.q.dropMemberships.run(from);
    this.q.markMerged.run(to, now, from, from);
  }
}

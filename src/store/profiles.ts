import type { Sql, SqliteSql } from './sql.js';
import { newId } from './ids.js';
import { WriteConflict } from './errors.js';
import type { WriterCaches } from './writer-caches.js';

/** The profile that owns an identifier, and whether it is known (identified) or anonymous. */
export interface Owner {
  id: string;
  known: boolean;
}

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
export const TOUCH_INTERVAL_MS = 30_000;

const OWNER = `SELECT p.id, p.known FROM identities i JOIN profiles p ON p.id = i.profile_id
  WHERE i.site_id = ? AND i.kind = ? AND i.value = ?`;
const SESSION = 'SELECT profile_id, visitor_id, last_seen, fbclid, gclid FROM sessions WHERE site_id = ? AND id = ?';
/**
 * PostgreSQL, a session not cached and a visitor id given: the session, and only when there is none, the
 * visitor's owner (whom a new session goes to), in one statement that always returns one row. The owner's
 * look-up (two index descents) is gated on the session's absence: a known session's event, nearly every
 * one, no longer pays for it, where asking both apart paid it every time. LIMIT 1 (an identity is unique
 * anyway) keeps the planner from pulling the subquery up into the join, where the test would be a join
 * filter applied after the descents; kept apart, it is a one-time filter and the descents never run
 * (EXPLAIN ANALYZE: "never executed", 3 buffers read for a known session instead of 9).
 */
const SESSION_OR_OWNER = `SELECT ss.profile_id, ss.visitor_id, ss.last_seen, ss.fbclid, ss.gclid, ow.id AS owner
  FROM (SELECT 1) one
  LEFT JOIN sessions ss ON ss.site_id = ? AND ss.id = ?
  LEFT JOIN LATERAL (SELECT p.id FROM identities i JOIN profiles p ON p.id = i.profile_id
    WHERE ss.profile_id IS NULL AND i.site_id = ? AND i.kind = 'visitor' AND i.value = ? LIMIT 1) ow ON true`;
/**
 * SQLite, the same question (a session not cached and a visitor id given) in one statement: the session's row, else
 * the visitor's owner (its profile id in the last column), else no row. LIMIT 1 ends the compound once the first arm
 * has its row, so a known session's read runs no identity look-up; a new session's costs one statement instead of
 * two. No row at all for a new visitor: every row returned costs better-sqlite3 a JavaScript value built column by
 * column (an object row of six NULLs measured about 11k instructions, more than the statement saved), so an
 * always-one-row form (as on PostgreSQL) lost. Read as an array row (getRow, in ensureSession).
 */
const SESSION_OR_OWNER_SQLITE = `SELECT profile_id, visitor_id, last_seen, fbclid, gclid, NULL AS owner FROM sessions WHERE site_id = ? AND id = ?
  UNION ALL
  SELECT NULL, NULL, NULL, NULL, NULL, p.id FROM identities i JOIN profiles p ON p.id = i.profile_id
    WHERE i.site_id = ? AND i.kind = 'visitor' AND i.value = ?
  LIMIT 1`;
const INSERT_PROFILE = 'INSERT INTO profiles (id, site_id, known, traits, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)';
const INSERT_IDENTITY =
  'INSERT INTO identities (site_id, kind, value, profile_id, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (site_id, kind, value) DO NOTHING';
const UPSERT_IDENTITY =
  'INSERT INTO identities (site_id, kind, value, profile_id, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (site_id, kind, value) DO UPDATE SET profile_id = excluded.profile_id';
const UPSERT_HASH =
  'INSERT INTO identity_hashes (site_id, kind, hash, profile_id, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (site_id, kind, hash) DO UPDATE SET profile_id = excluded.profile_id';
const INSERT_SESSION = `INSERT INTO sessions (site_id, id, profile_id, visitor_id, first_seen, last_seen, ip, user_agent, landing_url, fbclid, fbclid_at, gclid)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
/** ensureSession's insert: a session another transaction created meanwhile (another instance) is then read instead. */
const INSERT_SESSION_IF_ABSENT = `${INSERT_SESSION} ON CONFLICT (site_id, id) DO NOTHING`;
const TOUCH_SESSION = 'UPDATE sessions SET last_seen = ? WHERE site_id = ? AND id = ?';
const SESSION_VISITOR = 'UPDATE sessions SET visitor_id = ? WHERE site_id = ? AND id = ? AND visitor_id IS NULL';
/** fbclid_at is set (to now) exactly when a new fbclid is: its parameter is null when the fbclid one is. */
const SESSION_CLICK_IDS =
  'UPDATE sessions SET fbclid = coalesce(?, fbclid), fbclid_at = coalesce(?, fbclid_at), gclid = coalesce(?, gclid) WHERE site_id = ? AND id = ?';

/**
 * Profiles, their identities and the sessions that link to them. Methods that
 * write must run inside a write operation (`store.write`).
 */
export class ProfilesRepo {
  /** @param caches the sessions the SQLite writer keeps (see WriterCaches): this repository's session writes keep them current. */
  constructor(
    private readonly x: Sql,
    private readonly caches?: WriterCaches,
  ) {}

  async owner(siteId: string, kind: IdentityKind, value: string | undefined): Promise<Owner | undefined> {
    if (value === undefined) return undefined;
    const row = await this.x.get<{ id: string; known: number }>(OWNER, [siteId, kind, value]);
    return row ? { id: row.id, known: row.known === 1 } : undefined;
  }

  session(siteId: string, sessionId: string): Promise<SessionRow | undefined> {
    return this.x.get<SessionRow>(SESSION, [siteId, sessionId]);
  }

  async isKnown(profileId: string): Promise<boolean> {
    return (await this.x.get<{ known: number }>('SELECT known FROM profiles WHERE id = ?', [profileId]))?.known === 1;
  }

  async createProfile(siteId: string, now: number, known = false, traits: Record<string, string> = {}, id = newId('prf')): Promise<string> {
    await this.x.run(INSERT_PROFILE, [id, siteId, known ? 1 : 0, JSON.stringify(traits), now, now]);
    return id;
  }

  /**
   * Gives an identity to a profile unless some profile already holds it.
   * Returns false when it was held already (by this profile or, after a race
   * with another transaction on PostgreSQL, by another one).
   */
  async addIdentity(siteId: string, kind: IdentityKind, value: string, profileId: string, now: number): Promise<boolean> {
    return (await this.x.run(INSERT_IDENTITY, [siteId, kind, value, profileId, now])).changes > 0;
  }

  /** Records the SHA-256 of a normalized email or phone for hashed look-ups (the newest owner wins). */
  async setHash(siteId: string, kind: 'email_sha256' | 'phone_sha256', hash: string, profileId: string, now: number): Promise<void> {
    await this.x.run(UPSERT_HASH, [siteId, kind, hash, profileId, now]);
  }

  /** Points an identity at a profile, moving it from whichever profile held it. */
  async setIdentity(siteId: string, kind: IdentityKind, value: string, profileId: string, now: number): Promise<void> {
    await this.x.run(UPSERT_IDENTITY, [siteId, kind, value, profileId, now]);
  }

  /**
   * The profile a session belongs to, creating the session (and an anonymous
   * profile, or the visitor's existing one) on first sight. Hot path: one read
   * and at most one write for a session already seen in the last 30 s.
   */
  async ensureSession(
    siteId: string,
    sessionId: string,
    visitorId: string | undefined,
    ctx: SessionContext,
    now: number,
  ): Promise<{ profileId: string; visitorId: string | null }> {
    const caches = this.caches?.enabled ? this.caches : undefined;
    // Outside the writer's transaction (the caches are off) the row may change here: it must not stay cached.
    if (caches === undefined) this.caches?.dropSession(siteId, sessionId);
    let row = caches?.session(siteId, sessionId);
    const cached = row !== undefined;
    // The visitor's owner, needed when the session is new, is asked with the session, in one statement whose
    // owner part runs only when there is no session (SESSION_OR_OWNER, SESSION_OR_OWNER_SQLITE): one read instead
    // of two one after another for a new session, and no owner's look-up for a known one.
    let visitorOwner: { id: string } | undefined | null = null;
    if (row === undefined) {
      if (this.x.dialect === 'sqlite') {
        // SQLite: the row as the array of its columns (SqliteSql.getRow), read by position into the session's object:
        // better-sqlite3 builds an object row in C++ with one named property at a time (about 1.8k instructions a
        // column, six here), where the literal below is one allocation of a known shape.
        const r =
          visitorId !== undefined
            ? (this.x as SqliteSql).getRow(SESSION_OR_OWNER_SQLITE, [siteId, sessionId, siteId, visitorId])
            : (this.x as SqliteSql).getRow(SESSION, [siteId, sessionId]);
        if (r !== undefined && r[0] !== null) row = sessionOf(r);
        else if (visitorId !== undefined) visitorOwner = r !== undefined ? { id: r[5] as string } : undefined;
      } else if (visitorId !== undefined) {
        const r = await this.x.get<{ profile_id: string | null; visitor_id: string | null; last_seen: number; fbclid: string | null; gclid: string | null; owner: string | null }>(
          SESSION_OR_OWNER,
          [siteId, sessionId, siteId, visitorId],
        );
        // The statement's row serves as the session's (its owner column unused then): no copy per event.
        if (r !== undefined && r.profile_id !== null) row = r as SessionRow;
        else visitorOwner = r?.owner != null ? { id: r.owner } : undefined;
      } else row = await this.x.get<SessionRow>(SESSION, [siteId, sessionId]);
    }
    if (row) {
      const was: SessionRow = row;
      // The row as it is once the writes below are done (what the cache keeps): a copy once one of them
      // changes it (the cached object stays as it is until then), else the row itself.
      let next: SessionRow | undefined;
      if (now - was.last_seen > TOUCH_INTERVAL_MS) {
        await this.x.run(TOUCH_SESSION, [now, siteId, sessionId]);
        (next ??= { ...was }).last_seen = now;
      }
      if (visitorId !== undefined && was.visitor_id === null) {
        await this.x.run(SESSION_VISITOR, [visitorId, siteId, sessionId]);
        await this.x.run(INSERT_IDENTITY, [siteId, 'visitor', visitorId, was.profile_id, now]);
        (next ??= { ...was }).visitor_id = visitorId;
      }
      if ((ctx.fbclid && ctx.fbclid !== was.fbclid) || (ctx.gclid && ctx.gclid !== was.gclid)) {
        const fb = ctx.fbclid ?? null;
        await this.x.run(SESSION_CLICK_IDS, [fb, fb === null ? null : now, ctx.gclid ?? null, siteId, sessionId]);
        const n = (next ??= { ...was });
        n.fbclid = fb ?? was.fbclid;
        n.gclid = ctx.gclid ?? was.gclid;
      }
      // A cached row nothing changed is already the cache's entry (re-setting a key keeps its place in the eviction order).
      if (!cached || next !== undefined) caches?.putSession(siteId, sessionId, next ?? was);
      return { profileId: was.profile_id, visitorId: was.visitor_id ?? visitorId ?? null };
    }
    let profileId =
      visitorId !== undefined ? (visitorOwner !== null ? visitorOwner : await this.x.get<{ id: string }>(OWNER, [siteId, 'visitor', visitorId]))?.id : undefined;
    // Races with concurrent transactions (on PostgreSQL: other instances, or other operations of one group
    // commit) are settled by the unique keys: the loser waits for the winner's commit, then uses its rows.
    let created: string | undefined;
    if (profileId === undefined) {
      created = profileId = newId('prf');
      // The profile and the visitor's identity are asked together (one statement on PostgreSQL).
      const [, claimed] = await Promise.all([
        this.createProfile(siteId, now, false, {}, profileId),
        visitorId !== undefined ? this.x.run(INSERT_IDENTITY, [siteId, 'visitor', visitorId, profileId, now]) : undefined,
      ]);
      if (visitorId !== undefined && claimed!.changes === 0) {
        const owner = await this.x.get<{ id: string }>(OWNER, [siteId, 'visitor', visitorId]);
        if (owner === undefined) throw new WriteConflict('the visitor was claimed by a concurrent request');
        await this.x.run('DELETE FROM profiles WHERE id = ?', [created]);
        created = undefined;
        profileId = owner.id;
      }
    }
    const inserted = await this.x.run(INSERT_SESSION_IF_ABSENT, this.sessionRow(siteId, sessionId, profileId, visitorId, ctx, now));
    if (inserted.changes === 0) {
      const other = await this.x.get<SessionRow>(SESSION, [siteId, sessionId]);
      // A new visitor given to our new profile while the session went to another: start over (the runner retries).
      if (other === undefined || (created !== undefined && visitorId !== undefined)) {
        throw new WriteConflict('the session was created by a concurrent request');
      }
      if (created !== undefined) await this.x.run('DELETE FROM profiles WHERE id = ?', [created]);
      return { profileId: other.profile_id, visitorId: other.visitor_id ?? visitorId ?? null };
    }
    caches?.putSession(siteId, sessionId, {
      profile_id: profileId,
      visitor_id: visitorId ?? null,
      last_seen: now,
      fbclid: ctx.fbclid ?? null,
      gclid: ctx.gclid ?? null,
    });
    return { profileId, visitorId: visitorId ?? null };
  }

  private sessionRow(
    siteId: string,
    sessionId: string,
    profileId: string,
    visitorId: string | undefined,
    ctx: SessionContext,
    now: number,
  ): unknown[] {
    return [
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
    ];
  }

  async insertSession(
    siteId: string,
    sessionId: string,
    profileId: string,
    visitorId: string | undefined,
    ctx: SessionContext,
    now: number,
  ): Promise<void> {
    this.caches?.dropSession(siteId, sessionId);
    await this.x.run(INSERT_SESSION, this.sessionRow(siteId, sessionId, profileId, visitorId, ctx, now));
  }

  async linkSession(siteId: string, sessionId: string, profileId: string, visitorId: string | undefined, now: number): Promise<void> {
    this.caches?.dropSession(siteId, sessionId);
    await this.x.run(
      'UPDATE sessions SET profile_id = ?, visitor_id = coalesce(?, visitor_id), last_seen = ? WHERE site_id = ? AND id = ?',
      [profileId, visitorId ?? null, now, siteId, sessionId],
    );
  }

  async traits(profileId: string): Promise<{ traits: Record<string, string>; known: boolean; primarySegment: string | null }> {
    const row = await this.x.get<{ traits: string; known: number; primary_segment: string | null }>(
      'SELECT traits, known, primary_segment FROM profiles WHERE id = ?',
      [profileId],
    );
    if (!row) return { traits: {}, known: false, primarySegment: null };
    return {
      traits: JSON.parse(row.traits) as Record<string, string>,
      known: row.known === 1,
      primarySegment: row.primary_segment,
    };
  }

  async setTraits(profileId: string, traits: Record<string, string>, known: boolean, now: number): Promise<void> {
    await this.x.run('UPDATE profiles SET traits = ?, known = ?, updated_at = ? WHERE id = ?', [JSON.stringify(traits), known ? 1 : 0, now, profileId]);
  }

  /** Moves everything of profile `from` to profile `to` and marks `from` (and its aliases) merged. */
  async mergeInto(from: string, to: string, now: number): Promise<void> {
    // Sessions of `from` move to `to`: whichever of them are cached.
    this.caches?.clearSessions();
    await this.x.run('UPDATE sessions SET profile_id = ? WHERE profile_id = ?', [to, from]);
    await this.x.run('UPDATE identities SET profile_id = ? WHERE profile_id = ?', [to, from]);
    // profile_id is not part of the key, so moving hashes cannot conflict.
    await this.x.run('UPDATE identity_hashes SET profile_id = ? WHERE profile_id = ?', [to, from]);
    await this.x.run('UPDATE events SET profile_id = ? WHERE profile_id = ?', [to, from]);
    await this.x.run('UPDATE scores SET profile_id = ? WHERE profile_id = ?', [to, from]);
    await this.x.run('UPDATE conversions SET profile_id = ? WHERE profile_id = ?', [to, from]);
    await this.x.run('UPDATE leads SET profile_id = ? WHERE profile_id = ?', [to, from]);
    await this.x.run('DELETE FROM segment_members WHERE profile_id = ?', [from]);
    await this.x.run('UPDATE profiles SET merged_into = ?, updated_at = ? WHERE id = ? OR merged_into = ?', [to, now, from, from]);
  }
}

/** A session's row from its columns in SESSION's order (profile_id, visitor_id, last_seen, fbclid, gclid), as SQLite's getRow returns them. */
function sessionOf(r: unknown[]): SessionRow {
  return { profile_id: r[0] as string, visitor_id: r[1] as string | null, last_seen: r[2] as number, fbclid: r[3] as string | null, gclid: r[4] as string | null };
}

/**
 * Identity stitching rules, as a pure function over who currently owns each
 * identifier of an identify call. The store looks the owners up and carries the
 * plan out in one transaction.
 */
export type { Owner } from '../../store/profiles.js';
import type { Owner } from '../../store/profiles.js';

export interface Owners {
  /** Profile that owns the normalized email, if any. */
  email?: Owner | undefined;
  /** Profile that owns the external_id, if any. */
  externalId?: Owner | undefined;
  /** Profile the visitor_id (persistent cookie) is linked to, if any. */
  visitor?: Owner | undefined;
  /** Profile the session is linked to, if any. */
  session?: Owner | undefined;
}

export type IdentifyPlan =
  | { kind: 'conflict'; message: string }
  | {
      kind: 'ok';
      /** Existing profile that receives the identity, or null to create one. */
      target: Owner | null;
      /** Anonymous profiles merged into the target (their sessions, events and traits move over). */
      absorb: string[];
      /** Whether the session/visitor link is moved to the target from another known profile. */
      relink: boolean;
    };

/**
 * Decides where an identity lands:
 * 1. An email or external_id that already belongs to a profile decides the target
 *    (email first). If they belong to two different profiles the call is a conflict:
 *    two known people are never merged implicitly.
 * 2. Otherwise the first known profile among visitor and session owners, else the
 *    visitor's profile, else the session's profile, else a new profile.
 * 3. Anonymous profiles linked to the visitor or session that are not the target are
 *    absorbed into it (nothing duplicated, nothing dropped). Known ones are left
 *    intact and only the link moves.
 */
export function planIdentify(owners: Owners): IdentifyPlan {
  const { email, externalId, visitor, session } = owners;
  if (email && externalId && email.id !== externalId.id) {
    return {
      kind: 'conflict',
      message: 'the email and the external_id already belong to two different profiles',
    };
  }
  const target =
    email ??
    externalId ??
    (visitor?.known ? visitor : undefined) ??
    (session?.known ? session : undefined) ??
    visitor ??
    session ??
    null;
  const absorb: string[] = [];
  let relink = false;
  for (const o of [visitor, session]) {
    if (!o || (target && o.id === target.id)) continue;
    if (o.known) relink = true;
    else if (!absorb.includes(o.id)) absorb.push(o.id);
  }
  return { kind: 'ok', target, absorb, relink };
}

import type { Store } from '../../store/store.js';
import type { LookupKind, ProfileFacts, ProfileRow } from '../../store/profile-read.js';
import type { ErasureCounts } from '../../store/privacy.js';
import { AppError } from '../../errors/app-error.js';
import { normalizeEmail } from '../identity/normalize.js';
import { eventId, scoreId } from '../ingestion/ids.js';
import type { SegmentMembership } from '../segments/membership.js';
import { buildSnapshot } from './snapshot.js';
import { eraseProfile } from './erase.js';
import type { ProfileSnapshot } from './schema.js';

/** Which identifier names a profile. */
export type { LookupKind };

/** A surviving profile found by one of its identifiers. */
export type FoundProfile = ProfileRow;

/**
 * The surviving profile of a site named by an identifier (email is trimmed
 * and lower-cased first; a merged profile id resolves to the survivor).
 */
export async function findProfile(store: Store, siteId: string, by: LookupKind, value: string): Promise<FoundProfile | undefined> {
  return store.profileRead.find(siteId, by, by === 'email' ? normalizeEmail(value) : value);
}

/**
 * findProfile and the facts of what it finds (undefined when nothing matches), on SQLite in one statement
 * (ProfileReadRepo.findWithFacts): a promise only when the read had to wait.
 */
export function findProfileFacts(store: Store, siteId: string, by: LookupKind, value: string): ProfileFacts | undefined | Promise<ProfileFacts | undefined> {
  return store.profileRead.findWithFacts(siteId, by, by === 'email' ? normalizeEmail(value) : value);
}

/**
 * One profile read as one operation of the store: what `read` reads (the
 * caller's key, then the profile and its facts) is grouped by the store (on
 * SQLite one read transaction, the database's locks taken once rather than
 * once a statement). `read` only reads; a write it awaits (a key's last use)
 * ends the grouping and is stored as any other.
 */
export function asOneRead<T>(store: Store, read: () => Promise<T>): Promise<T> {
  return store.readTogether(read);
}

/** The snapshot of a profile; plaintext email, phone, name and trait values only with `pii`. */
export async function profileSnapshot(store: Store, profile: FoundProfile, pii: boolean): Promise<ProfileSnapshot> {
  return buildSnapshot(await store.profileRead.facts(profile), pii);
}

/** One item of a profile's timeline, ids as ingestion answered them. */
export interface TimelineEntry {
  kind: 'event' | 'conversion' | 'score' | 'lead';
  id: string;
  at: string;
  type: string | null;
  value: number | null;
}

/** The newest events, conversions, scores and leads of a profile, newest first. */
export async function timelineOf(store: Store, siteId: string, profileId: string, limit: number): Promise<TimelineEntry[]> {
  return (await store.insights.timeline(siteId, profileId, limit)).map((i) => ({
    ...i,
    id: i.kind === 'event' ? eventId(i.id) : i.kind === 'score' ? scoreId(i.id) : i.id,
    at: new Date(i.at).toISOString(),
  }));
}

/**
 * Moves everything of one profile into another and marks it merged; traits
 * of the surviving profile win. Answers the survivor's segments.
 */
export async function mergeProfiles(
  store: Store,
  membership: SegmentMembership,
  siteId: string,
  ids: { from: string; into: string },
): Promise<{ merged: string; into: string; segments: string[] }> {
  const from = await store.profileRead.find(siteId, 'profile_id', ids.from);
  const into = await store.profileRead.find(siteId, 'profile_id', ids.into);
  if (!from) throw new AppError('not_found', `no profile ${ids.from}`, { field: 'from_profile_id' });
  if (!into) throw new AppError('not_found', `no profile ${ids.into}`, { field: 'into_profile_id' });
  if (from.id === into.id) throw new AppError('conflict', 'both ids name the same profile', { field: 'into_profile_id' });
  return store.write(async (tx) => {
    const now = Date.now();
    const a = await tx.profiles.traits(from.id);
    const b = await tx.profiles.traits(into.id);
    await tx.profiles.mergeInto(from.id, into.id, now);
    await tx.profiles.setTraits(into.id, { ...a.traits, ...b.traits }, a.known || b.known, now);
    await membership.recompute(tx, siteId, into.id, now, { identity: true });
    return { merged: from.id, into: into.id, segments: [...(await tx.segments.segmentsOf(into.id))].sort() };
  });
}

/** GDPR erasure of a person of the site; answers the rows removed per table. */
export function eraseProfileData(store: Store, membership: SegmentMembership, siteId: string, profileId: string): Promise<ErasureCounts> {
  return store.write((tx) => eraseProfile(tx, membership, siteId, profileId, Date.now()));
}

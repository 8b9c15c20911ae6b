import type { ProfileFacts } from '../../store/profile-read.js';
import type { ProfileSnapshot } from './schema.js';

const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());

/** Trait keys that hold plaintext personal data. */
export const PII_TRAITS: ReadonlySet<string> = new Set(['email', 'phone', 'name']);

/**
 * The snapshot of a profile. Without `pii` it holds no plaintext email, phone,
 * name or trait value anywhere: only hashes, ids, trait names and activity.
 */
export function buildSnapshot(f: ProfileFacts, pii: boolean): ProfileSnapshot {
  const traits = JSON.parse(f.profile.traits) as Record<string, string>;
  const identity: ProfileSnapshot['identity'] = {
    known: f.profile.known === 1,
    visitor_ids: f.identities.filter((i) => i.kind === 'visitor').map((i) => i.value),
    external_ids: f.identities.filter((i) => i.kind === 'external_id').map((i) => i.value),
    email_sha256: f.hashes.filter((h) => h.kind === 'email_sha256').map((h) => h.hash),
    phone_sha256: f.hashes.filter((h) => h.kind === 'phone_sha256').map((h) => h.hash),
    trait_keys: Object.keys(traits).sort(),
  };
  if (pii) {
    identity.email = traits.email ?? null;
    identity.phone = traits.phone ?? null;
    identity.name = traits.name ?? null;
    identity.traits = traits;
  }
  return {
    profile_id: f.profile.id,
    identity,
    segments: {
      primary: f.profile.primary_segment,
      member_of: f.segments.map((s) => ({ id: s.id, name: s.name, priority: s.priority, since: iso(s.since)! })),
    },
    activity: {
      first_seen: iso(f.sessions.first_seen),
      last_seen: iso(f.sessions.last_seen),
      sessions: f.sessions.count,
      events: f.events.reduce((n, e) => n + e.n, 0),
      events_by_type: f.events.map((e) => ({ type: e.type, count: e.n, last_at: iso(e.last)! })),
      conversions: f.conversions.count,
      revenue: f.conversions.revenue,
      currency: f.conversions.currency,
      revenue_other_currencies: f.conversions.otherCurrencies,
      last_conversion_at: iso(f.conversions.last),
      leads: f.leads,
      last_score: f.lastScore ? { score: f.lastScore.score, at: iso(f.lastScore.at)! } : null,
    },
    meta: {
      site_id: f.profile.site_id,
      created_at: iso(f.profile.created_at)!,
      updated_at: iso(f.profile.updated_at)!,
      merged_profile_ids: f.mergedFrom,
      pii,
    },
  };
}

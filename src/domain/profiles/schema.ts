import { z } from 'zod';

/** The profile snapshot: read by the profile REST API and the MCP profile tools. */
export const profileSnapshotSchema = z
  .object({
    profile_id: z.string(),
    identity: z.object({
      known: z.boolean().describe('Whether the profile has an email or external_id.'),
      visitor_ids: z.array(z.string()),
      external_ids: z.array(z.string()),
      email_sha256: z.array(z.string()).describe('SHA-256 of every normalized email of the profile.'),
      phone_sha256: z.array(z.string()).describe('SHA-256 of every normalized phone of the profile.'),
      trait_keys: z.array(z.string()).describe('Names of the traits; their values only with profile:read:pii.'),
      email: z.string().nullable().optional().describe('Plaintext; only with profile:read:pii.'),
      phone: z.string().nullable().optional().describe('Plaintext; only with profile:read:pii.'),
      name: z.string().nullable().optional().describe('Plaintext; only with profile:read:pii.'),
      traits: z.record(z.string(), z.string()).optional().describe('All trait values; only with profile:read:pii.'),
    }),
    segments: z.object({
      primary: z.string().nullable().describe('Highest-priority matching segment.'),
      member_of: z.array(z.object({ id: z.string(), name: z.string(), priority: z.number().int(), since: z.string() })),
    }),
    activity: z.object({
      first_seen: z.string().nullable(),
      last_seen: z.string().nullable(),
      sessions: z.number().int(),
      events: z.number().int(),
      events_by_type: z.array(z.object({ type: z.string(), count: z.number().int(), last_at: z.string() })),
      conversions: z.number().int(),
      revenue: z.number().describe("Sum of the conversions' revenue in the site's currency (`currency`)."),
      currency: z.string().describe("The site's currency (ISO 4217), the one `revenue` is in."),
      revenue_other_currencies: z
        .array(z.object({ currency: z.string(), revenue: z.number() }))
        .describe("Revenue of conversions recorded in another currency (before the site's currency was changed), per currency; never added to `revenue`."),
      last_conversion_at: z.string().nullable(),
      leads: z.number().int(),
      last_score: z.object({ score: z.number().nullable(), at: z.string() }).nullable(),
    }),
    meta: z.object({
      site_id: z.string(),
      created_at: z.string(),
      updated_at: z.string(),
      merged_profile_ids: z.array(z.string()).describe('Profiles that were merged into this one.'),
      pii: z.boolean().describe('Whether plaintext personal data is included.'),
    }),
  })
  .meta({ id: 'ProfileSnapshot', description: 'A profile at decision time: identity, segments, activity, meta.' });
export type ProfileSnapshot = z.infer<typeof profileSnapshotSchema>;


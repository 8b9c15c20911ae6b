import { z } from 'zod';
import type { DestinationRow } from '../../store/webhooks.js';
import { signingModeSchema } from '../../outbound/signer.js';

/**
 * The webhook destination view, declared once. API clients (the MCP tools and
 * the REST API, whose Webhook component adds only its id and description) see
 * the public view; operators (the CLI's --json) see the same fields with the
 * site. No secret is ever shown back.
 */
export const publicDestinationSchema = z.object({
  id: z.string(),
  url: z.string(),
  events: z.array(z.string()),
  has_secret: z.boolean(),
  signing_mode: signingModeSchema,
  secret_rotated_at: z.string().nullable().describe('When the secret was last rotated.'),
  previous_secret_expires_at: z
    .string()
    .nullable()
    .describe('While a rotation is in its grace period: when the old secret stops signing deliveries. null otherwise.'),
  enabled: z.boolean(),
  disabled_reason: z.string().nullable(),
  description: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

export type PublicDestinationView = z.infer<typeof publicDestinationSchema>;

/** A destination as shown to operators: the public view and its site. */
export const destinationViewSchema = publicDestinationSchema.extend({ site_id: z.string() });

export type DestinationView = z.infer<typeof destinationViewSchema>;

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** A destination as shown to operators and API clients: no secret is ever shown back. */
export function destinationView(d: DestinationRow, now = Date.now()): DestinationView {
  const graceEnds = d.previous_secret_enc !== null && d.previous_secret_expires_at !== null && d.previous_secret_expires_at > now ? d.previous_secret_expires_at : null;
  return {
    id: d.id,
    site_id: d.site_id,
    url: d.url,
    events: JSON.parse(d.events) as string[],
    has_secret: d.secret_enc !== null,
    signing_mode: d.signing_mode,
    secret_rotated_at: iso(d.secret_rotated_at),
    previous_secret_expires_at: iso(graceEnds),
    enabled: d.enabled === 1,
    disabled_reason: d.disabled_reason,
    description: d.description,
    created_at: new Date(d.created_at).toISOString(),
    updated_at: new Date(d.updated_at).toISOString(),
  };
}

/** The public view of an operator view: the same fields without the site. */
export function publicDestination(v: DestinationView): PublicDestinationView {
  const { site_id: _site, ...rest } = v;
  return rest;
}

export function publicDestinationView(d: DestinationRow, now = Date.now()): PublicDestinationView {
  return publicDestination(destinationView(d, now));
}

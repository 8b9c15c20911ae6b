import { z } from 'zod';
import type { AdConnectionRow, AdJobRow } from '../../store/adplatforms.js';
import { PLATFORM_FIELDS } from '../../adplatforms/connections.js';

/**
 * The ad-platform connection view, declared once: operators (the CLI) see it
 * with the site, API clients (the MCP tools) without.
 */
export const connectionViewSchema = z.object({
  id: z.string(),
  site_id: z.string(),
  platform: z.enum(['meta', 'google_ads']),
  name: z.string().nullable(),
  settings: z.record(z.string(), z.string()),
  secrets: z.array(z.string()).describe('Names of the stored credentials; their values are never shown.'),
  enabled: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
});

export type ConnectionView = z.infer<typeof connectionViewSchema>;

/** A connection as a site's API clients see it: the view without the site. */
export const publicConnectionSchema = connectionViewSchema.omit({ site_id: true });

export type PublicConnectionView = z.infer<typeof publicConnectionSchema>;

/** A connection as operators see it: settings, and only the names of its secrets. */
export function connectionView(row: AdConnectionRow): ConnectionView {
  return {
    id: row.id,
    site_id: row.site_id,
    platform: row.platform,
    name: row.name,
    settings: JSON.parse(row.config) as Record<string, string>,
    secrets: Object.keys(PLATFORM_FIELDS[row.platform].secrets.shape).sort(),
    enabled: row.enabled === 1,
    created_at: new Date(row.created_at).toISOString(),
    updated_at: new Date(row.updated_at).toISOString(),
  };
}

export function publicConnection(v: ConnectionView): PublicConnectionView {
  const { site_id: _site, ...rest } = v;
  return rest;
}

/** A conversion job as `svc adplatform jobs --json` shows it. */
export const jobViewSchema = z.object({
  id: z.string(),
  connection_id: z.string(),
  conversion_id: z.string(),
  state: z.enum(['pending', 'delivered', 'failed']),
  attempts: z.number().int(),
  next_attempt_at: z.string().nullable(),
  last_status: z.number().int().nullable(),
  last_error: z.string().nullable(),
  created_at: z.string(),
  delivered_at: z.string().nullable(),
});

export type JobView = z.infer<typeof jobViewSchema>;

export function jobView(j: AdJobRow): JobView {
  return {
    id: j.id,
    connection_id: j.connection_id,
    conversion_id: j.conversion_id,
    state: j.state,
    attempts: j.attempts,
    next_attempt_at: j.state === 'pending' ? new Date(j.next_attempt_at).toISOString() : null,
    last_status: j.last_status,
    last_error: j.last_error,
    created_at: new Date(j.created_at).toISOString(),
    delivered_at: j.delivered_at === null ? null : new Date(j.delivered_at).toISOString(),
  };
}

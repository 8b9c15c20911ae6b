import { z } from 'zod';
import type { Store } from '../../store/store.js';
import type { DeliveryFilter, HealthRow } from '../../store/webhooks.js';

/**
 * The integration health log as its readers see it: one entry per delivery
 * attempt, test send, replay, or disable/enable of a webhook destination or an
 * ad-platform connection. Each view is declared once here; a surface that
 * shows fewer fields picks them (`attemptViewSchema.pick`, `pickView`), so the
 * field types and their order cannot drift between the CLI, the REST API and
 * the MCP tools.
 */

/** One entry of a webhook destination's log, every field (the CLI's `svc webhooks health --json`). */
export const attemptViewSchema = z.object({
  id: z.number().int(),
  at: z.string(),
  site_id: z.string(),
  destination_id: z.string(),
  delivery_id: z.string().nullable(),
  event: z.string().nullable(),
  kind: z.string(),
  attempt: z.number().int().nullable(),
  ok: z.boolean(),
  status: z.number().int().nullable(),
  latency_ms: z.number().int().nullable(),
  error_class: z.string().nullable(),
  message: z.string().nullable(),
  response_excerpt: z.string().nullable(),
});

export type AttemptView = z.infer<typeof attemptViewSchema>;

/** One entry of an ad-platform connection's log: the connection is the destination, the job the delivery. */
export const adAttemptViewSchema = z.object({
  id: z.number().int(),
  at: z.string(),
  site_id: z.string(),
  platform: z.string(),
  connection_id: z.string(),
  job_id: z.string().nullable(),
  attempt: z.number().int().nullable(),
  ok: z.boolean(),
  status: z.number().int().nullable(),
  latency_ms: z.number().int().nullable(),
  error_class: z.string().nullable(),
  message: z.string().nullable(),
  response_excerpt: z.string().nullable(),
});

export type AdAttemptView = z.infer<typeof adAttemptViewSchema>;

export function attemptView(r: HealthRow): AttemptView {
  return {
    id: r.id,
    at: new Date(r.created_at).toISOString(),
    site_id: r.site_id,
    destination_id: r.destination_id,
    delivery_id: r.delivery_id,
    event: r.event_type,
    kind: r.kind,
    attempt: r.attempt,
    ok: r.ok === 1,
    status: r.status,
    latency_ms: r.latency_ms,
    error_class: r.error_class,
    message: r.message,
    response_excerpt: r.response_excerpt,
  };
}

export function adAttemptView(r: HealthRow): AdAttemptView {
  return {
    id: r.id,
    at: new Date(r.created_at).toISOString(),
    site_id: r.site_id,
    platform: r.integration,
    connection_id: r.destination_id,
    job_id: r.delivery_id,
    attempt: r.attempt,
    ok: r.ok === 1,
    status: r.status,
    latency_ms: r.latency_ms,
    error_class: r.error_class,
    message: r.message,
    response_excerpt: r.response_excerpt,
  };
}

/** The fields of `schema` (a pick of a view schema) taken from `view`, in the schema's order. */
export function pickView<S extends z.ZodObject>(view: Record<string, unknown>, schema: S): z.infer<S> {
  return Object.fromEntries(Object.keys(schema.shape).map((k) => [k, view[k]])) as z.infer<S>;
}

export type AttemptFilter = DeliveryFilter & { integration?: string | readonly string[] | undefined };

/** The log of webhook destinations (oldest first, the newest `limit`), as views. */
export async function attemptLog(store: Store, filter: AttemptFilter): Promise<AttemptView[]> {
  return (await store.webhooks.healthLog(filter)).map(attemptView);
}

/** The log of ad-platform connections (filter by `integration`: the platforms), as views. */
export async function adAttemptLog(store: Store, filter: AttemptFilter): Promise<AdAttemptView[]> {
  return (await store.webhooks.healthLog(filter)).map(adAttemptView);
}

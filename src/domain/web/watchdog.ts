import { z } from 'zod';
import { AppError } from '../../errors/app-error.js';
import { validationError } from '../../errors/validation.js';
import type { Repos } from '../../store/repos.js';
import { CATALOGUE } from '../../webhooks/catalogue.js';
import { decisionCache } from './decisions.js';

/**
 * The variant watchdog. The browser tag reports every render of a variant
 * (POST /api/events, type variant_render, properties variant_id, ok, error).
 * Over a sliding window of the last WINDOW_MINUTES minutes (counting only
 * renders since the variant was last published), when there were at least
 * MIN_RENDERS renders and at least FAILURE_RATE of them failed, the variant is
 * disabled in the same transaction as the render that tripped it (it stops
 * being served at once) and `variant.watchdog_disabled` is enqueued with the counts.
 */
export const WATCHDOG = {
  windowMinutes: 15,
  minRenders: 50,
  failureRate: 0.2,
} as const;

export interface WatchdogPolicy {
  windowMinutes: number;
  minRenders: number;
  failureRate: number;
}

/** Whether window counts trip the watchdog: renders ≥ minRenders and failures / renders ≥ failureRate. */
export function tripped(renders: number, failures: number, policy: WatchdogPolicy = WATCHDOG): boolean {
  return renders >= policy.minRenders && renders > 0 && failures / renders >= policy.failureRate;
}

export const variantRenderSchema = z.object({
  variant_id: z.string().min(1).max(128).describe('The variant the tag rendered.'),
  ok: z.boolean().describe('Whether the render succeeded.'),
  error: z.string().max(500).nullish().describe('What went wrong, when it failed (at most 500 characters).'),
});

export interface VariantRender {
  variantId: string;
  ok: boolean;
  error: string | null;
}

/** The render properties of a variant_render event, or validation_failed (nothing is stored). */
export function parseVariantRender(event: Record<string, unknown>): VariantRender {
  const r = variantRenderSchema.safeParse(event);
  if (!r.success) throw validationError(r.error);
  return { variantId: r.data.variant_id, ok: r.data.ok, error: r.data.ok ? null : (r.data.error ?? null) };
}

/**
 * Records a render and applies the watchdog. Runs inside the write operation of
 * the event (its `tx`); an unknown variant refuses the whole event.
 */
export async function recordVariantRender(tx: Repos, siteId: string, render: VariantRender, now: number): Promise<{ disabled: boolean }> {
  const variant = await tx.variants.get(siteId, render.variantId);
  if (!variant) throw new AppError('validation_failed', `variant_id: no variant ${render.variantId} in this site`, { field: 'variant_id' });
  await tx.renders.insert({ siteId, variantId: variant.id, ok: render.ok, error: render.error, at: now });
  const windowMs = WATCHDOG.windowMinutes * 60_000;
  await tx.renders.prune(variant.id, now - 4 * windowMs);
  if (variant.status !== 'published' && variant.status !== 'approved') return { disabled: false };
  const since = Math.max(now - windowMs, Number(variant.published_at ?? 0));
  const c = await tx.renders.counts(siteId, variant.id, since);
  if (!tripped(c.renders, c.failures)) return { disabled: false };
  const reason = `watchdog: ${c.failures} of ${c.renders} renders failed in the last ${WATCHDOG.windowMinutes} minutes`;
  if ((await tx.variants.transition(siteId, variant.id, variant.status, 'disabled', 'watchdog', now, reason)) === 0) return { disabled: false };
  const experiments = await tx.experimentRefs.referencing(siteId, { variantId: variant.id });
  let experimentId: string | null = null;
  for (const id of experiments) {
    const e = await tx.experimentRefs.get(siteId, id);
    if (e && (e.status === 'running' || experimentId === null)) experimentId = id;
  }
  const payload = CATALOGUE['variant.watchdog_disabled'].schema.parse({
    event: 'variant.watchdog_disabled',
    site_id: siteId,
    variant_id: variant.id,
    zone_id: variant.zone_id,
    experiment_id: experimentId,
    render_attempts: c.renders,
    render_failures: c.failures,
    window_minutes: WATCHDOG.windowMinutes,
    timestamp: new Date(now).toISOString(),
  });
  await tx.activity.enqueue(siteId, 'variant.watchdog_disabled', payload, now);
  decisionCache(tx).invalidate(siteId);
  return { disabled: true };
}

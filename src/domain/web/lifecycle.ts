import { AppError } from '../../errors/app-error.js';
import type { VariantStatus } from '../../store/variants.js';

/**
 * The lifecycle of a variant:
 *
 *   draft ──approve──▶ approved ──publish──▶ published ──disable──▶ disabled
 *     │                   │  └──disable──▶ disabled ──publish──▶ published
 *     └──────archive──────┴──── archive from any status but archived ─────▶ archived
 *
 * - Only drafts are edited (variants_update_draft); approving fixes which content block it
 *   shows (the block itself stays editable with content_update, for every variant using it).
 * - Only published variants are served by placements and pins (experiment arms
 *   and QA force_arm overrides also serve approved ones).
 * - disable stops serving at once (by hand, or the watchdog); publish puts a
 *   disabled variant back after a fix; archived is final.
 */
export type VariantAction = 'approve' | 'publish' | 'disable' | 'archive';

export const TRANSITIONS: Readonly<Record<VariantAction, { from: readonly VariantStatus[]; to: VariantStatus }>> = {
  approve: { from: ['draft'], to: 'approved' },
  publish: { from: ['approved', 'disabled'], to: 'published' },
  disable: { from: ['approved', 'published'], to: 'disabled' },
  archive: { from: ['draft', 'approved', 'published', 'disabled'], to: 'archived' },
};

/** The status after `action`, or a conflict naming the allowed starting statuses. */
export function nextStatus(current: VariantStatus, action: VariantAction): VariantStatus {
  const t = TRANSITIONS[action];
  if (!t.from.includes(current)) {
    throw new AppError('conflict', `cannot ${action} a ${current} variant (allowed from: ${t.from.join(', ')})`, {
      status: current,
      action,
      allowed_from: [...t.from],
    });
  }
  return t.to;
}

/** Statuses whose variant a placement or a zone pin may serve. */
export function servableByPlacement(status: VariantStatus): boolean {
  return status === 'published';
}

/** Statuses whose variant an experiment arm or a QA force_arm may serve. */
export function servableByArm(status: VariantStatus): boolean {
  return status === 'published' || status === 'approved';
}

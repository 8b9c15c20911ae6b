import { describe, expect, it } from 'vitest';
import { nextStatus, servableByArm, servableByPlacement, TRANSITIONS, type VariantAction } from '../../src/domain/web/lifecycle.js';
import { AppError } from '../../src/errors/app-error.js';
import type { VariantStatus } from '../../src/store/variants.js';

const STATUSES: VariantStatus[] = ['draft', 'approved', 'published', 'disabled', 'archived'];
const ACTIONS: VariantAction[] = ['approve', 'publish', 'disable', 'archive'];

/** The documented table, spelled out independently of TRANSITIONS. */
const ALLOWED: Record<string, VariantStatus> = {
  'draft/approve': 'approved',
  'approved/publish': 'published',
  'disabled/publish': 'published',
  'approved/disable': 'disabled',
  'published/disable': 'disabled',
  'draft/archive': 'archived',
  'approved/archive': 'archived',
  'published/archive': 'archived',
  'disabled/archive': 'archived',
};

describe('variant lifecycle', () => {
  it('allows exactly the documented transitions; every other is a conflict', () => {
    for (const s of STATUSES) {
      for (const a of ACTIONS) {
        const want = ALLOWED[`${s}/${a}`];
        if (want) expect(nextStatus(s, a), `${s} ${a}`).toBe(want);
        else {
          let err: unknown;
          try {
            nextStatus(s, a);
          } catch (e) {
            err = e;
          }
          expect(err, `${s} ${a}`).toBeInstanceOf(AppError);
          expect((err as AppError).code).toBe('conflict');
          expect((err as AppError).details).toMatchObject({ status: s, action: a, allowed_from: TRANSITIONS[a].from });
        }
      }
    }
  });
  it('a draft cannot be published without approval; archived is final', () => {
    expect(() => nextStatus('draft', 'publish')).toThrow(/cannot publish a draft/);
    for (const a of ACTIONS) expect(() => nextStatus('archived', a)).toThrow(AppError);
  });
  it('only published variants are placed or pinned; arms also serve approved ones', () => {
    expect(STATUSES.filter(servableByPlacement)).toEqual(['published']);
    expect(STATUSES.filter(servableByArm)).toEqual(['approved', 'published']);
  });
});

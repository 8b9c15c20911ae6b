import { describe, expect, it } from 'vitest';
import { parseVariantRender, tripped, WATCHDOG } from '../../src/domain/web/watchdog.js';
import { AppError } from '../../src/errors/app-error.js';

describe('watchdog thresholds', () => {
  it('documents 15 minutes, 50 renders, 20% failures', () => {
    expect(WATCHDOG).toEqual({ windowMinutes: 15, minRenders: 50, failureRate: 0.2 });
  });
  it('needs at least the minimum number of renders', () => {
    expect(tripped(49, 49)).toBe(false);
    expect(tripped(50, 10)).toBe(true);
    expect(tripped(0, 0)).toBe(false);
  });
  it('trips at the failure rate, not just below it', () => {
    expect(tripped(50, 9)).toBe(false); // 18%
    expect(tripped(50, 10)).toBe(true); // exactly 20%
    expect(tripped(100, 19)).toBe(false); // 19%
    expect(tripped(100, 20)).toBe(true);
    expect(tripped(1000, 199)).toBe(false); // 19.9%
    expect(tripped(1000, 200)).toBe(true);
  });
  it('follows a custom policy', () => {
    expect(tripped(5, 1, { windowMinutes: 1, minRenders: 5, failureRate: 0.2 })).toBe(true);
    expect(tripped(4, 4, { windowMinutes: 1, minRenders: 5, failureRate: 0.2 })).toBe(false);
  });
});

describe('variant_render properties', () => {
  it('reads variant_id, ok and error (error kept only for failures)', () => {
    expect(parseVariantRender({ variant_id: 'var_1', ok: false, error: 'selector not found' })).toEqual({ variantId: 'var_1', ok: false, error: 'selector not found' });
    expect(parseVariantRender({ variant_id: 'var_1', ok: true, error: 'ignored' })).toEqual({ variantId: 'var_1', ok: true, error: null });
    expect(parseVariantRender({ variant_id: 'var_1', ok: false })).toEqual({ variantId: 'var_1', ok: false, error: null });
  });
  it('refuses missing or mistyped properties with validation_failed naming the field', () => {
    const fail = (e: Record<string, unknown>) => {
      try {
        parseVariantRender(e);
      } catch (err) {
        expect(err).toBeInstanceOf(AppError);
        return (err as AppError).details?.field;
      }
      throw new Error('accepted');
    };
    expect(fail({ ok: true })).toBe('variant_id');
    expect(fail({ variant_id: 'v', ok: 'yes' })).toBe('ok');
    expect(fail({ variant_id: 'v', ok: false, error: 'x'.repeat(501) })).toBe('error');
    expect(fail({ variant_id: '', ok: true })).toBe('variant_id');
  });
});

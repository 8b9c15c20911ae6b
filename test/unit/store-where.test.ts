import { describe, expect, it } from 'vitest';
import { whereOf } from '../../src/store/where.js';

describe('whereOf', () => {
  it('keeps the filters that have a value, with their parameters in order', () => {
    expect(
      whereOf([
        ['site_id = ?', 'site_1'],
        ['state = ?', undefined],
        [`integration IN (?, ?)`, ['meta', 'google_ads']],
        ['ok = 0', true],
        ["state = 'failed'", false],
        ['created_at >= ?', 0],
      ]),
    ).toEqual({ sql: 'WHERE site_id = ? AND integration IN (?, ?) AND ok = 0 AND created_at >= ?', params: ['site_1', 'meta', 'google_ads', 0] });
  });

  it('is empty when no filter applies', () => {
    expect(whereOf([['site_id = ?', undefined]])).toEqual({ sql: '', params: [] });
  });
});

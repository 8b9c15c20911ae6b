import { describe, expect, it } from 'vitest';
import { newId, newIds } from '../../src/store/ids.js';

describe('newIds', () => {
  it('gives n distinct ids of newId form, in ascending order', () => {
    const ids = newIds('dlv', 500);
    expect(ids).toHaveLength(500);
    expect(new Set(ids).size).toBe(500);
    const form = /^dlv_[0-9a-z]{9}[0-9a-f]{16}$/;
    for (const id of ids) expect(id).toMatch(form);
    expect(newId('dlv')).toMatch(form);
    expect([...ids].sort()).toEqual(ids);
  });

  it('gives an empty list for none', () => {
    expect(newIds('dlv', 0)).toEqual([]);
  });
});

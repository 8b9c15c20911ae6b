import { describe, expect, it } from 'vitest';
import { newId, newIds, newPublicId } from '../../src/store/ids.js';

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

describe('ids from the pooled random bytes', () => {
  it('never repeats random bits across pool refills, and newPublicId keeps its form', () => {
    // 4 KiB of pool is 512 ids of 8 bytes: 3,000 ids cross several refills.
    const tails = new Set<string>();
    for (let i = 0; i < 3_000; i++) tails.add(newId('prf').slice(-16));
    expect(tails.size).toBe(3_000);
    // An all-zero tail would mean bytes taken from a used (zeroed) part of the pool.
    expect(tails.has('0'.repeat(16))).toBe(false);
    const pub = new Set<string>();
    for (let i = 0; i < 1_000; i++) {
      const id = newPublicId('tok');
      expect(id).toMatch(/^tok_[A-Za-z0-9_-]{16}$/);
      pub.add(id);
    }
    expect(pub.size).toBe(1_000);
  });

  it('takes a batch larger than the pool', () => {
    const ids = newIds('dlv', 1_000);
    expect(new Set(ids.map((id) => id.slice(-16))).size).toBe(1_000);
  });
});

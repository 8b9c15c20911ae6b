import { describe, expect, it } from 'vitest';
import { planIdentify } from '../../src/domain/identity/plan.js';
import { normalizeEmail, normalizePhoneDigits, sha256Hex } from '../../src/domain/identity/normalize.js';

const known = (id: string) => ({ id, known: true });
const anon = (id: string) => ({ id, known: false });

describe('planIdentify', () => {
  it('creates a profile when nothing is known', () => {
    expect(planIdentify({})).toEqual({ kind: 'ok', target: null, absorb: [], relink: false });
  });
  it('lands on the email owner and absorbs the anonymous session and visitor profiles', () => {
    expect(planIdentify({ email: known('P'), visitor: anon('V'), session: anon('S') })).toEqual({
      kind: 'ok',
      target: known('P'),
      absorb: ['V', 'S'],
      relink: false,
    });
  });
  it('prefers email over external_id when both point to the same profile', () => {
    const plan = planIdentify({ email: known('P'), externalId: known('P'), session: anon('S') });
    expect(plan).toMatchObject({ target: known('P'), absorb: ['S'] });
  });
  it('is a conflict when email and external_id belong to different profiles', () => {
    expect(planIdentify({ email: known('A'), externalId: known('B') }).kind).toBe('conflict');
  });
  it('never merges two known profiles: the link moves instead', () => {
    expect(planIdentify({ email: known('P'), session: known('Q') })).toEqual({
      kind: 'ok',
      target: known('P'),
      absorb: [],
      relink: true,
    });
  });
  it('prefers a known visitor or session profile over an anonymous one', () => {
    expect(planIdentify({ visitor: anon('V'), session: known('S') })).toMatchObject({ target: known('S'), absorb: ['V'] });
    expect(planIdentify({ visitor: anon('V'), session: anon('S') })).toMatchObject({ target: anon('V'), absorb: ['S'] });
  });
  it('absorbs a profile once when visitor and session share it', () => {
    expect(planIdentify({ email: known('P'), visitor: anon('X'), session: anon('X') })).toMatchObject({ absorb: ['X'] });
  });
});

describe('normalization', () => {
  it('trims and lower-cases emails', () => {
    expect(normalizeEmail('  Jane.Doe@Example.COM ')).toBe('jane.doe@example.com');
  });
  it('keeps phone digits only and drops a 00 international prefix', () => {
    expect(normalizePhoneDigits('+44 (20) 7946-0000')).toBe('442079460000');
    expect(normalizePhoneDigits('0044 20 7946 0000')).toBe('442079460000');
  });
  it('hashes with SHA-256 hex', () => {
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});

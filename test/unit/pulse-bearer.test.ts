import { describe, expect, it } from 'vitest';
import { plainBearer } from '../../src/pulse/auth.js';

/** The regular expression authenticateKey reads a header with when plainBearer declines it. */
const BEARER = /^Bearer\s+(\S+)\s*$/i;

describe('plainBearer', () => {
  it('takes the usual header and gives what the regular expression captures', () => {
    expect(plainBearer('Bearer pls_live_abc123')).toBe('pls_live_abc123');
    expect(plainBearer('Bearer x')).toBe('x');
  });

  it('declines anything it does not read exactly as the regular expression does', () => {
    for (const h of ['Bearer ', 'Bearer', 'bearer pls_live_a', 'BEARER pls_live_a', 'Bearer  pls_live_a', 'Bearer\tpls_live_a', 'Bearer pls_live_a ', 'Bearer pls live', 'Bearer pls_live_\u00e9', 'Bearer pls\u00a0live', 'Bearer a\u007f', 'Basic abc']) {
      expect(plainBearer(h), JSON.stringify(h)).toBeUndefined();
    }
  });

  it('agrees with the regular expression wherever it answers (20,000 generated headers)', () => {
    const schemes = ['Bearer', 'Bearer', 'Bearer', 'bearer', 'BEARER', 'Bearer:', 'Bear', ''];
    const gaps = [' ', ' ', ' ', '  ', '\t', '\u00a0', '\u2003', ''];
    const chars = ['a', 'Z', '0', '_', '-', '~', '!', 'q', 'x', '9', 'p', 'L', '\u007f', '\u0080', '\u00e9', ' ', '\t', '\u2028', '\ufeff', '\ud83d\ude00', '\u0000'];
    let seed = 7;
    const rand = (n: number) => Math.floor((seed = (seed * 1103515245 + 12345) % 2147483648) / 65536) % n;
    let taken = 0;
    for (let i = 0; i < 20_000; i++) {
      let cred = '';
      for (let k = rand(8); k > 0; k--) cred += chars[rand(chars.length)];
      const h = `${schemes[rand(schemes.length)]}${gaps[rand(gaps.length)]}${cred}${rand(8) === 0 ? gaps[rand(gaps.length)] : ''}`;
      const got = plainBearer(h);
      if (got === undefined) continue;
      taken++;
      expect(got, JSON.stringify(h)).toBe(BEARER.exec(h)?.[1]);
    }
    expect(taken).toBeGreaterThan(300);
  });
});

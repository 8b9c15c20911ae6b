import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sign, verifySignature } from '../../src/outbound/signing.js';
import * as library from '../../src/index.js';

const secret = 'whsec_0123456789abcdef';
const body = '{"event":"conversion","site_id":"site_a","revenue":19.99,"note":"café ☕"}';
const independent = createHmac('sha256', Buffer.from(secret, 'utf8')).update(Buffer.from(body, 'utf8')).digest('hex');

describe('sign', () => {
  it('is the lowercase hex HMAC-SHA256 of the raw body', () => {
    expect(sign(body, secret)).toBe(independent);
    expect(sign(Buffer.from(body, 'utf8'), secret)).toBe(independent);
    expect(independent).toMatch(/^[0-9a-f]{64}$/);
  });

  it('matches the RFC 4231 test case 2 vector', () => {
    expect(sign('what do ya want for nothing?', 'Jefe')).toBe(
      '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
    );
  });

  it('keys by the site_id when no secret is set (anyone with the snippet can reproduce it)', () => {
    expect(sign(body, 'site_a')).toBe(createHmac('sha256', 'site_a').update(body).digest('hex'));
    expect(sign(body, 'site_a')).not.toBe(independent);
  });
});

describe('verifySignature', () => {
  it('accepts the right signature for string and byte bodies', () => {
    expect(verifySignature({ body, signature: independent, secret })).toBe(true);
    expect(verifySignature({ body: Buffer.from(body), signature: independent, secret })).toBe(true);
    expect(verifySignature({ body: new Uint8Array(Buffer.from(body)), signature: independent, secret })).toBe(true);
  });

  it('accepts upper- and mixed-case hex (hex is case-insensitive)', () => {
    expect(verifySignature({ body, signature: independent.toUpperCase(), secret })).toBe(true);
    const mixed = [...independent].map((c, i) => (i % 2 ? c.toUpperCase() : c)).join('');
    expect(verifySignature({ body, signature: mixed, secret })).toBe(true);
  });

  it('refuses a tampered body, a tampered signature and the wrong secret', () => {
    expect(verifySignature({ body: body.replace('19.99', '1999'), signature: independent, secret })).toBe(false);
    expect(verifySignature({ body: `${body} `, signature: independent, secret })).toBe(false);
    expect(verifySignature({ body: JSON.stringify(JSON.parse(body), null, 1), signature: independent, secret })).toBe(false);
    const flipped = (independent[0] === '0' ? '1' : '0') + independent.slice(1);
    expect(verifySignature({ body, signature: flipped, secret })).toBe(false);
    const lastFlipped = independent.slice(0, -1) + (independent.endsWith('f') ? 'e' : 'f');
    expect(verifySignature({ body, signature: lastFlipped, secret })).toBe(false);
    expect(verifySignature({ body, signature: independent, secret: `${secret}x` })).toBe(false);
    expect(verifySignature({ body, signature: independent, secret: 'site_a' })).toBe(false);
  });

  it('returns false without throwing for malformed, odd-length or wrong-length signatures', () => {
    const bad: unknown[] = [
      '',
      undefined,
      null,
      42,
      ['a'],
      independent.slice(0, -1),
      `${independent}0`,
      `${independent}00`,
      independent.slice(0, 62),
      `z${independent.slice(1)}`,
      `sha256=${independent}`,
      ` ${independent}`,
      `${independent}\n`,
      'g'.repeat(64),
      '0x' + independent.slice(2),
      independent.slice(0, 32),
    ];
    for (const signature of bad) {
      expect(() => verifySignature({ body, signature: signature as string, secret })).not.toThrow();
      expect(verifySignature({ body, signature: signature as string, secret }), String(signature)).toBe(false);
    }
  });

  it('returns false without throwing for an empty secret or a body that is not text or bytes', () => {
    expect(verifySignature({ body, signature: sign(body, ''), secret: '' })).toBe(false);
    const parsed = JSON.parse(body) as unknown;
    expect(verifySignature({ body: parsed as string, signature: independent, secret })).toBe(false);
    expect(verifySignature({ body: undefined as unknown as string, signature: independent, secret })).toBe(false);
  });

  it('is exported by name from the package entry point', () => {
    expect(library.verifySignature).toBe(verifySignature);
    expect(library.sign).toBe(sign);
    expect(Object.keys(library).sort()).toEqual(['CATALOGUE', 'EVENT_TYPES', 'sign', 'toStandardSecret', 'validatePayload', 'verifySignature', 'verifyStandardSignature', 'verifyWebhook']);
  });
});

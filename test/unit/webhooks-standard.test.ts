import { createHmac, randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { signatureHeaders, svcKeys, type SigningKeys } from '../../src/outbound/signer.js';
import {
  decodeStandardSecret,
  generateSecret,
  isNewStandardSecret,
  signStandard,
  standardKey,
  toStandardSecret,
  verifyStandardSignature,
} from '../../src/outbound/standard.js';
import { verifyWebhook } from '../../src/webhooks/verify.js';
import * as lib from '../../src/index.js';

const hex = (body: string, key: string) => createHmac('sha256', key).update(body, 'utf8').digest('hex');
const body = '{"event":"conversion","site_id":"site_a","revenue":12.5,"note":"caf\u00e9 \u2713"}';
const msg = { body, deliveryId: 'dlv_abc', eventType: 'conversion' };
const OLD = `whsec_${randomBytes(32).toString('base64')}`;
const NEW = `whsec_${randomBytes(24).toString('base64')}`;
const NOW = Date.UTC(2026, 10, 25, 12, 0, 0);

/** The official Standard Webhooks verifier, at the real clock: headers are signed at Date.now() here. */
function officialVerify(secret: string, headers: Record<string, string>): boolean {
  try {
    new Webhook(secret).verify(body, headers);
    return true;
  } catch {
    return false;
  }
}

describe('secrets', () => {
  it('takes whsec_<base64> as its decoded bytes and any other text as its UTF-8 bytes', () => {
    const key = randomBytes(32);
    expect(standardKey(`whsec_${key.toString('base64')}`).equals(key)).toBe(true);
    expect(standardKey('3f1c9a0b2e').equals(Buffer.from('3f1c9a0b2e', 'utf8'))).toBe(true);
    // A whsec_ prefix without valid base64 after it is text like any other.
    expect(decodeStandardSecret('whsec_test_secret')).toBeNull();
    expect(standardKey('whsec_test_secret').toString('utf8')).toBe('whsec_test_secret');
  });

  it('maps a secret to the form Standard Webhooks libraries take, with the same key bytes', () => {
    expect(toStandardSecret(OLD)).toBe(OLD);
    const mapped = toStandardSecret('an-old-hex-or-any-secret');
    expect(mapped).toBe(`whsec_${Buffer.from('an-old-hex-or-any-secret').toString('base64')}`);
    expect(standardKey(mapped).equals(standardKey('an-old-hex-or-any-secret'))).toBe(true);
  });

  it('generates whsec_ secrets of 32 random bytes, and accepts 24 to 64 bytes as a new standard secret', () => {
    const a = generateSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(decodeStandardSecret(a)!.length).toBe(32);
    expect(generateSecret()).not.toBe(a);
    expect(isNewStandardSecret(a)).toBe(true);
    expect(isNewStandardSecret(`whsec_${randomBytes(24).toString('base64')}`)).toBe(true);
    expect(isNewStandardSecret(`whsec_${randomBytes(64).toString('base64')}`)).toBe(true);
    expect(isNewStandardSecret(`whsec_${randomBytes(23).toString('base64')}`)).toBe(false);
    expect(isNewStandardSecret(`whsec_${randomBytes(65).toString('base64')}`)).toBe(false);
    expect(isNewStandardSecret(randomBytes(32).toString('hex'))).toBe(false);
    expect(isNewStandardSecret('whsec_not base64!')).toBe(false);
  });

  it('signs exactly as the official library does', () => {
    const wh = new Webhook(OLD);
    const at = new Date(NOW);
    expect(`v1,${signStandard({ id: 'msg_1', timestamp: NOW / 1000, body, key: standardKey(OLD) })}`).toBe(wh.sign('msg_1', at, body));
  });
});

describe('signatureHeaders', () => {
  it('svc mode, never rotated: X-SVC-Signature, X-SVC-Event and X-SVC-Delivery only, in that order', () => {
    const h = signatureHeaders(svcKeys('k-secret'), msg, NOW);
    expect(Object.entries(h)).toEqual([
      ['x-svc-signature', hex(body, 'k-secret')],
      ['x-svc-event', 'conversion'],
      ['x-svc-delivery', 'dlv_abc'],
    ]);
  });

  it('standard mode adds webhook-id (the delivery id), webhook-timestamp (seconds) and one v1 signature the official verifier accepts', () => {
    const now = Date.now();
    const h = signatureHeaders({ mode: 'standard', current: NEW, previous: null, previousUntil: null }, msg, now);
    expect(Object.keys(h)).toEqual(['x-svc-signature', 'x-svc-event', 'x-svc-delivery', 'webhook-id', 'webhook-timestamp', 'webhook-signature']);
    expect(h['x-svc-signature']).toBe(hex(body, NEW));
    expect(h['webhook-id']).toBe('dlv_abc');
    expect(h['webhook-timestamp']).toBe(String(Math.floor(now / 1000)));
    expect(h['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(officialVerify(NEW, h)).toBe(true);
    expect(officialVerify(OLD, h)).toBe(false);
  });

  it('a secret that is not whsec_ is verified by the official library in its mapped form', () => {
    const h = signatureHeaders({ mode: 'standard', current: 'an-old-hex-or-any-secret', previous: null, previousUntil: null }, msg, Date.now());
    expect(officialVerify(toStandardSecret('an-old-hex-or-any-secret'), h)).toBe(true);
    expect(h['x-svc-signature']).toBe(hex(body, 'an-old-hex-or-any-secret'));
  });

  it('during a grace period signs with both keys: X-SVC-Signature by the old, -Next by the new, two v1 values', () => {
    const now = Date.now();
    const keys: SigningKeys = { mode: 'standard', current: NEW, previous: OLD, previousUntil: now + 1 };
    const h = signatureHeaders(keys, msg, now);
    expect(h['x-svc-signature']).toBe(hex(body, OLD));
    expect(h['x-svc-signature-next']).toBe(hex(body, NEW));
    expect(h['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(officialVerify(NEW, h)).toBe(true);
    expect(officialVerify(OLD, h)).toBe(true);
    expect(officialVerify(generateSecret(), h)).toBe(false);
  });

  it('once the grace period ends (the clock passed in reaches it) signs with the new key only', () => {
    const until = NOW + 60_000;
    const keys: SigningKeys = { mode: 'standard', current: NEW, previous: OLD, previousUntil: until };
    const before = signatureHeaders(keys, msg, until - 1);
    expect(before['x-svc-signature']).toBe(hex(body, OLD));
    for (const at of [until, until + 86_400_000]) {
      const after = signatureHeaders(keys, msg, at);
      expect(after['x-svc-signature']).toBe(hex(body, NEW));
      expect(after['x-svc-signature-next']).toBeUndefined();
      expect(after['webhook-signature']!.split(' ')).toHaveLength(1);
      expect(verifyStandardSignature({ body, id: after['webhook-id'], timestamp: after['webhook-timestamp'], signature: after['webhook-signature'], secret: NEW, now: at }).valid).toBe(true);
      expect(verifyStandardSignature({ body, id: after['webhook-id'], timestamp: after['webhook-timestamp'], signature: after['webhook-signature'], secret: OLD, now: at })).toEqual({
        valid: false,
        reason: 'no_matching_signature',
      });
    }
  });

  it('svc mode during a grace period: no Standard Webhooks headers, both svc signatures', () => {
    const h = signatureHeaders({ mode: 'svc', current: 'new-secret', previous: 'old-secret', previousUntil: NOW + 1 }, msg, NOW);
    expect(Object.keys(h)).toEqual(['x-svc-signature', 'x-svc-signature-next', 'x-svc-event', 'x-svc-delivery']);
    expect(h['x-svc-signature']).toBe(hex(body, 'old-secret'));
    expect(h['x-svc-signature-next']).toBe(hex(body, 'new-secret'));
  });
});

describe('verifyStandardSignature', () => {
  const wh = new Webhook(NEW);
  const ts = Math.floor(NOW / 1000);
  const sig = wh.sign('msg_2', new Date(ts * 1000), body);
  const check = (over: Partial<Parameters<typeof verifyStandardSignature>[0]>) =>
    verifyStandardSignature({ body, id: 'msg_2', timestamp: String(ts), signature: sig, secret: NEW, now: NOW, ...over });

  it('accepts what the official library signs, as a string or the raw bytes', () => {
    expect(check({})).toEqual({ valid: true });
    expect(check({ body: Buffer.from(body, 'utf8') })).toEqual({ valid: true });
    expect(check({ timestamp: ts })).toEqual({ valid: true });
  });

  it('takes any matching v1 value of a space-separated list and ignores other versions', () => {
    expect(check({ signature: `v1a,AAAA v1,${Buffer.alloc(32).toString('base64')} ${sig}` })).toEqual({ valid: true });
    expect(check({ signature: sig.replace('v1,', 'v2,') })).toEqual({ valid: false, reason: 'no_matching_signature' });
  });

  it('refuses a timestamp more than 5 minutes away either way, and accepts one at the edge', () => {
    expect(check({ now: NOW + 300_000 })).toEqual({ valid: true });
    expect(check({ now: NOW - 300_000 })).toEqual({ valid: true });
    expect(check({ now: NOW + 301_000 })).toEqual({ valid: false, reason: 'timestamp_out_of_tolerance' });
    expect(check({ now: NOW - 301_000 })).toEqual({ valid: false, reason: 'timestamp_out_of_tolerance' });
    expect(check({ now: NOW + 3_600_000, toleranceSeconds: 3600 })).toEqual({ valid: true });
  });

  it('refuses a changed body, id, timestamp or secret', () => {
    expect(check({ body: `${body} ` }).valid).toBe(false);
    expect(check({ id: 'msg_3' }).valid).toBe(false);
    expect(check({ timestamp: String(ts + 1) }).valid).toBe(false);
    expect(check({ secret: OLD }).valid).toBe(false);
  });

  it('answers malformed, never throws, for missing or ill-formed input', () => {
    expect(check({ id: undefined })).toEqual({ valid: false, reason: 'malformed' });
    expect(check({ timestamp: 'yesterday' })).toEqual({ valid: false, reason: 'malformed' });
    expect(check({ signature: null })).toEqual({ valid: false, reason: 'malformed' });
    expect(check({ secret: '' })).toEqual({ valid: false, reason: 'malformed' });
    expect(check({ body: 42 as never })).toEqual({ valid: false, reason: 'malformed' });
    expect(check({ signature: 'v1,***' })).toEqual({ valid: false, reason: 'no_matching_signature' });
  });
});

describe('verifyWebhook (both schemes, exported)', () => {
  it('is part of the public surface with its helpers', () => {
    expect(lib.verifyWebhook).toBe(verifyWebhook);
    expect(lib.verifyStandardSignature).toBe(verifyStandardSignature);
    expect(lib.toStandardSecret).toBe(toStandardSecret);
  });

  it('checks the Standard Webhooks headers when present, from a plain object or Fetch Headers', () => {
    const h = signatureHeaders({ mode: 'standard', current: NEW, previous: OLD, previousUntil: NOW + 1 }, msg, NOW);
    expect(verifyWebhook({ body, headers: h, secret: NEW, now: NOW })).toEqual({ valid: true, scheme: 'standard' });
    expect(verifyWebhook({ body, headers: new Headers(h), secret: OLD, now: NOW })).toEqual({ valid: true, scheme: 'standard' });
    expect(verifyWebhook({ body, headers: h, secret: NEW, now: NOW + 600_000 })).toEqual({ valid: false, scheme: 'standard', reason: 'timestamp_out_of_tolerance' });
    // The same delivery checked under svc: X-SVC-Signature (old) or -Next (new) matches.
    expect(verifyWebhook({ body, headers: h, secret: NEW, scheme: 'svc' })).toEqual({ valid: true, scheme: 'svc' });
    const { 'webhook-id': _id, ...noId } = h;
    expect(verifyWebhook({ body, headers: noId, secret: NEW, now: NOW })).toEqual({ valid: false, scheme: 'standard', reason: 'missing_headers' });
  });

  it('checks X-SVC-Signature and X-SVC-Signature-Next otherwise, whatever the header case', () => {
    const h = signatureHeaders({ mode: 'svc', current: 'new-secret', previous: 'old-secret', previousUntil: NOW + 1 }, msg, NOW);
    const upper = Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toUpperCase(), v]));
    expect(verifyWebhook({ body, headers: upper, secret: 'old-secret' })).toEqual({ valid: true, scheme: 'svc' });
    expect(verifyWebhook({ body, headers: h, secret: 'new-secret' })).toEqual({ valid: true, scheme: 'svc' });
    expect(verifyWebhook({ body, headers: h, secret: 'other-secret' })).toEqual({ valid: false, scheme: 'svc', reason: 'no_matching_signature' });
    expect(verifyWebhook({ body: `${body}x`, headers: h, secret: 'new-secret' }).valid).toBe(false);
    expect(verifyWebhook({ body, headers: {}, secret: 'new-secret' })).toEqual({ valid: false, scheme: 'svc', reason: 'missing_headers' });
    expect(verifyWebhook({ body, headers: {}, secret: 'new-secret', scheme: 'standard' })).toEqual({ valid: false, scheme: 'standard', reason: 'missing_headers' });
  });
});

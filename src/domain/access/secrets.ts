import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

/** A new credential: `prefix` + 32 base64url characters (192 random bits). */
export function newCredential(prefix: string): string {
  return prefix + randomBytes(24).toString('base64url');
}

/**
 * The stored form of a credential: SHA-256 hex. The plaintext is never stored.
 * One-shot crypto.hash (no Hash object): every profile API request hashes the key it presents.
 */
export function credentialHash(plaintext: string): string {
  return hash('sha256', plaintext, 'hex');
}

/** Constant-time comparison of two hex hashes of equal length. */
export function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
}

/** What may be shown of a credential later: its prefix and first 4 random characters. */
export function credentialHint(plaintext: string, prefix: string): string {
  return `${plaintext.slice(0, prefix.length + 4)}…`;
}

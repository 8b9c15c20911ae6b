import { createHash } from 'node:crypto';

/** Canonical email form used for identity and hashed look-ups: trimmed and lower-cased. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/**
 * Canonical phone form: E.164 digits without the `+` (what hashed look-ups hash).
 * Keeps digits only and drops a leading international `00` prefix.
 */
export function normalizePhoneDigits(phone: string): string {
  let digits = phone.replace(/\D+/g, '');
  if (phone.trim().startsWith('00')) digits = digits.replace(/^00/, '');
  return digits;
}

export function sha256Hex(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

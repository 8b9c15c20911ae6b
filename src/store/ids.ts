import { randomBytes } from 'node:crypto';

/**
 * A time-ordered, unguessable id: `<prefix>_` + 9 base36 chars of milliseconds
 * + 16 hex chars (64 random bits). Sorting ids sorts by creation time.
 */
export function newId(prefix: string): string {
  return `${prefix}_${Date.now().toString(36).padStart(9, '0')}${randomBytes(8).toString('hex')}`;
}

/** A public identifier with 96 random bits and no time component. */
export function newPublicId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString('base64url')}`;
}

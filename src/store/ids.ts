import { randomBytes } from 'node:crypto';

/**
 * A time-ordered, unguessable id: `<prefix>_` + 9 base36 chars of milliseconds
 * + 16 hex chars (64 random bits). Sorting ids sorts by creation time.
 */
export function newId(prefix: string): string {
  return `${prefix}_${Date.now().toString(36).padStart(9, '0')}${randomBytes(8).toString('hex')}`;
}

/**
 * `n` ids of {@link newId}'s form, ascending: a batch inserted in this order
 * lies in the table (rowid order) in the order of its ids. Rows read and
 * updated in id order (a webhook lane drains deliveries by due time, then id)
 * then walk the table's pages in turn instead of touching one page per row.
 */
export function newIds(prefix: string, n: number): string[] {
  const time = `${prefix}_${Date.now().toString(36).padStart(9, '0')}`;
  const random = randomBytes(8 * n).toString('hex');
  const ids = new Array<string>(n);
  for (let i = 0; i < n; i++) ids[i] = time + random.slice(16 * i, 16 * i + 16);
  return ids.sort();
}

/** A public identifier with 96 random bits and no time component. */
export function newPublicId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString('base64url')}`;
}

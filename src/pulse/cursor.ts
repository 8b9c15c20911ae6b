import { AppError } from '../errors/app-error.js';

/**
 * Opaque keyset cursors: base64url of a small JSON object. They carry the last
 * id returned (and, for queries, the evaluation time and a fingerprint of the
 * request, so a cursor cannot be replayed against another query).
 */
export function encodeCursor(c: Record<string, string | number>): string {
  return Buffer.from(JSON.stringify(c), 'utf8').toString('base64url');
}

export function decodeCursor(raw: string | undefined): Record<string, unknown> | null {
  if (raw === undefined) return null;
  try {
    const v = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as unknown;
    if (v && typeof v === 'object' && !Array.isArray(v) && typeof (v as { after?: unknown }).after === 'string') {
      return v as Record<string, unknown>;
    }
  } catch {
    // fall through
  }
  throw new AppError('bad_request', 'cursor is not a cursor this API returned', { field: 'cursor' });
}

import type { z } from 'zod';
import { AppError } from './app-error.js';

/** Formats a zod issue path as a JSON path (`$.line_items[3].qty`). */
export function jsonPath(path: readonly PropertyKey[]): string {
  let out = '$';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else if (typeof seg === 'string' && /^[A-Za-z_][A-Za-z0-9_]*$/.test(seg)) out += `.${seg}`;
    else out += `[${JSON.stringify(String(seg))}]`;
  }
  return out;
}

/** A validation failure as an AppError naming the offending field(s). */
export function validationError(error: z.ZodError): AppError {
  const issues = error.issues.slice(0, 20).map((i) => ({
    path: jsonPath(i.path),
    code: i.code,
    message: i.message,
  }));
  const first = issues[0];
  const field = first ? first.path.replace(/^\$\.?/, '') || '(body)' : '(body)';
  return new AppError(
    'validation_failed',
    first ? `${field}: ${first.message}` : 'invalid request',
    { field, issues },
  );
}

/** What ingestion's JSON guard says of the same character (json-guard.ts). */
const NUL_MESSAGE = 'strings must not contain U+0000';

/**
 * The path of the first string or object key in `value` holding U+0000, or
 * null. PostgreSQL text cannot hold that character (the statement fails), and
 * no identifier, URL or name of ours needs it, so every surface refuses it
 * before anything is read or stored, on both stores alike.
 */
export function nulPath(value: unknown, path: PropertyKey[] = []): PropertyKey[] | null {
  if (typeof value === 'string') return value.includes('\u0000') ? path : null;
  if (value === null || typeof value !== 'object') return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const p = nulPath(value[i], [...path, i]);
      if (p) return p;
    }
    return null;
  }
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (k.includes('\u0000')) return [...path, k];
    const p = nulPath(v, [...path, k]);
    if (p) return p;
  }
  return null;
}

/** `code` naming the first field of `value` that holds U+0000 (see nulPath), or null when none does. */
export function nulError(value: unknown, code: 'validation_failed' | 'bad_request' = 'validation_failed'): AppError | null {
  const p = nulPath(value);
  if (p === null) return null;
  const path = jsonPath(p);
  const field = path.replace(/^\$\.?/, '') || '(body)';
  return new AppError(code, `${field}: ${NUL_MESSAGE}`, { field, issues: [{ path, code: 'invalid_string', message: NUL_MESSAGE }] });
}

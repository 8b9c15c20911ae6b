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

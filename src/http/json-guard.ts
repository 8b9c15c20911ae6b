import { jsonPath } from '../errors/validation.js';
import { AppError } from '../errors/app-error.js';

/** How deep an ingestion body may nest objects and arrays (the body object itself is level 1). */
export const MAX_JSON_DEPTH = 64;

export interface JsonProblem {
  /** The offending field as a JSON path (`$.props.list[2]`). */
  path: string;
  code: 'too_deep' | 'duplicate_key' | 'forbidden_key' | 'invalid_string' | 'unrepresentable_number';
  message: string;
}

interface Frame {
  array: boolean;
  index: number;
  key: string | undefined;
  /** The object's keys so far: a list while short (a scan is cheaper than hashing), a set past SMALL_OBJECT. */
  keys: string[] | Set<string> | undefined;
  expectKey: boolean;
}

/** Keys an object's duplicate check keeps in a list before it switches to a set. */
const SMALL_OBJECT = 16;

const HEX = /^[0-9a-fA-F]{4}$/;
/** A JSON number token: sign, integer part, fraction, exponent. */
const NUMBER = /-?(\d+)(\.\d+)?([eE][+-]?\d+)?/y;
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * Checks the text of a body that JSON.parse already accepted for what the
 * store could not keep faithfully or what parsers disagree on: nesting deeper
 * than `maxDepth`, duplicate keys (JSON.parse silently keeps the last one),
 * `__proto__` keys (dropped by object schemas), and strings holding U+0000
 * (PostgreSQL text refuses it) or an unpaired surrogate, and numbers a
 * consumer cannot get back as written (I-JSON, RFC 7493): one that overflows
 * to ±Infinity, a nonzero one that underflows to 0, an integer beyond
 * ±(2^53−1). One pass over the text; returns the first problem with its
 * path, or null.
 */
export function checkJsonText(text: string, maxDepth = MAX_JSON_DEPTH): JsonProblem | null {
  const stack: Frame[] = [];
  const path = () => {
    const segs: (string | number)[] = [];
    for (const f of stack) {
      if (f.array) segs.push(f.index);
      else if (f.key !== undefined) segs.push(f.key);
    }
    return jsonPath(segs);
  };
  let i = 0;
  const n = text.length;
  // Where the next backslash is (-1: none left). Outside strings there is none (the text parsed), so a
  // string that closes before it has no escape to check and is skipped in one indexOf.
  let nextEscape = text.indexOf('\\');
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (stack.length >= maxDepth) {
        return { path: path(), code: 'too_deep', message: `nested deeper than ${maxDepth} levels` };
      }
      const array = c === 0x5b;
      stack.push({ array, index: 0, key: undefined, keys: array ? undefined : [], expectKey: !array });
      i++;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      stack.pop();
      i++;
    } else if (c === 0x2c /* , */) {
      const top = stack[stack.length - 1];
      if (top) {
        if (top.array) top.index++;
        else top.expectKey = true;
      }
      i++;
    } else if (c === 0x22 /* " */) {
      const start = i;
      let escaped = false;
      i++;
      if (nextEscape !== -1 && nextEscape < i) nextEscape = text.indexOf('\\', i);
      const close = text.indexOf('"', i);
      if (close !== -1 && (nextEscape === -1 || nextEscape > close)) i = close;
      while (i < n) {
        const d = text.charCodeAt(i);
        if (d === 0x22) break;
        if (d === 0x5c /* \ */) {
          escaped = true;
          if (text.charCodeAt(i + 1) === 0x75 /* u */) {
            const hex = text.slice(i + 2, i + 6);
            const code = HEX.test(hex) ? parseInt(hex, 16) : -1;
            const bad = badCodeUnit(code, text, i + 6);
            if (bad) {
              const top = stack[stack.length - 1];
              if (top && !top.array && top.expectKey) top.key = safeKey(text.slice(start, i));
              return { path: path(), code: 'invalid_string', message: bad };
            }
            i += code >= 0xd800 && code <= 0xdbff ? 12 : 6;
          } else {
            i += 2;
          }
          continue;
        }
        i++;
      }
      const top = stack[stack.length - 1];
      if (top && !top.array && top.expectKey) {
        const key = escaped ? (JSON.parse(text.slice(start, i + 1)) as string) : text.slice(start + 1, i);
        top.expectKey = false;
        top.key = key;
        if (key === '__proto__') {
          return { path: path(), code: 'forbidden_key', message: '"__proto__" is not accepted as a key' };
        }
        const keys = top.keys!;
        if (Array.isArray(keys) ? keys.includes(key) : keys.has(key)) {
          return { path: path(), code: 'duplicate_key', message: `key ${JSON.stringify(key)} appears more than once` };
        }
        if (!Array.isArray(keys)) keys.add(key);
        else if (keys.length < SMALL_OBJECT) keys.push(key);
        else top.keys = new Set(keys).add(key);
      }
      i++;
    } else if (c === 0x2d /* - */ || (c >= 0x30 && c <= 0x39)) {
      // The common number: an integer of at most 15 digits (below 2^53, finite, 0 only when written as 0) is
      // kept exactly as written; it is stepped over without the expression, its match array or its token.
      let j = c === 0x2d ? i + 1 : i;
      const digits = j;
      for (let d = text.charCodeAt(j); d >= 0x30 && d <= 0x39; d = text.charCodeAt(++j));
      const after = text.charCodeAt(j);
      if (j > digits && j - digits <= 15 && after !== 0x2e /* . */ && after !== 0x65 /* e */ && after !== 0x45 /* E */) {
        i = j;
        continue;
      }
      NUMBER.lastIndex = i;
      const m = NUMBER.exec(text);
      if (!m) {
        i++;
        continue;
      }
      const bad = badNumber(m[0], m[2] === undefined && m[3] === undefined);
      if (bad) return { path: path(), code: 'unrepresentable_number', message: bad };
      i += m[0].length;
    } else {
      i++;
    }
  }
  return null;
}

/** Why the number `token` (an integer when `integer`) would not reach every consumer as written, or null. */
function badNumber(token: string, integer: boolean): string | null {
  const value = Number(token);
  if (!Number.isFinite(value)) return `${token.slice(0, 40)} is beyond the range of a double-precision number`;
  if (value === 0 && /[1-9]/.test(token.replace(/[eE].*$/, ''))) {
    return `${token.slice(0, 40)} is too small to be told apart from 0 by a double-precision number`;
  }
  if (integer && !Number.isSafeInteger(value)) {
    const big = BigInt(token);
    if (big > MAX_SAFE || big < -MAX_SAFE) {
      return `${token.slice(0, 40)} is an integer beyond ±(2^53−1), which JSON consumers cannot keep exactly; send it as a string`;
    }
  }
  return null;
}

/** Why the `\uXXXX` escape of code unit `code` cannot be stored (a high surrogate needs a low one escaped at `at`), or null. */
function badCodeUnit(code: number, text: string, at: number): string | null {
  if (code === 0) return 'strings must not contain U+0000';
  if (code >= 0xdc00 && code <= 0xdfff) return 'strings must not contain an unpaired surrogate';
  if (code >= 0xd800 && code <= 0xdbff) {
    const next = text.charCodeAt(at) === 0x5c && text.charCodeAt(at + 1) === 0x75 ? text.slice(at + 2, at + 6) : '';
    const low = HEX.test(next) ? parseInt(next, 16) : -1;
    if (low < 0xdc00 || low > 0xdfff) return 'strings must not contain an unpaired surrogate';
  }
  return null;
}

/** The partial key text read so far, for naming a key whose own text is the problem. */
function safeKey(partial: string): string {
  return partial.slice(1).replace(/\\/g, '');
}

/** The 400 validation_failed for a problem checkJsonText found, naming the field. */
export function jsonProblemError(problem: JsonProblem): AppError {
  const field = problem.path.replace(/^\$\.?/, '') || '(body)';
  return new AppError('validation_failed', `${field}: ${problem.message}`, { field, issues: [problem] });
}

/**
 * express.json's `verify` hook: applies checkJsonText to a body that parses
 * (one that does not is left to the parser's own error).
 */
export function verifyJsonBody(_req: unknown, _res: unknown, buf: Buffer): void {
  const text = buf.toString('utf8');
  try {
    JSON.parse(text);
  } catch {
    return;
  }
  const problem = checkJsonText(text);
  if (problem) throw jsonProblemError(problem);
}

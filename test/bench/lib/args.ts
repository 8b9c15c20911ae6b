/** A bad command-line option of a benchmark: printed with the usage text, exit 2. */
export class UsageError extends Error {}

/** An integer option: `def` when absent, else a whole number from `min` to `max`. */
export function intFlag(name: string, raw: string | undefined, def: number, min: number, max: number): number {
  if (raw === undefined) return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new UsageError(`--${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  return n;
}

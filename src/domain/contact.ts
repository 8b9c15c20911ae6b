/**
 * Characters a contact value (email, name, phone) may not hold: control
 * characters (C0, DEL, C1), bidirectional embeddings, overrides and isolates
 * (U+202A–202E, U+2066–2069: they make a value display as something else),
 * and Unicode noncharacters. Nothing else about contact values is enforced:
 * a malformed email is stored and flagged, never refused.
 */
function forbidden(cp: number): boolean {
  return (
    cp <= 0x1f ||
    (cp >= 0x7f && cp <= 0x9f) ||
    (cp >= 0x202a && cp <= 0x202e) ||
    (cp >= 0x2066 && cp <= 0x2069) ||
    (cp >= 0xfdd0 && cp <= 0xfdef) ||
    (cp & 0xfffe) === 0xfffe
  );
}

/** Why `value` cannot be a contact value, naming the first offending character, or null. */
export function contactProblem(value: string): string | null {
  let i = 0;
  for (const ch of value) {
    const cp = ch.codePointAt(0)!;
    if (forbidden(cp)) {
      const code = `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
      return `must not contain control characters, bidirectional overrides or noncharacters (${code} at character ${i + 1})`;
    }
    i++;
  }
  return null;
}

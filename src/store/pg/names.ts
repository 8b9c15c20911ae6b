/**
 * Names of server-side prepared statements: a connection parses and plans a named text once instead of
 * on every call. The repositories' texts, and the set-based forms pg/batch.ts builds from them (whose
 * text does not depend on how many rows they carry), are a fixed set; texts built at run time (compiled
 * segment rules, seed chunks) beyond the first MAX_NAMED stay unnamed so a connection's statement cache
 * stays bounded.
 */
const MAX_NAMED = 500;
const names = new Map<string, string>();

/** The prepared statement name of a text, or undefined once MAX_NAMED texts are named. */
export function statementName(text: string): string | undefined {
  let name = names.get(text);
  if (name === undefined && names.size < MAX_NAMED) {
    name = `svc_${names.size + 1}`;
    names.set(text, name);
  }
  return name;
}

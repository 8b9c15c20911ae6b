/**
 * Names of server-side prepared statements: a connection parses and plans a named text once instead of
 * on every call. The repositories' texts, and the set-based forms pg/batch.ts builds from them (whose
 * text does not depend on how many rows they carry), are a set bounded by the code: every one is named
 * (MAX_FIXED is only a safety net). Texts built at run time from data (compiled segment rules and profile
 * queries: builtAtRunTime) have a budget of their own, the first MAX_RUN_TIME of them, so a connection's
 * statement cache stays bounded and a server that compiles many rules early cannot leave its own fixed
 * texts unnamed (planned on every call).
 */
const MAX_FIXED = 1_000;
const MAX_RUN_TIME = 250;
/** At most this many run-time texts are remembered as such (then the set starts again). */
const MAX_REMEMBERED = 20_000;

const names = new Map<string, string>();
const runTime = new Set<string>();
let fixedNamed = 0;
let runTimeNamed = 0;

/** Marks `text` as built at run time from data (a compiled rule): it is named within the run-time budget. */
export function builtAtRunTime(text: string): void {
  if (names.has(text) || runTime.has(text)) return;
  if (runTime.size >= MAX_REMEMBERED) runTime.clear();
  runTime.add(text);
}

/** The prepared statement name of a text, or undefined once its budget (fixed or run-time) is spent. */
export function statementName(text: string): string | undefined {
  const name = names.get(text);
  if (name !== undefined) return name;
  if (runTime.has(text)) {
    if (runTimeNamed >= MAX_RUN_TIME) return undefined;
    runTimeNamed++;
    runTime.delete(text);
  } else {
    if (fixedNamed >= MAX_FIXED) return undefined;
    fixedNamed++;
  }
  const fresh = `svc_${names.size + 1}`;
  names.set(text, fresh);
  return fresh;
}

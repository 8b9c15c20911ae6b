/** One line of a line diff: kept, added (only in the newer text) or removed (only in the older). */
export interface DiffLine {
  op: 'keep' | 'add' | 'remove';
  text: string;
}

/** Most lines a line diff compares exactly; longer texts are diffed as one changed block. */
export const MAX_DIFF_LINES = 2000;

/**
 * Line diff of two texts by longest common subsequence (lines split on \n).
 * Removals come before additions within a changed run. Texts over
 * MAX_DIFF_LINES lines are reported as all removed then all added.
 */
export function lineDiff(a: string, b: string): DiffLine[] {
  const x = a === '' ? [] : a.split('\n');
  const y = b === '' ? [] : b.split('\n');
  if (x.length > MAX_DIFF_LINES || y.length > MAX_DIFF_LINES) {
    return [...x.map((text) => ({ op: 'remove' as const, text })), ...y.map((text) => ({ op: 'add' as const, text }))];
  }
  const n = x.length;
  const m = y.length;
  // lcs[i][j] = LCS length of x[i..] and y[j..], in one flat array.
  const lcs = new Uint32Array((n + 1) * (m + 1));
  const at = (i: number, j: number) => i * (m + 1) + j;
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[at(i, j)] = x[i] === y[j] ? lcs[at(i + 1, j + 1)]! + 1 : Math.max(lcs[at(i + 1, j)]!, lcs[at(i, j + 1)]!);
    }
  }
  const out: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && x[i] === y[j]) {
      out.push({ op: 'keep', text: x[i]! });
      i++;
      j++;
    } else if (i < n && (j >= m || lcs[at(i + 1, j)]! >= lcs[at(i, j + 1)]!)) {
      out.push({ op: 'remove', text: x[i]! });
      i++;
    } else {
      out.push({ op: 'add', text: y[j]! });
      j++;
    }
  }
  return out;
}

/** A section as the diff sees it. */
export interface DiffSection {
  zone_id: string;
  zone_name: string;
  body: string;
}

export interface SectionDiff {
  zone_id: string;
  zone_name: string;
  change: 'added' | 'removed' | 'changed' | 'unchanged';
  lines: DiffLine[];
}

/**
 * Per-zone comparison of two revisions (`from` older, `to` newer): a zone only
 * in `to` is added, only in `from` removed, in both with a different body
 * changed (with its line diff), else unchanged (no lines). Ordered by zone name.
 */
export function diffSections(from: readonly DiffSection[], to: readonly DiffSection[]): SectionDiff[] {
  const a = new Map(from.map((s) => [s.zone_id, s]));
  const b = new Map(to.map((s) => [s.zone_id, s]));
  const out: SectionDiff[] = [];
  for (const id of new Set([...a.keys(), ...b.keys()])) {
    const old = a.get(id);
    const cur = b.get(id);
    if (old && cur) {
      const same = old.body === cur.body;
      out.push({ zone_id: id, zone_name: cur.zone_name, change: same ? 'unchanged' : 'changed', lines: same ? [] : lineDiff(old.body, cur.body) });
    } else if (cur) {
      out.push({ zone_id: id, zone_name: cur.zone_name, change: 'added', lines: lineDiff('', cur.body) });
    } else if (old) {
      out.push({ zone_id: id, zone_name: old.zone_name, change: 'removed', lines: lineDiff(old.body, '') });
    }
  }
  return out.sort((p, q) => (p.zone_name < q.zone_name ? -1 : p.zone_name > q.zone_name ? 1 : p.zone_id < q.zone_id ? -1 : 1));
}

import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { AREAS } from '../../src/mcp/tools/index.js';

// The `--areas` row of the README's token-restriction table, generated from the tool registry:
//   npm run readme:areas        rewrites the row in README.md
// test/unit/readme.test.ts fails while the README names other areas than the registry knows.

const README = fileURLToPath(new URL('../../README.md', import.meta.url));
const ROW = /^\| `--areas a,b` \| .*\|$/m;

/** The README row that lists the product areas a token can be limited to. */
export function areasRow(areas: readonly string[] = AREAS): string {
  return `| \`--areas a,b\` | only tools of these product areas (${areas.length}: ${areas.map((a) => `\`${a}\``).join(', ')}) |`;
}

/** The row as the README has it now, or null. */
export function readmeAreasRow(text: string = readFileSync(README, 'utf8')): string | null {
  return ROW.exec(text)?.[0] ?? null;
}

/** Rewrites the row from the registry; returns whether README.md changed. */
export function writeReadmeAreas(): boolean {
  const text = readFileSync(README, 'utf8');
  if (!ROW.test(text)) throw new Error('README.md has no `--areas a,b` row to rewrite');
  const next = text.replace(ROW, areasRow());
  if (next === text) return false;
  writeFileSync(README, next);
  return true;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  process.stdout.write(writeReadmeAreas() ? `README.md: --areas row rewritten (${AREAS.length} areas)\n` : 'README.md: --areas row is current\n');
}

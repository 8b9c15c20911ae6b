import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BLOCKS, committedBlock } from '../helpers/docs-gen.js';

const ROOT = new URL('../../', import.meta.url);
const read = (file: string) => readFileSync(new URL(file, ROOT), 'utf8');
const PAGES = ['README.md', ...readdirSync(new URL('docs/', ROOT)).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
function anchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_\- ]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a page's headings (code blocks skipped). */
function anchors(text: string): Set<string> {
  const out = new Set<string>();
  let fence = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) fence = !fence;
    const m = !fence && /^#{1,6} (.*)$/.exec(line);
    if (m) out.add(anchor(m[1]!));
  }
  return out;
}

describe('docs/', () => {
  it.each(BLOCKS.map((b) => [`${b.file} ${b.name}`, b] as const))('%s is what `npm run docs:gen` prints from the code', (_, b) => {
    expect(committedBlock(b), `${b.file}: run \`npm run docs:gen\``).toBe(b.render());
  });

  it('notices a generated block that differs from the code', () => {
    const settings = BLOCKS.find((b) => b.name === 'settings')!;
    const edited = read(settings.file).replace('| `SVC_PORT` | `8787` |', '| `SVC_PORT` | `8080` |');
    expect(committedBlock(settings, edited)).not.toBe(settings.render());
  });

  it('has every relative link pointing at a page and a heading that exist', () => {
    const broken: string[] = [];
    for (const page of PAGES) {
      const text = read(page);
      const dir = page.includes('/') ? page.slice(0, page.lastIndexOf('/') + 1) : '';
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1]!;
        if (/^[a-z]+:/.test(target)) continue;
        const [file, hash] = target.split('#') as [string, string | undefined];
        const resolved = file === '' ? page : new URL(file, new URL(dir, ROOT)).pathname.slice(new URL(ROOT).pathname.length);
        let body: string;
        try {
          body = read(resolved);
        } catch {
          broken.push(`${page}: ${target} (no file ${resolved})`);
          continue;
        }
        if (hash !== undefined && resolved.endsWith('.md') && !anchors(body).has(hash)) broken.push(`${page}: ${target} (no heading #${hash})`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('names only the published package where a user installs or runs it', () => {
    for (const page of PAGES) expect(read(page), page).not.toMatch(/npx -y svc@|"svc@\d|from 'svc'/);
  });
});

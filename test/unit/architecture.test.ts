import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';
// @ts-expect-error eslint.config.js is plain JavaScript without declarations
import { MAY_IMPORT, PARTS } from '../../eslint.config.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const RULE = 'import-x/no-restricted-paths';

/**
 * The architecture findings of linting `text` as if it were the file at `file`
 * (repository-relative; need not exist) with the repository's own config. Only
 * the map's rule runs, so the virtual file needs no TypeScript program.
 */
async function findings(file: string, text: string): Promise<string[]> {
  const eslint = new ESLint({
    cwd: ROOT,
    ruleFilter: ({ ruleId }) => ruleId === RULE,
    overrideConfig: { languageOptions: { parserOptions: { projectService: false } } },
  });
  const [result] = await eslint.lintText(text, { filePath: path.join(ROOT, file) });
  const fatal = result!.messages.filter((m) => m.fatal);
  expect(fatal, 'the file must parse').toEqual([]);
  return result!.messages.filter((m) => m.ruleId === RULE).map((m) => m.message);
}

describe('the map of src/ is enforced by lint (docs/architecture.md)', () => {
  it('reports a store module importing a surface, and a surface importing another surface', { timeout: 120_000 }, async () => {
    const upward = await findings('src/store/wrong-way.ts', "import { TOOLS } from '../mcp/tools/index.js';\n\nexport const n = TOOLS.length;\n");
    expect(upward).toHaveLength(1);
    expect(upward[0]).toMatch(/src\/store may not import src\/mcp/);

    const sideways = await findings('src/ingest/wrong-way.ts', "import { ROUTES } from '../pulse/routes.js';\n\nexport const n = ROUTES.length;\n");
    expect(sideways).toHaveLength(1);
    expect(sideways[0]).toMatch(/src\/ingest may not import src\/pulse/);
  });

  it('reports an adapter importing a repository, and lets it import the store handle and the domain', { timeout: 120_000 }, async () => {
    const repo = await findings(
      'src/mcp/tools/wrong-way.ts',
      "import type { DestinationRow } from '../../store/webhooks.js';\nimport type { Store } from '../../store/store.js';\nimport { parseEventList } from '../../webhooks/destinations.js';\n\nexport type Pair = [DestinationRow, Store, typeof parseEventList];\n",
    );
    expect(repo).toHaveLength(1);
    expect(repo[0]).toMatch(/an adapter \(src\/mcp\/tools\) calls the domain, never a repository/);
  });

  it('reports an adapter that calls a repository or opens a transaction through the store handle, whatever the variable is called', { timeout: 300_000 }, async () => {
    // The rule reads types, so the probe must be a real file of the TypeScript project while it is linted.
    const file = path.join(ROOT, 'src/cli', `architecture-probe-${process.pid}.ts`);
    writeFileSync(
      file,
      [
        "import type { Store } from '../store/store.js';",
        '',
        'export async function probe(s: Store, ctx: { store: Store }): Promise<unknown> {',
        '  const sites = await s.sites.list();',
        "  await ctx.store.write((tx) => tx.sites.get('site_1'));",
        '  await s.close();',
        '  return sites;',
        '}',
        '',
      ].join('\n'),
    );
    try {
      const eslint = new ESLint({ cwd: ROOT, ruleFilter: ({ ruleId }) => ruleId === 'adapters/no-store-calls' });
      const [result] = await eslint.lintFiles([file]);
      const found = result!.messages.map((m) => `${m.line}:${m.message}`);
      expect(found).toHaveLength(3);
      expect(found[0]).toMatch(/^4:an adapter calls the domain, never the store: `\.sites` of a Store/);
      expect(found[1]).toMatch(/^5:.*`\.write` of a Store/);
      expect(found[2]).toMatch(/^5:.*`\.sites` of a Repos/);
    } finally {
      rmSync(file, { force: true });
    }
  });

  it('lets a part import what lies below it', { timeout: 120_000 }, async () => {
    expect(await findings('src/domain/right-way.ts', "import { AppError } from '../errors/app-error.js';\nimport type { Store } from '../store/store.js';\n\nexport type Pair = [AppError, Store];\n")).toEqual([]);
  });

  it('names every folder of src/ as a part or as wiring', () => {
    const parts = new Set(Object.values(PARTS as Record<string, string[]>).flat());
    const wiring = new Set(['src/server', 'src/cli', 'src/index.ts']);
    const dirs = ['adplatforms', 'cli', 'demo', 'domain', 'errors', 'http', 'ingest', 'mcp', 'metrics', 'outbound', 'plugin', 'pulse', 'server', 'store', 'tag', 'webhooks', 'workers'];
    for (const d of dirs) expect(parts.has(`src/${d}`) || wiring.has(`src/${d}`), d).toBe(true);
    for (const part of Object.keys(MAY_IMPORT as Record<string, string[]>)) expect(Object.keys(PARTS as object)).toContain(part);
  });
});

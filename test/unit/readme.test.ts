import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CATALOGUE, EVENT_TYPES } from '../../src/webhooks/catalogue.js';
import { mcpConfigEntry } from '../../src/plugin/mcp-config.js';
import { loadSkills, PLUGIN_NAME } from '../../src/plugin/skills.js';
import { packageSpec } from '../../src/plugin/validate.js';
import { AREAS } from '../../src/mcp/tools/index.js';
import { areasRow, committedAreasRow } from '../helpers/docs-gen.js';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const doc = (name: string) => readFileSync(new URL(`../../docs/${name}`, import.meta.url), 'utf8');
const webhooksDoc = doc('webhooks.md');
const pluginDoc = doc('plugin.md');
const mcpDoc = doc('mcp.md');

describe('README and docs/ stay true', () => {
  it('starts with the install-and-serve command and the test command that .ci/run runs', () => {
    const lines = readme.split('\n');
    expect(lines[1]).toMatch(/^npm install && npx svc serve\b/);
    const test = /^(SVC_TEST_DATABASE_URL=\S+ npm test)\b/.exec(lines[2]!)?.[1];
    expect(test).toBeDefined();
    // .ci/run ends with exactly that command (the PostgreSQL run is part of it, not optional).
    const ci = readFileSync(new URL('../../.ci/run', import.meta.url), 'utf8');
    expect(ci.trimEnd().split('\n').at(-1)).toBe(test);
  });

  it('documents every webhook event type with its example payload', () => {
    for (const t of EVENT_TYPES) {
      expect(webhooksDoc, t).toContain(`| \`${t}\` | ${CATALOGUE[t].description} |`);
      expect(webhooksDoc, t).toContain(JSON.stringify(CATALOGUE[t].example));
    }
  });

  it('shows the plugin install from a clone, the exact token line of each skill and the Claude Desktop stdio entry', async () => {
    const root = new URL('../..', import.meta.url).pathname;
    const marketplace = JSON.parse(readFileSync(new URL('../../.claude-plugin/marketplace.json', import.meta.url), 'utf8')) as { name: string; plugins: { name: string }[] };
    expect(marketplace.plugins.map((p) => p.name)).toContain(PLUGIN_NAME);
    expect(pluginDoc).toContain('/plugin marketplace add ./path/to/svc-clone\n');
    expect(pluginDoc).toContain(`/plugin install ${PLUGIN_NAME}@${marketplace.name}\n`);
    const skills = await loadSkills(new URL('../../skills', import.meta.url).pathname);
    expect(skills).toHaveLength(4);
    for (const s of skills) {
      const line = (s.frontmatter.metadata as Record<string, string>)['svc-token']!;
      expect(pluginDoc, s.dir).toMatch(new RegExp(`^\\| \`${s.dir}\` \\| .+ \\| \`${line.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\` \\|$`, 'm'));
    }
    const entry = mcpConfigEntry({ client: 'claude-desktop', stdio: true, url: 'https://svc.example.com', token: 'mcpt_...', package: packageSpec(root) });
    const block = /Claude Desktop reads only local servers[\s\S]*?```json\n([\s\S]*?)```/.exec(pluginDoc)?.[1];
    expect(JSON.parse(block!)).toEqual(entry);
  });

  it('lists exactly the product areas of the tool registry for --areas (npm run docs:gen rewrites the row)', () => {
    expect(AREAS.length).toBeGreaterThanOrEqual(28);
    expect(committedAreasRow(mcpDoc), 'run `npm run docs:gen`').toBe(areasRow());
    // The row names every area once, in the registry's order, and no other.
    const named = [...areasRow().matchAll(/`([a-z]+)`/g)].map((m) => m[1]);
    expect(named).toEqual([...AREAS]);
    expect(committedAreasRow(mcpDoc.replace('`zones`)', '`zones`, `web`)'))).not.toBe(areasRow());
  });

  it('names the published package wherever a user installs, imports or runs it outside a clone', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { name: string; private?: boolean; license: string };
    expect(pkg.name).toBe('@svc-hq/svc');
    expect(pkg.private).toBeUndefined();
    expect(readme).toContain(`import { verifySignature } from '${pkg.name}';`);
    expect(readme).toContain(`npx -y ${pkg.name} serve`);
    // Every pinned npx spec is the scoped package; the bare `svc` package is someone else's.
    expect(readme).not.toMatch(/npx -y svc@|"svc@\d|from 'svc'/);
    const pluginMcp = readFileSync(new URL('../../plugin/.mcp.json', import.meta.url), 'utf8');
    expect(pluginMcp).toContain(`"${pkg.name}@`);
  });
});

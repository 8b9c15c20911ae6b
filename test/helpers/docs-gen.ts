import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { configSchema, envName, OTHER_ENV, type Config } from '../../src/config.js';
import { AREAS, TOOLS } from '../../src/mcp/tools/index.js';
import type { ToolDef } from '../../src/mcp/tool.js';
import { CATALOGUE, EVENT_TYPES } from '../../src/webhooks/catalogue.js';
import { ERRORS, jsonRpcCodeOf, type ErrorCode } from '../../src/errors/codes.js';

// The reference tables of docs/ that restate the code, generated from the code:
//   npm run docs:gen        rewrites every generated block in docs/
// test/unit/docs.test.ts fails while a committed block differs from what this prints.
// A block sits between `<!-- BEGIN generated:NAME (npm run docs:gen) -->` and `<!-- END generated:NAME -->`.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface Block {
  /** Path from the repository root. */
  file: string;
  name: string;
  render: () => string;
}

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** Settings: one row per key of the config schema (env name, input default, description), then the variables read outside it. */
export function settingsTable(): string {
  const rows = ['| Env | Default | Meaning |', '|---|---|---|'];
  for (const key of Object.keys(configSchema.shape) as (keyof Config)[]) {
    const field = configSchema.shape[key];
    const env = envName(key);
    const json = z.toJSONSchema(field, { io: 'input', unrepresentable: 'any' }) as { default?: unknown };
    const def = json.default === undefined ? '(none)' : `\`${typeof json.default === 'string' ? json.default : JSON.stringify(json.default)}\``;
    const meaning = (field.description ?? '').replace(new RegExp(`\\s*\\(${env}\\)`), '').trim();
    rows.push(`| \`${env}\` | ${def} | ${cell(meaning)} |`);
  }
  for (const o of OTHER_ENV) rows.push(`| \`${o.name}\` | (none) | ${cell(o.meaning)} |`);
  return rows.join('\n');
}

function kindOf(t: ToolDef): string {
  if (t.flags.issuesCredentials) return 'issues credentials';
  if (t.flags.destructive) return 'destructive';
  if (t.flags.changesData) return 'writes';
  return 'read-only';
}

/** The first sentence of a description. */
function firstSentence(s: string): string {
  // A sentence ends at . ! ? followed by a capital (so "e.g. the" does not end one).
  const m = /^(.+?[.!?])(?=\s+[A-Z]|$)/s.exec(s);
  return (m ? m[1]! : s).replace(/\.$/, '');
}

/** Every MCP tool: area, name, scope, kind and what it does (the first sentence of its description). */
export function toolsTable(): string {
  const rows = ['| Area | Tool | Scope | Kind | What it does |', '|---|---|---|---|---|'];
  for (const t of TOOLS) rows.push(`| ${t.area} | \`${t.name}\` | ${t.scope} | ${kindOf(t)} | ${cell(firstSentence(t.description))} |`);
  return rows.join('\n');
}

/** The `--areas` row of the token-restriction table. */
export function areasRow(areas: readonly string[] = AREAS): string {
  return `| \`--areas a,b\` | only tools of these product areas (${areas.length}: ${areas.map((a) => `\`${a}\``).join(', ')}) |`;
}

/** The webhook event catalogue: one row per type, then one example payload per type. */
export function catalogue(): string {
  const rows = ['| Event type | Fired when | Personal data |', '|---|---|---|'];
  for (const t of EVENT_TYPES) rows.push(`| \`${t}\` | ${cell(CATALOGUE[t].description)} | ${CATALOGUE[t].personalData ? 'yes' : 'never'} |`);
  const examples = EVENT_TYPES.map(
    (t) => `<details><summary><code>${t}</code></summary>\n\n\`\`\`json\n${JSON.stringify(CATALOGUE[t].example)}\n\`\`\`\n\n</details>`,
  );
  return `${rows.join('\n')}\n\n${examples.join('\n\n')}`;
}

/** Every error code with its HTTP status, JSON-RPC code (protocol-level MCP errors), CLI exit code and meaning. */
export function errorsTable(): string {
  const rows = ['| Code | HTTP | JSON-RPC | CLI exit | When |', '|---|---|---|---|---|'];
  for (const code of Object.keys(ERRORS) as ErrorCode[]) {
    const e = ERRORS[code];
    rows.push(`| \`${code}\` | ${e.status} | ${'rpc' in e ? e.rpc : `(${jsonRpcCodeOf(code)})`} | ${e.exit} | ${cell(e.meaning)} |`);
  }
  return rows.join('\n');
}

export const BLOCKS: readonly Block[] = [
  { file: 'docs/errors.md', name: 'errors', render: errorsTable },
  { file: 'docs/settings.md', name: 'settings', render: settingsTable },
  { file: 'docs/mcp.md', name: 'tools', render: toolsTable },
  { file: 'docs/webhooks.md', name: 'catalogue', render: catalogue },
];

const begin = (name: string) => `<!-- BEGIN generated:${name} (npm run docs:gen) -->`;
const end = (name: string) => `<!-- END generated:${name} -->`;

/** The block as committed in its file, or null when the file has no such block. */
export function committedBlock(b: Block, text = readFileSync(ROOT + b.file, 'utf8')): string | null {
  const from = text.indexOf(begin(b.name));
  const to = text.indexOf(end(b.name));
  if (from < 0 || to < from) return null;
  return text.slice(from + begin(b.name).length, to).replace(/^\n/, '').replace(/\n$/, '');
}

/** The `--areas` row as docs/mcp.md has it now, or null. */
const AREAS_ROW = /^\| `--areas a,b` \| .*\|$/m;
export const AREAS_FILE = 'docs/mcp.md';
export function committedAreasRow(text = readFileSync(ROOT + AREAS_FILE, 'utf8')): string | null {
  return AREAS_ROW.exec(text)?.[0] ?? null;
}

/** Rewrites every generated block (and the areas row); returns the files that changed. */
export function writeDocs(): string[] {
  const changed = new Set<string>();
  for (const b of BLOCKS) {
    const text = readFileSync(ROOT + b.file, 'utf8');
    const from = text.indexOf(begin(b.name));
    const to = text.indexOf(end(b.name));
    if (from < 0 || to < from) throw new Error(`${b.file} has no generated:${b.name} block`);
    const next = `${text.slice(0, from)}${begin(b.name)}\n${b.render()}\n${text.slice(to)}`;
    if (next !== text) {
      writeFileSync(ROOT + b.file, next);
      changed.add(b.file);
    }
  }
  const text = readFileSync(ROOT + AREAS_FILE, 'utf8');
  if (!AREAS_ROW.test(text)) throw new Error(`${AREAS_FILE} has no \`--areas a,b\` row to rewrite`);
  const next = text.replace(AREAS_ROW, areasRow());
  if (next !== text) {
    writeFileSync(ROOT + AREAS_FILE, next);
    changed.add(AREAS_FILE);
  }
  return [...changed];
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const changed = writeDocs();
  process.stdout.write(changed.length ? `rewritten: ${changed.join(', ')}\n` : 'docs: every generated block is current\n');
}

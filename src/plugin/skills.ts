import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { skillEntry } from '@modelcontextprotocol/server/ext/skills';

/** The package root (the folder of package.json): `src/plugin`, `dist/plugin` and the CLI bundle's `dist/bundle` are all two levels below it. */
export const PACKAGE_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The skills folder of the package: served by `svc plugin run` and packed by `svc plugin build`. */
export const SKILLS_ROOT = path.join(PACKAGE_ROOT, 'skills');

/** The plugin's name in its manifest; Claude Code names its tools `mcp__plugin_<plugin>_<server>__<tool>`. */
export const PLUGIN_NAME = 'svc-seller-skills';
/** The two server entries of plugin/.mcp.json: the HTTP server and the local stdio one (`svc plugin run`). */
export const PLUGIN_SERVERS = ['svc', 'svc-local'] as const;

/** One SKILL.md: its folder name, its frontmatter (as the MCP skills extension reads it), its body and its whole text. */
export interface SkillDoc {
  dir: string;
  frontmatter: Record<string, unknown>;
  body: string;
  text: string;
}

/** The markdown after the frontmatter's closing `---` line. */
export function skillBody(text: string): string {
  const t = text.replaceAll('\r\n', '\n');
  const close = /^---[\t ]*$/m.exec(t.slice(4));
  if (!t.startsWith('---\n') || close === null) return t;
  return t.slice(4 + close.index + close[0].length).replace(/^\n/, '');
}

/**
 * Parses one SKILL.md with the SDK's skills-extension reader (the same YAML
 * subset and rules the `io.modelcontextprotocol/skills` catalog applies: name
 * matching the folder, description length, metadata as strings). Throws an
 * Error naming the problems.
 */
export async function parseSkill(dir: string, text: string): Promise<SkillDoc> {
  const entry = await skillEntry(dir, { 'SKILL.md': text });
  return { dir, frontmatter: entry.frontmatter as Record<string, unknown>, body: skillBody(text), text };
}

/** The folder names under `skillsRoot` that hold a SKILL.md, sorted. */
export function skillDirs(skillsRoot: string): string[] {
  let names: string[];
  try {
    names = readdirSync(skillsRoot);
  } catch {
    return [];
  }
  return names
    .filter((n) => {
      try {
        return statSync(path.join(skillsRoot, n, 'SKILL.md')).isFile();
      } catch {
        return false;
      }
    })
    .sort();
}

/** Every skill of a skills folder, parsed; the first unreadable one throws. */
export async function loadSkills(skillsRoot: string): Promise<SkillDoc[]> {
  const out: SkillDoc[] = [];
  for (const dir of skillDirs(skillsRoot)) out.push(await parseSkill(dir, readFileSync(path.join(skillsRoot, dir, 'SKILL.md'), 'utf8')));
  return out;
}

/** A list field of the frontmatter (`allowed-tools`): a YAML sequence, or a string of names split on commas and spaces. */
export function listField(v: unknown): string[] | null {
  if (v === undefined) return [];
  if (typeof v === 'string') return v.split(/[\s,]+/).filter(Boolean);
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v as string[];
  return null;
}

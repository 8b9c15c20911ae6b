import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { MCP_SCOPES, restrictionsSchema, scopeRank, type McpScope, type Restrictions } from '../domain/access/grant.js';
import { decide, type ToolPolicyFacts } from '../domain/access/policy.js';
import { listField, parseSkill, PLUGIN_NAME, PLUGIN_SERVERS, skillDirs, type SkillDoc } from './skills.js';

/** The skills the plugin ships (SPEC.md, MCP tool server: seller skills). */
export const SELLER_SKILLS = ['draft-segment-page', 'explain-exposure', 'hot-accounts', 'pre-call-brief'] as const;

/**
 * Write tools of the CRMs' MCP servers, under the server names their vendors
 * document. A skill that reads a CRM denies all of them in `disallowed-tools`
 * (HubSpot and Attio have no read-only switch; Salesforce is read through
 * its server-enforced read-only endpoint, which the skill text names).
 */
export const CRM_WRITE_TOOLS = [
  'mcp__hubspot__manage_crm_objects',
  'mcp__attio__create-record',
  'mcp__attio__upsert-record',
  'mcp__attio__update-record',
  'mcp__attio__merge-records',
  'mcp__attio__add-record-to-list',
  'mcp__attio__create-note',
] as const;

/** `mcp__plugin_<plugin>_<server>__<tool>`: how Claude Code names a tool of a plugin's server. */
export function pluginToolName(server: string, tool: string): string {
  return `mcp__plugin_${PLUGIN_NAME}_${server}__${tool}`;
}

/** The token a skill declares: the `svc token mint` line in its `metadata.svc-token`. */
export interface DeclaredToken {
  line: string;
  scope: McpScope;
  restrictions: Restrictions;
}

const MINT_FLAGS: Record<string, keyof Restrictions> = {
  '--read-only': 'read_only',
  '--block-destructive': 'block_destructive',
  '--propose-only': 'propose_only',
  '--allow-credential-issuance': 'allow_credential_issuance',
};

/** Reads a `svc token mint --site <site-id> --scope S [restriction flags] [--name N]` line into the token it mints. */
export function parseMintLine(line: string): DeclaredToken | string {
  const words = line.trim().split(/\s+/);
  if (words.slice(0, 3).join(' ') !== 'svc token mint') return 'the token line must start with "svc token mint"';
  const flags: Record<string, boolean> = {};
  let scope: string | undefined;
  let site = false;
  let areas: string[] = [];
  for (let i = 3; i < words.length; i++) {
    const w = words[i]!;
    if (w === '--scope' || w === '--site' || w === '--name' || w === '--areas') {
      const v = words[++i];
      if (v === undefined || v.startsWith('--')) return `${w} needs a value`;
      if (w === '--scope') scope = v;
      if (w === '--site') site = true;
      if (w === '--areas') areas = v.split(',').filter(Boolean);
    } else if (MINT_FLAGS[w] !== undefined) {
      flags[MINT_FLAGS[w]] = true;
    } else {
      return `unknown flag ${w} in the token line`;
    }
  }
  if (!site) return 'the token line must name the site (--site <site-id>)';
  if (scope === undefined || !(MCP_SCOPES as readonly string[]).includes(scope)) return `the token line needs --scope ${MCP_SCOPES.join('|')}`;
  return { line: line.trim(), scope: scope as McpScope, restrictions: restrictionsSchema.parse({ ...flags, areas }) };
}

/** The scope a tool really needs: a tool that changes data needs at least write (as the policy decides). */
function neededScope(t: ToolPolicyFacts): McpScope {
  return t.changesData && scopeRank(t.scope) < scopeRank('write') ? 'write' : t.scope;
}

/**
 * Checks one parsed skill against the tool registry and the policy. Returns
 * problem lines (empty when the skill is valid). `registry` is the list of
 * tools the server serves (the live TOOLS in `svc plugin validate`).
 */
export function checkSkill(skill: SkillDoc, registry: readonly ToolPolicyFacts[]): string[] {
  const where = `skills/${skill.dir}/SKILL.md`;
  const problems: string[] = [];
  const p = (m: string) => problems.push(`${where}: ${m}`);
  const fm = skill.frontmatter;
  for (const key of ['when_to_use']) if (typeof fm[key] !== 'string' || (fm[key] as string).trim() === '') p(`frontmatter ${key} is missing`);

  // The token: metadata.svc-token holds the exact mint line, which the body repeats for the reader.
  const meta = (typeof fm.metadata === 'object' && fm.metadata !== null ? fm.metadata : {}) as Record<string, unknown>;
  let token: DeclaredToken | null = null;
  if (typeof meta['svc-token'] !== 'string') p('frontmatter metadata.svc-token (the `svc token mint` line of the token this skill needs) is missing');
  else {
    const parsed = parseMintLine(meta['svc-token']);
    if (typeof parsed === 'string') p(`metadata.svc-token: ${parsed}`);
    else {
      token = parsed;
      if (!skill.body.includes(parsed.line)) p(`the body must show the exact token line: ${parsed.line}`);
    }
  }

  // The whoami stop rule: a "## Token" section says to call whoami first and to stop when the scope or a restriction of the token differs.
  const tokenSection = /^## Token$([\s\S]*?)(?=^## |(?![\s\S]))/m.exec(skill.body)?.[1];
  if (tokenSection === undefined) p('the body has no "## Token" section (the token it needs and the whoami stop rule)');
  else {
    if (!/Call `whoami` first/.test(tokenSection)) p('the "## Token" section must say: Call `whoami` first');
    if (!/\bstop and reply\b/.test(tokenSection)) p('the "## Token" section must say when to stop and reply with a clear message');
    if (!tokenSection.includes('`scope`')) p('the whoami stop rule must check `scope`');
    if (token) {
      for (const flag of ['read_only', 'propose_only', 'block_destructive'] as const) {
        if (token.restrictions[flag] && !tokenSection.includes(`restrictions.${flag}`)) p(`the whoami stop rule must check \`restrictions.${flag}\` (the token is minted with it)`);
      }
    }
  }

  // allowed-tools: our tools under both server entries of the plugin, nothing else.
  const allowed = listField(fm['allowed-tools']);
  const perServer = new Map<string, Set<string>>(PLUGIN_SERVERS.map((s) => [s, new Set<string>()]));
  if (allowed === null || allowed.length === 0) p('frontmatter allowed-tools must list the svc tools the skill calls');
  for (const entry of allowed ?? []) {
    const m = /^mcp__plugin_(.+?)_([a-z0-9-]+)__([a-z0-9_]+)$/.exec(entry);
    if (!m || m[1] !== PLUGIN_NAME || !perServer.has(m[2]!)) {
      p(`allowed-tools entry ${entry} is not a tool of this plugin's servers (${PLUGIN_SERVERS.map((s) => pluginToolName(s, '<tool>')).join(', ')})`);
      continue;
    }
    perServer.get(m[2]!)!.add(m[3]!);
  }
  const tools = new Set<string>([...perServer.values()].flatMap((s) => [...s]));
  for (const [server, names] of perServer) {
    for (const t of tools) if (!names.has(t)) p(`allowed-tools lists ${t} but not ${pluginToolName(server, t)}`);
  }

  // Every tool exists and the declared token may call it; the token is no stronger than the tools need.
  const byName = new Map(registry.map((t) => [t.name, t]));
  const facts: ToolPolicyFacts[] = [];
  for (const t of [...tools].sort()) {
    const f = byName.get(t);
    if (!f) {
      p(`tool ${t} does not exist in the server's registry`);
      continue;
    }
    facts.push(f);
    if (token) {
      const d = decide(token, f);
      if (!d.allowed) p(`tool ${t} is refused to the declared token (${token.line}): ${d.message}`);
    }
  }
  if (!tools.has('whoami')) p('the skill must call whoami first (and list it in allowed-tools)');
  if (token && facts.length === tools.size && facts.length > 0) {
    const scope = facts.map(neededScope).reduce((a, b) => (scopeRank(b) > scopeRank(a) ? b : a), 'read' as McpScope);
    if (token.scope !== scope) p(`the declared token has the ${token.scope} scope; its tools need exactly ${scope}`);
    const writes = facts.some((f) => f.changesData);
    const r = token.restrictions;
    if (!writes && !r.read_only) p('no tool of this skill changes data: the token must be --read-only');
    if (writes && r.read_only) p('this skill calls tools that change data: a --read-only token cannot run it');
    if (writes && !facts.some((f) => f.destructive) && !r.block_destructive) p('no tool of this skill is destructive: the token must be minted with --block-destructive');
    if (writes && !facts.some((f) => f.approvesOrPublishes) && !r.propose_only) p('no tool of this skill approves or publishes: the token must be minted with --propose-only');
    if (!facts.some((f) => f.issuesCredentials) && r.allow_credential_issuance) p('no tool of this skill hands out access: drop --allow-credential-issuance');
  }

  // The body names tools in backticks: every one it names is allowed, every allowed one is named.
  const areas = new Set(registry.map((t) => t.name.split('_')[0]!));
  for (const t of tools) areas.add(t.split('_')[0]!);
  const named = new Set([...skill.body.matchAll(/`([a-z][a-z0-9]*(?:_[a-z0-9]+)*)`/g)].map((m) => m[1]!));
  for (const n of named) {
    // An area prefix makes a name look like a tool (`accounts_hots`), unless it is an id field (`content_id`): no tool name ends in _id.
    const looksLikeTool = byName.has(n) || (n.includes('_') && areas.has(n.split('_')[0]!) && !/_ids?$/.test(n));
    if (looksLikeTool && !tools.has(n)) p(`the body names \`${n}\`, which is not in allowed-tools`);
  }
  for (const t of tools) if (!named.has(t)) p(`allowed-tools lists ${t} but the body never says when to call \`${t}\``);

  // CRM: read-only paths only, with the CRMs' write tools denied while the skill runs.
  const disallowed = listField(fm['disallowed-tools']);
  if (disallowed === null) p('frontmatter disallowed-tools must be a list of tool names');
  if (/\bCRM\b/.test(skill.body)) {
    if (!/^## CRM rules$/m.test(skill.body)) p('the body mentions a CRM but has no "## CRM rules" section');
    for (const w of CRM_WRITE_TOOLS) if (!(disallowed ?? []).includes(w)) p(`disallowed-tools must deny the CRM write tool ${w}`);
  }
  for (const d of disallowed ?? []) if (d.startsWith(`mcp__plugin_${PLUGIN_NAME}_`)) p(`disallowed-tools must not name this plugin's own tool ${d}`);
  return problems;
}

const MANIFEST_KEYS = new Set(['name', 'version', 'description', 'author', 'homepage', 'repository', 'license', 'keywords', 'mcpServers', 'skills']);
const SEMVER = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;

function readJson(file: string, problems: string[], label: string): Record<string, unknown> | null {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    problems.push(`${label}: missing`);
    return null;
  }
  try {
    const v = JSON.parse(text) as unknown;
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('not a JSON object');
    return v as Record<string, unknown>;
  } catch (err) {
    problems.push(`${label}: not valid JSON (${(err as Error).message})`);
    return null;
  }
}

/** What `npx -y <spec> plugin run` fetches: the package's own name and version (`@svc-hq/svc@0.1.0`). */
export function packageSpec(root: string): string {
  const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { name?: unknown; version?: unknown };
  if (typeof pkg.name !== 'string' || typeof pkg.version !== 'string') throw new Error('package.json has no name or version');
  return `${pkg.name}@${pkg.version}`;
}

/** The expected server entries of plugin/.mcp.json. */
export function pluginMcpServers(spec: string): Record<string, unknown> {
  return {
    svc: { type: 'http', url: '${SVC_URL}/api/mcp', headers: { Authorization: 'Bearer ${SVC_MCP_TOKEN}' } },
    'svc-local': { type: 'stdio', command: 'npx', args: ['-y', spec, 'plugin', 'run'] },
  };
}

function checkManifest(root: string, problems: string[]): string | null {
  const label = 'plugin/.claude-plugin/plugin.json';
  const m = readJson(path.join(root, label), problems, label);
  if (!m) return null;
  const p = (s: string) => problems.push(`${label}: ${s}`);
  if (m.name !== PLUGIN_NAME) p(`name must be ${JSON.stringify(PLUGIN_NAME)} (the skills' allowed-tools use it)`);
  if (typeof m.version !== 'string' || !SEMVER.test(m.version)) p('version must be a semantic version (the plugin has its own release number)');
  if (typeof m.description !== 'string' || m.description.trim() === '') p('description is missing');
  const author = m.author as { name?: unknown } | undefined;
  if (typeof author !== 'object' || author === null || typeof author.name !== 'string' || author.name === '') p('author.name is missing');
  if (typeof m.homepage !== 'string' || !/^https?:\/\//.test(m.homepage)) p('homepage must be an http(s) URL');
  for (const k of Object.keys(m)) if (!MANIFEST_KEYS.has(k)) p(`unknown field ${k}`);
  return typeof m.version === 'string' ? m.version : null;
}

function checkMcpConfig(root: string, problems: string[]): void {
  const label = 'plugin/.mcp.json';
  const raw = readJson(path.join(root, label), problems, label);
  if (!raw) return;
  const servers = (raw.mcpServers ?? raw) as Record<string, unknown>;
  let spec: string;
  try {
    spec = packageSpec(root);
  } catch {
    problems.push('package.json: missing or unreadable (the stdio server entry pins its name and version)');
    return;
  }
  const want = pluginMcpServers(spec);
  for (const [name, entry] of Object.entries(want)) {
    if (JSON.stringify(servers[name]) !== JSON.stringify(entry)) {
      problems.push(`${label}: server ${name} must be ${JSON.stringify(entry)}; found ${JSON.stringify(servers[name] ?? null)}`);
    }
  }
  for (const name of Object.keys(servers)) if (!(name in want)) problems.push(`${label}: unexpected server ${name}`);
}

function checkMarketplace(root: string, version: string | null, problems: string[]): void {
  const label = '.claude-plugin/marketplace.json';
  const m = readJson(path.join(root, label), problems, label);
  if (!m) return;
  const p = (s: string) => problems.push(`${label}: ${s}`);
  if (typeof m.name !== 'string' || m.name === '') p('name is missing');
  const owner = m.owner as { name?: unknown } | undefined;
  if (typeof owner !== 'object' || owner === null || typeof owner.name !== 'string') p('owner.name is missing');
  const plugins = Array.isArray(m.plugins) ? (m.plugins as Record<string, unknown>[]) : [];
  const entry = plugins.find((x) => x?.name === PLUGIN_NAME);
  if (!entry) {
    p(`plugins[] has no entry named ${PLUGIN_NAME}`);
    return;
  }
  if (entry.source !== './plugin') p('the plugin entry\'s source must be "./plugin"');
  if (entry.version !== undefined && entry.version !== version) p(`the plugin entry\'s version ${String(entry.version)} differs from plugin.json's ${String(version)}`);
}

/** plugin/skills must be an exact copy of skills/ (written by `svc plugin build`). */
export function copyDrift(root: string): string[] {
  const src = path.join(root, 'skills');
  const dst = path.join(root, 'plugin', 'skills');
  const out: string[] = [];
  const list = (dir: string): string[] => {
    if (!existsSync(dir)) return [];
    return readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((d) => d.isFile())
      .map((d) => path.relative(dir, path.join(d.parentPath, d.name)).split(path.sep).join('/'))
      .sort();
  };
  const a = list(src);
  const b = list(dst);
  for (const f of a) {
    if (!b.includes(f)) out.push(`plugin/skills/${f}: missing; run \`svc plugin build\` (npm run plugin:build)`);
    else if (!readFileSync(path.join(src, f)).equals(readFileSync(path.join(dst, f)))) out.push(`plugin/skills/${f}: differs from skills/${f}; run \`svc plugin build\``);
  }
  for (const f of b) if (!a.includes(f)) out.push(`plugin/skills/${f}: not in skills/; run \`svc plugin build\``);
  return out;
}

/**
 * `svc plugin validate`: the manifest, the MCP config, the marketplace entry,
 * every SKILL.md (frontmatter, token, tools against `registry` and the
 * policy), and that the plugin's copy of the skills is current.
 */
export async function validatePlugin(root: string, registry: readonly ToolPolicyFacts[]): Promise<{ problems: string[]; skills: string[] }> {
  const problems: string[] = [];
  const version = checkManifest(root, problems);
  checkMcpConfig(root, problems);
  checkMarketplace(root, version, problems);
  const dirs = skillDirs(path.join(root, 'skills'));
  for (const s of SELLER_SKILLS) if (!dirs.includes(s)) problems.push(`skills/${s}/SKILL.md: missing`);
  for (const dir of dirs) {
    let skill: SkillDoc;
    try {
      skill = await parseSkill(dir, readFileSync(path.join(root, 'skills', dir, 'SKILL.md'), 'utf8'));
    } catch (err) {
      problems.push(`skills/${dir}/SKILL.md: ${(err as Error).message.replace(/\s+/g, ' ')}`);
      continue;
    }
    problems.push(...checkSkill(skill, registry));
  }
  problems.push(...copyDrift(root));
  return { problems, skills: dirs };
}

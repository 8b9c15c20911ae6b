import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { policyFacts } from '../../src/mcp/call.js';
import { decide, type ToolPolicyFacts } from '../../src/domain/access/policy.js';
import { TOOLS } from '../../src/mcp/tools/index.js';
import { buildPluginSkills } from '../../src/plugin/build.js';
import { mcpConfigEntry } from '../../src/plugin/mcp-config.js';
import { listField, loadSkills, parseSkill, PLUGIN_SERVERS, type SkillDoc } from '../../src/plugin/skills.js';
import { checkSkill, copyDrift, CRM_WRITE_TOOLS, parseMintLine, pluginToolName, SELLER_SKILLS, validatePlugin, type DeclaredToken } from '../../src/plugin/validate.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const REGISTRY = TOOLS.map(policyFacts);
const skills = await loadSkills(path.join(ROOT, 'skills'));
const skill = (name: string) => skills.find((s) => s.dir === name)!;

/** The svc tools a skill names: its allowed-tools entries under the plugin's servers. */
function namedTools(s: SkillDoc): string[] {
  const out = new Set<string>();
  for (const e of listField(s.frontmatter['allowed-tools']) ?? []) {
    const m = /__([a-z0-9_]+)$/.exec(e);
    if (m) out.add(m[1]!);
  }
  return [...out].sort();
}

function declared(s: SkillDoc): DeclaredToken {
  const t = parseMintLine((s.frontmatter.metadata as Record<string, string>)['svc-token']!);
  if (typeof t === 'string') throw new Error(t);
  return t;
}

describe('every SKILL.md against the live registry and the policy', () => {
  it('ships the four seller skills, each declaring the token of SPEC.md', () => {
    expect(skills.map((s) => s.dir)).toEqual([...SELLER_SKILLS]);
    for (const name of ['pre-call-brief', 'hot-accounts', 'explain-exposure']) {
      const t = declared(skill(name));
      expect(t.scope, name).toBe('read');
      expect(t.restrictions, name).toMatchObject({ read_only: true, propose_only: false, allow_credential_issuance: false, areas: [] });
    }
    const d = declared(skill('draft-segment-page'));
    expect(d.scope).toBe('write');
    expect(d.restrictions).toMatchObject({ read_only: false, propose_only: true, block_destructive: true, allow_credential_issuance: false, areas: [] });
  });

  for (const name of SELLER_SKILLS) {
    it(`${name}: every tool it names exists and its token may call it`, () => {
      const s = skill(name);
      const token = declared(s);
      const tools = namedTools(s);
      expect(tools).toContain('whoami');
      for (const t of tools) {
        const facts = REGISTRY.find((f) => f.name === t);
        expect(facts, `${name} names ${t}, which is not in src/mcp/tools/index.ts TOOLS`).toBeDefined();
        // Allowed; under propose-only, a tool that changes who sees what runs as a draft awaiting approval.
        const expected = token.restrictions.propose_only && facts!.changesExposure ? { allowed: true, draft: true } : { allowed: true };
        expect(decide(token, facts!), `${name}: ${t} under ${token.line}`).toEqual(expected);
      }
      expect(checkSkill(s, REGISTRY)).toEqual([]);
    });
  }

  it('draft-segment-page: every approve or publish tool is refused under write + propose-only + block destructive', () => {
    const token = declared(skill('draft-segment-page'));
    const approving = REGISTRY.filter((t) => t.approvesOrPublishes);
    // The contract of the web-experience areas: these approve or publish.
    for (const n of ['variants_approve', 'variants_publish', 'overrides_publish']) expect(approving.map((t) => t.name), n).toContain(n);
    for (const t of approving) {
      const d = decide(token, t);
      expect(d.allowed, t.name).toBe(false);
      if (!d.allowed) expect(['propose_only', 'block_destructive', 'scope']).toContain(d.reason);
      expect(namedTools(skill('draft-segment-page'))).not.toContain(t.name);
    }
    for (const t of REGISTRY.filter((f) => f.destructive)) expect(decide(token, t).allowed, t.name).toBe(false);
  });

  it('svc plugin validate passes on this repository', async () => {
    expect((await validatePlugin(ROOT, REGISTRY)).problems).toEqual([]);
  });
});

// The tools of the other areas' contract (helper brief), with the flags their rules give them, for
// checking the validator on its own: lists/gets/previews read; create/update drafts write; approve and
// publish tools approvesOrPublishes; publish-override destructive and admin.
const read = (name: string, area = name.split('_')[0]!): ToolPolicyFacts => ({
  name,
  area,
  scope: 'read',
  changesData: false,
  destructive: false,
  issuesCredentials: false,
  approvesOrPublishes: false,
  changesExposure: false,
});
const write = (name: string, extra: Partial<ToolPolicyFacts> = {}): ToolPolicyFacts => ({ ...read(name), scope: 'write', changesData: true, ...extra });
const CONTRACT: ToolPolicyFacts[] = [
  ...['accounts_resolve_domain', 'accounts_get', 'accounts_signals', 'accounts_hot', 'accounts_list'].map((n) => read(n)),
  ...['pages_list', 'zones_list', 'content_list', 'variants_get', 'variants_list', 'placements_explain_decision', 'overrides_list'].map((n) => read(n)),
  ...['experiments_list', 'experiments_assignment_for_visitor', 'leads_tasks_list'].map((n) => read(n)),
  ...['content_create', 'variants_create_draft', 'variants_update_draft', 'pages_create'].map((n) => write(n)),
  write('variants_approve', { approvesOrPublishes: true }),
  write('variants_publish', { approvesOrPublishes: true }),
  write('overrides_publish', { scope: 'admin', approvesOrPublishes: true, destructive: true }),
  write('pages_delete', { destructive: true }),
];
const FULL = [...REGISTRY.filter((t) => !CONTRACT.some((c) => c.name === t.name)), ...CONTRACT];

async function edited(name: string, edit: (text: string) => string): Promise<SkillDoc> {
  return parseSkill(name, edit(readFileSync(path.join(ROOT, 'skills', name, 'SKILL.md'), 'utf8')));
}

describe('the validator (with the tools of the helper contract)', () => {
  it('finds nothing wrong with the four skills', async () => {
    expect((await validatePlugin(ROOT, FULL)).problems).toEqual([]);
  });

  it('reports a tool missing from the registry, with the skill and the tool', () => {
    const problems = checkSkill(skill('hot-accounts'), FULL.filter((t) => t.name !== 'accounts_hot'));
    expect(problems).toContain('skills/hot-accounts/SKILL.md: tool accounts_hot does not exist in the server\'s registry');
  });

  it('refuses a read skill declaring a write token (more power than it needs)', async () => {
    const s = await edited('pre-call-brief', (t) => t.replaceAll('--scope read --read-only', '--scope write'));
    const problems = checkSkill(s, FULL);
    expect(problems).toContain('skills/pre-call-brief/SKILL.md: the declared token has the write scope; its tools need exactly read');
    expect(problems).toContain('skills/pre-call-brief/SKILL.md: no tool of this skill changes data: the token must be --read-only');
  });

  it('refuses the drafting skill with an approving or deleting token, and with a read-only one', async () => {
    const admin = await edited('draft-segment-page', (t) => t.replaceAll('--scope write --propose-only --block-destructive', '--scope admin'));
    const p1 = checkSkill(admin, FULL);
    expect(p1).toContain('skills/draft-segment-page/SKILL.md: the declared token has the admin scope; its tools need exactly write');
    expect(p1).toContain('skills/draft-segment-page/SKILL.md: no tool of this skill approves or publishes: the token must be minted with --propose-only');
    expect(p1).toContain('skills/draft-segment-page/SKILL.md: no tool of this skill is destructive: the token must be minted with --block-destructive');
    const ro = await edited('draft-segment-page', (t) => t.replaceAll('--scope write --propose-only --block-destructive', '--scope write --read-only --propose-only --block-destructive'));
    const p2 = checkSkill(ro, FULL);
    expect(p2.some((p) => p.includes('tool segments_create is refused to the declared token') && p.includes('read-only'))).toBe(true);
  });

  it('refuses an approve or publish tool in the drafting skill: the policy says no under its token', async () => {
    const s = await edited('draft-segment-page', (t) =>
      t
        .replace('allowed-tools:\n', `allowed-tools:\n  - ${pluginToolName('svc', 'variants_publish')}\n  - ${pluginToolName('svc-local', 'variants_publish')}\n`)
        .replace('6. **Draft variant.**', 'Then call `variants_publish`.\n\n6. **Draft variant.**'),
    );
    const problems = checkSkill(s, FULL);
    expect(problems).toContain(
      'skills/draft-segment-page/SKILL.md: tool variants_publish is refused to the declared token (svc token mint --site <site-id> --scope write --propose-only --block-destructive --name draft-segment-page): variants_publish approves or publishes; this token may only propose',
    );
  });

  it('requires every tool under both server entries, and the body to name only allowed tools', async () => {
    const s = await edited('hot-accounts', (t) => t.replace(`  - ${pluginToolName('svc-local', 'accounts_signals')}\n`, '').replace('## Output', 'Also call `accounts_list` and `accounts_hots`.\n\n## Output'));
    const problems = checkSkill(s, FULL);
    expect(problems).toContain(`skills/hot-accounts/SKILL.md: allowed-tools lists accounts_signals but not ${pluginToolName('svc-local', 'accounts_signals')}`);
    expect(problems).toContain('skills/hot-accounts/SKILL.md: the body names `accounts_list`, which is not in allowed-tools');
    expect(problems).toContain('skills/hot-accounts/SKILL.md: the body names `accounts_hots`, which is not in allowed-tools');
  });

  it('requires whoami, the exact mint line in the body, the CRM rules and the CRM write tools denied', async () => {
    const s = await edited('pre-call-brief', (t) =>
      t
        .replace(/ {2}- mcp__plugin_svc-seller-skills_svc(-local)?__whoami\n/g, '')
        .replace('```sh\nsvc token mint --site <site-id> --scope read --read-only --name pre-call-brief\n```', '')
        .replaceAll('use a read-only token: svc token mint --site <site-id> --scope read --read-only --name pre-call-brief', 'use a read-only token')
        .replaceAll('Mint: svc token mint --site <site-id> --scope read --read-only --name pre-call-brief', '')
        .replace('## CRM rules', '## Rules for the CRM')
        .replace('  - mcp__hubspot__manage_crm_objects\n', ''),
    );
    const problems = checkSkill(s, FULL).map((p) => p.replace('skills/pre-call-brief/SKILL.md: ', ''));
    expect(problems).toContain('the skill must call whoami first (and list it in allowed-tools)');
    expect(problems).toContain('the body must show the exact token line: svc token mint --site <site-id> --scope read --read-only --name pre-call-brief');
    expect(problems).toContain('the body mentions a CRM but has no "## CRM rules" section');
    expect(problems).toContain('disallowed-tools must deny the CRM write tool mcp__hubspot__manage_crm_objects');
    expect(problems).toContain('the body names `whoami`, which is not in allowed-tools');
  });

  it('requires the whoami stop rule to check the scope and every restriction the token is minted with', async () => {
    const s = await edited('draft-segment-page', (t) => t.replace(', or `restrictions.block_destructive` is false', '').replace('Call `whoami` first', 'Call `whoami` when you like'));
    const problems = checkSkill(s, FULL).map((p) => p.replace('skills/draft-segment-page/SKILL.md: ', ''));
    expect(problems).toEqual([
      'the "## Token" section must say: Call `whoami` first',
      'the whoami stop rule must check `restrictions.block_destructive` (the token is minted with it)',
    ]);
    const noStop = await edited('hot-accounts', (t) => t.replaceAll('stop and reply', 'reply').replace('`scope` is not `read`, or ', ''));
    expect(checkSkill(noStop, FULL).map((p) => p.replace('skills/hot-accounts/SKILL.md: ', ''))).toEqual([
      'the "## Token" section must say when to stop and reply with a clear message',
      'the whoami stop rule must check `scope`',
    ]);
    const noSection = await edited('explain-exposure', (t) => t.replace('## Token\n', '## Access\n'));
    expect(checkSkill(noSection, FULL)).toContain('skills/explain-exposure/SKILL.md: the body has no "## Token" section (the token it needs and the whoami stop rule)');
  });

  it('reads `x_id` fields in the body as fields, a misspelt tool as a tool', async () => {
    const s = await edited('hot-accounts', (t) => t.replace('## Output', 'Keep `accounts_id` and `content_ids`; never `content_creat`.\n\n## Output'));
    expect(checkSkill(s, FULL)).toEqual(['skills/hot-accounts/SKILL.md: the body names `content_creat`, which is not in allowed-tools']);
  });

  it('every skill touching a CRM denies every CRM write tool', () => {
    for (const s of skills) {
      expect(s.body, s.dir).toMatch(/^## CRM rules$/m);
      expect(listField(s.frontmatter['disallowed-tools']), s.dir).toEqual(expect.arrayContaining([...CRM_WRITE_TOOLS]));
      expect(s.body, s.dir).toContain('`accounts_resolve_domain`');
    }
  });
});

describe('the mint line a skill declares', () => {
  it('reads scope and restrictions', () => {
    expect(parseMintLine('svc token mint --site <site-id> --scope write --propose-only --block-destructive --name x')).toEqual({
      line: 'svc token mint --site <site-id> --scope write --propose-only --block-destructive --name x',
      scope: 'write',
      restrictions: { read_only: false, block_destructive: true, areas: [], allow_credential_issuance: false, propose_only: true },
    });
    expect(parseMintLine('svc token mint --site S --scope read --read-only --areas accounts,leads')).toMatchObject({ restrictions: { read_only: true, areas: ['accounts', 'leads'] } });
  });

  it('refuses what `svc token mint` would refuse', () => {
    expect(parseMintLine('svc token create --site S --scope read')).toBe('the token line must start with "svc token mint"');
    expect(parseMintLine('svc token mint --scope read')).toBe('the token line must name the site (--site <site-id>)');
    expect(parseMintLine('svc token mint --site S --scope owner')).toBe('the token line needs --scope read|write|admin');
    expect(parseMintLine('svc token mint --site S --scope read --readonly')).toBe('unknown flag --readonly in the token line');
    expect(parseMintLine('svc token mint --site --scope read')).toBe('--site needs a value');
  });

  it('matches the flags of the token CLI', () => {
    const help = readFileSync(path.join(ROOT, 'src/cli/token.ts'), 'utf8');
    for (const f of ['--read-only', '--block-destructive', '--propose-only', '--allow-credential-issuance', '--areas', '--scope', '--site', '--name']) expect(help).toContain(`'${f}`);
  });
});

describe('svc mcp config', () => {
  it('claude-desktop: a stdio entry (local data directory, or a proxy with --url) carrying the token', () => {
    expect(mcpConfigEntry({ client: 'claude-desktop', stdio: false, token: 'mcpt_x', data: '/srv/svc', package: '@svc-hq/svc@1.2.3' })).toEqual({
      mcpServers: { svc: { command: 'npx', args: ['-y', '@svc-hq/svc@1.2.3', 'plugin', 'run', '--data', '/srv/svc'], env: { SVC_MCP_TOKEN: 'mcpt_x' } } },
    });
    expect(mcpConfigEntry({ client: 'claude-desktop', stdio: true, token: 'mcpt_x', url: 'https://svc.example.com/api/mcp/', package: '@svc-hq/svc@1.2.3' }).mcpServers.svc!.args).toEqual([
      '-y',
      '@svc-hq/svc@1.2.3',
      'plugin',
      'run',
      '--url',
      'https://svc.example.com',
    ]);
    expect(() => mcpConfigEntry({ client: 'claude-desktop', stdio: true, package: '@svc-hq/svc@1.2.3' })).toThrow(/pass --token/);
    expect(mcpConfigEntry({ client: 'claude-desktop', stdio: true, token: 'mcpt_x', data: '/srv/svc', package: '@svc-hq/svc@1.2.3', local: { node: '/usr/bin/node', bin: '/src/svc/bin/svc.js' } })).toEqual({
      mcpServers: { svc: { command: '/usr/bin/node', args: ['/src/svc/bin/svc.js', 'plugin', 'run', '--data', '/srv/svc'], env: { SVC_MCP_TOKEN: 'mcpt_x' } } },
    });
  });

  it('claude-code and cursor: the HTTP entry, with each client\'s variable syntax when no token or URL is given', () => {
    expect(mcpConfigEntry({ client: 'claude-code', stdio: false, package: '@svc-hq/svc@1' })).toEqual({
      mcpServers: { svc: { type: 'http', url: '${SVC_URL}/api/mcp', headers: { Authorization: 'Bearer ${SVC_MCP_TOKEN}' } } },
    });
    expect(mcpConfigEntry({ client: 'cursor', stdio: false, url: 'https://svc.example.com', token: 'mcpt_y', package: '@svc-hq/svc@1' })).toEqual({
      mcpServers: { svc: { url: 'https://svc.example.com/api/mcp', headers: { Authorization: 'Bearer mcpt_y' } } },
    });
    expect(mcpConfigEntry({ client: 'claude-code', stdio: true, databaseUrl: 'postgres://db/svc', package: '@svc-hq/svc@2.0.0' })).toEqual({
      mcpServers: { svc: { type: 'stdio', command: 'npx', args: ['-y', '@svc-hq/svc@2.0.0', 'plugin', 'run', '--database-url', 'postgres://db/svc'], env: { SVC_MCP_TOKEN: '${SVC_MCP_TOKEN}' } } },
    });
    expect(() => mcpConfigEntry({ client: 'cursor', stdio: false, url: 'ftp://x', package: '@svc-hq/svc@1' })).toThrow(/http\(s\)/);
  });
});

describe('the plugin folder', () => {
  const tmp = mkdtempSync(path.join(tmpdir(), 'svc-plugin-'));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));
  const copyRepo = (name: string) => {
    const root = path.join(tmp, name);
    for (const p of ['package.json', 'skills', 'plugin', '.claude-plugin']) cpSync(path.join(ROOT, p), path.join(root, p), { recursive: true });
    return root;
  };

  it('ships an exact copy of skills/, and the build rewrites a stale one', async () => {
    expect(copyDrift(ROOT)).toEqual([]);
    const root = copyRepo('drift');
    writeFileSync(path.join(root, 'plugin/skills/hot-accounts/SKILL.md'), 'stale');
    rmSync(path.join(root, 'plugin/skills/pre-call-brief'), { recursive: true });
    writeFileSync(path.join(root, 'plugin/skills/extra.md'), 'x');
    expect((await validatePlugin(root, FULL)).problems).toEqual([
      'plugin/skills/hot-accounts/SKILL.md: differs from skills/hot-accounts/SKILL.md; run `svc plugin build`',
      'plugin/skills/pre-call-brief/SKILL.md: missing; run `svc plugin build` (npm run plugin:build)',
      'plugin/skills/extra.md: not in skills/; run `svc plugin build`',
    ]);
    expect(buildPluginSkills(root)).toHaveLength(3);
    expect((await validatePlugin(root, FULL)).problems).toEqual([]);
  });

  it('build and validate answer a wrong --root with a clear error, never a stack trace', async () => {
    expect(() => buildPluginSkills(path.join(tmp, 'nowhere'))).toThrow(expect.objectContaining({ code: 'not_found', message: expect.stringContaining('needs skills/ and plugin/') }));
    const root = copyRepo('no-package');
    rmSync(path.join(root, 'package.json'));
    expect((await validatePlugin(root, FULL)).problems).toEqual(['package.json: missing or unreadable (the stdio server entry pins its name and version)']);
  });

  it('checks the manifest, both server entries (stdio pinned to the package version) and the marketplace entry', async () => {
    const root = copyRepo('manifest');
    const mf = path.join(root, 'plugin/.claude-plugin/plugin.json');
    writeFileSync(mf, JSON.stringify({ ...JSON.parse(readFileSync(mf, 'utf8')), version: 'one', extra: 1 }));
    const mcp = JSON.parse(readFileSync(path.join(root, 'plugin/.mcp.json'), 'utf8'));
    mcp.mcpServers['svc-local'].args[1] = 'svc@latest'; // the unscoped name is someone else's package
    writeFileSync(path.join(root, 'plugin/.mcp.json'), JSON.stringify(mcp));
    const problems = (await validatePlugin(root, FULL)).problems;
    expect(problems).toContain('plugin/.claude-plugin/plugin.json: version must be a semantic version (the plugin has its own release number)');
    expect(problems).toContain('plugin/.claude-plugin/plugin.json: unknown field extra');
    expect(problems.some((p) => p.startsWith('plugin/.mcp.json: server svc-local must be') && p.includes(`"@svc-hq/svc@${JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version}"`))).toBe(true);
    expect(problems).toContain('.claude-plugin/marketplace.json: the plugin entry\'s version 1.0.0 differs from plugin.json\'s one');
  });

  it('names the plugin\'s tools as Claude Code does', () => {
    expect(PLUGIN_SERVERS).toEqual(['svc', 'svc-local']);
    expect(pluginToolName('svc', 'whoami')).toBe('mcp__plugin_svc-seller-skills_svc__whoami');
    const manifest = JSON.parse(readFileSync(path.join(ROOT, 'plugin/.claude-plugin/plugin.json'), 'utf8'));
    expect(manifest.name).toBe('svc-seller-skills');
  });
});

import { describe, expect, it } from 'vitest';
import { decide, type ToolPolicyFacts } from '../../src/domain/access/policy.js';
import { MCP_SCOPES, restrictionsSchema, type McpScope, type Restrictions } from '../../src/domain/access/grant.js';
import { TOOLS, AREAS } from '../../src/mcp/tools/index.js';
import { policyFacts } from '../../src/mcp/call.js';
import { annotationsOf, describeTool } from '../../src/mcp/server.js';

const base: ToolPolicyFacts = {
  name: 't',
  area: 'segments',
  scope: 'read',
  changesData: false,
  destructive: false,
  issuesCredentials: false,
  approvesOrPublishes: false,
  changesExposure: false,
};
const tool = (over: Partial<ToolPolicyFacts>): ToolPolicyFacts => ({ ...base, ...over });
const token = (scope: McpScope, r: Partial<Restrictions> = {}) => ({ scope, restrictions: restrictionsSchema.parse(r) });

describe('decide (the MCP scope policy)', () => {
  it('orders scopes read < write < admin', () => {
    for (const [i, need] of MCP_SCOPES.entries()) {
      for (const [j, have] of MCP_SCOPES.entries()) {
        const d = decide(token(have), tool({ scope: need, changesData: need !== 'read' }));
        expect(d.allowed).toBe(j >= i);
        if (!d.allowed) {
          expect(d.reason).toBe('scope');
          expect(d.missing).toBe(`scope:${need}`);
          expect(d.message).toContain(need);
        }
      }
    }
  });

  it('never lets a read token change data, even when a tool under-declares its scope', () => {
    const d = decide(token('read'), tool({ scope: 'read', changesData: true }));
    expect(d).toMatchObject({ allowed: false, reason: 'scope', missing: 'scope:write' });
  });

  it('read-only refuses every tool that changes data, whatever the scope', () => {
    for (const s of MCP_SCOPES) {
      expect(decide(token(s, { read_only: true }), tool({ scope: 'read' })).allowed).toBe(true);
      const d = decide(token(s, { read_only: true }), tool({ scope: 'write', changesData: true }));
      if (s === 'read') expect(d).toMatchObject({ allowed: false, reason: 'scope' });
      else expect(d).toMatchObject({ allowed: false, reason: 'read_only' });
    }
  });

  it('block-destructive refuses destructive tools only', () => {
    const t = token('admin', { block_destructive: true });
    expect(decide(t, tool({ scope: 'admin', changesData: true, destructive: true }))).toMatchObject({ allowed: false, reason: 'block_destructive' });
    expect(decide(t, tool({ scope: 'write', changesData: true })).allowed).toBe(true);
  });

  it('areas limit a token to its product areas', () => {
    const t = token('admin', { areas: ['profiles', 'leads'] });
    expect(decide(t, tool({ area: 'profiles' })).allowed).toBe(true);
    expect(decide(t, tool({ area: 'segments' }))).toMatchObject({ allowed: false, reason: 'area', missing: 'area:segments' });
  });

  it('credential issuance needs the explicit mint-time flag, even for admin', () => {
    const t = tool({ scope: 'admin', changesData: true, issuesCredentials: true });
    expect(decide(token('admin'), t)).toMatchObject({ allowed: false, reason: 'credential_issuance' });
    expect(decide(token('admin', { allow_credential_issuance: true }), t).allowed).toBe(true);
  });

  it('propose-only refuses approve and publish tools', () => {
    const t = tool({ scope: 'write', changesData: true, approvesOrPublishes: true });
    expect(decide(token('write', { propose_only: true }), t)).toMatchObject({ allowed: false, reason: 'propose_only' });
    expect(decide(token('write'), t).allowed).toBe(true);
    expect(decide(token('write', { propose_only: true }), tool({ scope: 'write', changesData: true })).allowed).toBe(true);
  });

  it('propose-only files tools that change who sees what as drafts; other tokens run them', () => {
    const t = tool({ scope: 'write', changesData: true, changesExposure: true });
    expect(decide(token('write', { propose_only: true }), t)).toEqual({ allowed: true, draft: true });
    expect(decide(token('admin', { propose_only: true }), t)).toEqual({ allowed: true, draft: true });
    expect(decide(token('write'), t)).toEqual({ allowed: true });
    // the other restrictions still come first
    expect(decide(token('write', { propose_only: true, read_only: true }), t)).toMatchObject({ allowed: false, reason: 'read_only' });
    expect(decide(token('read', { propose_only: true }), t)).toMatchObject({ allowed: false, reason: 'scope' });
    expect(decide(token('write', { propose_only: true, areas: ['leads'] }), t)).toMatchObject({ allowed: false, reason: 'area' });
  });

  it('flags every tool that changes who sees what, and no read tool', () => {
    const exposure = TOOLS.filter((t) => t.flags.changesExposure).map((t) => t.name).sort();
    expect(exposure).toEqual([
      'experiments_resume',
      'experiments_start',
      'experiments_update',
      'overrides_force_arm',
      'overrides_lift',
      'placements_create',
      'placements_delete',
      'placements_update',
      'segments_create',
      'segments_update',
      'zones_create',
      'zones_update',
    ]);
    for (const t of TOOLS.filter((x) => x.flags.changesExposure)) {
      expect(t.flags.changesData, t.name).toBe(true);
      expect(describeTool(t), t.name).toContain('filed as drafts awaiting approval');
    }
  });

  it('is pure: the same inputs give the same answer', () => {
    const t = token('write', { block_destructive: true });
    const f = tool({ scope: 'write', changesData: true, destructive: true });
    expect(decide(t, f)).toEqual(decide(t, f));
  });
});

describe('the tool registry', () => {
  it('has unique names, one area per tool, and no data-changing read tool', () => {
    expect(new Set(TOOLS.map((t) => t.name)).size).toBe(TOOLS.length);
    expect(AREAS).toEqual([
      'access',
      'accounts',
      'adplatforms',
      'analytics',
      'calls',
      'campaigns',
      'content',
      'conversions',
      'crawl',
      'events',
      'experiments',
      'funnels',
      'generation',
      'inbox',
      'leads',
      'overrides',
      'pages',
      'placements',
      'profiles',
      'recommendations',
      'segments',
      'sites',
      'stall',
      'tools',
      'triggers',
      'variants',
      'webhooks',
      'zones',
    ]);
    for (const t of TOOLS) {
      if (t.flags.changesData) expect(t.scope).not.toBe('read');
      if (t.flags.destructive) expect(t.flags.changesData).toBe(true);
    }
  });

  it('a read-only read token can call exactly the read-scope tools that change nothing', () => {
    const t = token('read', { read_only: true });
    for (const tl of TOOLS) expect(decide(t, policyFacts(tl)).allowed).toBe(!tl.flags.changesData && tl.scope === 'read');
  });

  it('derives annotations and descriptions from the flags', () => {
    for (const t of TOOLS) {
      const a = annotationsOf(t);
      expect(a.readOnlyHint).toBe(!t.flags.changesData);
      expect(a.destructiveHint).toBe(t.flags.destructive === true);
      expect(describeTool(t)).toContain(`Scope: ${t.scope}.`);
    }
  });
});

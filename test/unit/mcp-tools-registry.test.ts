import { describe, expect, it } from 'vitest';
import { describeTool } from '../../src/mcp/describe.js';
import type { Grant, Restrictions } from '../../src/domain/access/grant.js';
import { intersectAreas, isListed, parseAreaList, type ListingFilter } from '../../src/mcp/listing.js';
import { AREAS, TOOLS } from '../../src/mcp/tools/index.js';
import { relevance, words } from '../../src/mcp/tools/tools.js';

/** The server offers at least this many tools once every product area is merged. */
const MIN_TOOLS = 130;

function grant(restrictions: Partial<Restrictions> = {}): Grant {
  return {
    tokenId: 'mcpk_t',
    siteId: 'site_t',
    scope: 'admin',
    createdBy: 'usr_t',
    restrictions: { read_only: false, block_destructive: false, areas: [], allow_credential_issuance: false, propose_only: false, ...restrictions },
  };
}

const listed = (g: Grant, f: Pick<ListingFilter, 'areas' | 'readOnly'>) => TOOLS.filter((t) => isListed(t, g, f)).map((t) => t.name).sort();
const namesWhere = (pred: (t: (typeof TOOLS)[number]) => boolean) =>
  TOOLS.filter(pred)
    .map((t) => t.name)
    .sort();

describe('the tool registry', () => {
  it(`offers at least ${MIN_TOOLS} tools`, () => {
    expect(TOOLS.length).toBeGreaterThanOrEqual(MIN_TOOLS);
  });

  it('has no two tools with one name, and every name is area_verb in lower case', () => {
    const names = TOOLS.map((t) => t.name);
    expect(new Set(names).size).toBe(names.length);
    for (const n of names) expect(n).toMatch(/^[a-z][a-z0-9]*(_[a-z0-9]+)*$/);
  });

  it('names the scope in every description, exactly once and the right one, and the area once', () => {
    for (const t of TOOLS) {
      const d = describeTool(t);
      const named = [...d.matchAll(/Scope: (read|write|admin)\./g)].map((m) => m[1]);
      expect(named, t.name).toEqual([t.scope]);
      // The area is said once: by the name's first word, else by "Area: <area>.".
      if (t.name.startsWith(`${t.area}_`)) expect(d, t.name).not.toContain('Area: ');
      else expect(d, t.name).toContain(`Area: ${t.area}.`);
    }
  });

  it('has the tools of the accounts, access, analytics, sites and tools areas with the right scope and flags', () => {
    const byName = new Map(TOOLS.map((t) => [t.name, t]));
    const expected: [string, string, boolean][] = [
      ['accounts_list', 'read', false],
      ['accounts_get', 'read', false],
      ['accounts_resolve_domain', 'read', false],
      ['accounts_signals', 'read', false],
      ['accounts_hot', 'read', false],
      ['accounts_ip_ranges_load', 'admin', true],
      ['access_members_list', 'read', false],
      ['access_member_set_role', 'admin', true],
      ['access_member_remove', 'admin', true],
      ['access_report_link_mint', 'admin', true],
      ['analytics_lift', 'read', false],
      ['analytics_by_segment', 'read', false],
      ['sites_settings_get', 'read', false],
      ['sites_settings_update', 'admin', true],
      ['tools_search', 'read', false],
      ['tools_describe', 'read', false],
    ];
    for (const [name, scope, changes] of expected) {
      const t = byName.get(name);
      expect(t, name).toBeDefined();
      expect([t!.scope, t!.flags.changesData], name).toEqual([scope, changes]);
    }
    expect(byName.get('access_member_remove')!.flags.destructive).toBe(true);
    for (const n of ['access_report_link_mint', 'access_link_token_mint', 'access_member_invite', 'triggers_fire']) expect(byName.get(n)!.flags.issuesCredentials, n).toBe(true);
  });
});

describe('tools/list narrowing', () => {
  const all = namesWhere(() => true);

  it('lists everything without a filter', () => {
    expect(listed(grant(), { areas: null, readOnly: false })).toEqual(all);
  });

  it('?areas= lists exactly the tools of those areas', () => {
    for (const areas of [['accounts'], ['accounts', 'tools'], ['access', 'analytics', 'sites'], [AREAS[0]!]]) {
      expect(listed(grant(), { areas, readOnly: false }), areas.join(',')).toEqual(namesWhere((t) => areas.includes(t.area)));
    }
    expect(listed(grant(), { areas: [], readOnly: false })).toEqual([]);
  });

  it('?read_only=1 lists exactly the tools that change nothing, and so does a read-only token', () => {
    const ro = namesWhere((t) => !t.flags.changesData);
    expect(ro.length).toBeGreaterThan(0);
    expect(ro.length).toBeLessThan(all.length);
    expect(listed(grant(), { areas: null, readOnly: true })).toEqual(ro);
    expect(listed(grant({ read_only: true }), { areas: null, readOnly: false })).toEqual(ro);
  });

  it("a token limited to areas lists only those, intersected with the connection's areas", () => {
    const g = grant({ areas: ['accounts', 'profiles'] });
    expect(listed(g, { areas: null, readOnly: false })).toEqual(namesWhere((t) => t.area === 'accounts' || t.area === 'profiles'));
    expect(listed(g, { areas: ['accounts', 'tools'], readOnly: false })).toEqual(namesWhere((t) => t.area === 'accounts'));
    expect(listed(g, { areas: ['accounts'], readOnly: true })).toEqual(namesWhere((t) => t.area === 'accounts' && !t.flags.changesData));
  });

  it('parses area lists and intersects them', () => {
    expect(parseAreaList(' accounts, tools ,,accounts')).toEqual(['accounts', 'tools']);
    expect(parseAreaList(' , ')).toBeNull();
    expect(parseAreaList(undefined)).toBeNull();
    expect(intersectAreas(['a', 'b'], ['b', 'c'])).toEqual(['b']);
    expect(intersectAreas(null, ['b'])).toEqual(['b']);
    expect(intersectAreas(null, null)).toBeNull();
  });
});

describe('tools_search ranking', () => {
  it('ranks a whole word of the name above a mention in a description', () => {
    const q = words('hot accounts');
    const ranked = [...TOOLS].sort((a, b) => relevance(b, q) - relevance(a, q) || a.name.localeCompare(b.name));
    expect(ranked[0]!.name).toBe('accounts_hot');
    expect(relevance(TOOLS.find((t) => t.name === 'whoami')!, words('zzzz qqqq'))).toBe(0);
  });
});

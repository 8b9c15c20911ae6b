import { z } from 'zod';
import { AppError } from '../../errors/app-error.js';
import { credentialHash, credentialHint, newCredential } from '../../domain/access/secrets.js';
import type { McpTokenRow } from '../../store/tokens.js';
import type { Repos } from '../../store/repos.js';
import type { AccountUser } from '../../store/sites.js';
import { MCP_SCOPES, MCP_TOKEN_PREFIX, parseRestrictions, restrictionsSchema, scopeRank, type Restrictions } from '../grant.js';
import { defineTool, type ToolContext } from '../tool.js';
import { iso } from './shared.js';

const area = 'access';

const tokenView = z.object({
  id: z.string(),
  name: z.string().nullable(),
  hint: z.string().describe('The prefix and first characters of the token; never the token.'),
  scope: z.enum(MCP_SCOPES),
  restrictions: restrictionsSchema,
  created_by: z.string(),
  created_at: z.string(),
  expires_at: z.string().nullable(),
  last_used_at: z.string().nullable(),
  revoked_at: z.string().nullable(),
});

function view(r: McpTokenRow): z.input<typeof tokenView> {
  return {
    id: r.id,
    name: r.name,
    hint: r.hint,
    scope: r.scope,
    restrictions: parseRestrictions(r.restrictions),
    created_by: r.created_by,
    created_at: iso(r.created_at)!,
    expires_at: iso(r.expires_at),
    last_used_at: iso(r.last_used_at),
    revoked_at: iso(r.revoked_at),
  };
}

export const whoami = defineTool({
  name: 'whoami',
  title: 'Who am I',
  description: 'The site, scope and restrictions of the token making this call, and whether outputs carry personal data.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({}),
  output: z.object({
    token_id: z.string(),
    site_id: z.string(),
    site_name: z.string(),
    scope: z.enum(MCP_SCOPES),
    restrictions: restrictionsSchema,
    personal_data: z.boolean().describe('Whether tool outputs include plaintext email, phone and name (admin scope only).'),
  }),
  handler: async (ctx) => ({
    token_id: ctx.grant.tokenId,
    site_id: ctx.grant.siteId,
    site_name: (await ctx.store.sites.get(ctx.grant.siteId))?.name ?? '',
    scope: ctx.grant.scope,
    restrictions: ctx.grant.restrictions,
    personal_data: ctx.pii,
  }),
});

export const tokensList = defineTool({
  name: 'access_tokens_list',
  title: 'List MCP tokens',
  description: 'Every MCP token of this site with scope, restrictions, creator and times; never a token value.',
  area,
  scope: 'admin',
  flags: { changesData: false, idempotent: true },
  input: z.object({ include_revoked: z.boolean().default(false).describe('Also list revoked tokens.') }),
  output: z.object({ tokens: z.array(tokenView) }),
  handler: async (ctx, input) => ({
    tokens: (await ctx.store.tokens.list(ctx.grant.siteId)).filter((t) => input.include_revoked || t.revoked_at === null).map(view),
  }),
});

export const auditList = defineTool({
  name: 'access_audit_list',
  title: 'MCP audit log',
  description: 'The newest tools/call records of this site: token, tool, outcome (ok, error, refused, invalid), error code, duration and request id. Argument values are never recorded.',
  area,
  scope: 'admin',
  flags: { changesData: false, idempotent: true },
  input: z.object({
    token_id: z.string().min(1).max(100).optional().describe('Only calls made with this token.'),
    tool: z.string().min(1).max(100).optional().describe('Only calls of this tool.'),
    limit: z.number().int().min(1).max(1000).default(100).describe('How many, newest first (default 100).'),
  }),
  output: z.object({
    calls: z.array(
      z.object({
        at: z.string(),
        token_id: z.string(),
        tool: z.string(),
        outcome: z.enum(['ok', 'error', 'refused', 'invalid']),
        error_code: z.string().nullable(),
        duration_ms: z.number().int(),
        request_id: z.string().nullable().describe('The X-Request-Id of the HTTP request that made the call, as in the server log (null over stdio).'),
      }),
    ),
  }),
  handler: async (ctx, input) => {
    const rows = await ctx.store.audit.recent({ siteId: ctx.grant.siteId, tokenId: input.token_id, tool: input.tool, limit: input.limit });
    return {
      calls: rows.map((r) => ({
        at: iso(r.created_at)!,
        token_id: r.token_id,
        tool: r.tool,
        outcome: r.outcome,
        error_code: r.error_code,
        duration_ms: r.duration_ms,
        request_id: r.request_id ?? null,
      })),
    };
  },
});

export const tokenRevoke = defineTool({
  name: 'access_token_revoke',
  title: 'Revoke an MCP token',
  description: 'Revokes an MCP token of this site; it stops working at once.',
  area,
  scope: 'admin',
  flags: { changesData: true, destructive: true, idempotent: true },
  input: z.object({ token_id: z.string().min(1).max(100).describe('Token id (mcpk_...), as listed by access_tokens_list.') }),
  output: z.object({ revoked: z.string(), already_revoked: z.boolean() }),
  handler: async (ctx, input) => {
    const row = await ctx.store.tokens.byId(input.token_id);
    if (!row || row.site_id !== ctx.grant.siteId) throw new AppError('not_found', `no token ${input.token_id} in this site`, { field: 'token_id' });
    const changed = await ctx.store.write((tx) => tx.tokens.revoke(row.id, Date.now()));
    return { revoked: row.id, already_revoked: !changed };
  },
});

export const linkTokenMint = defineTool({
  name: 'access_link_token_mint',
  title: 'Mint a link token',
  description:
    'Mints a new MCP token for a connector URL (…/api/mcp?api_key=TOKEN), shown once. It never exceeds the calling token: its scope is at most the caller\'s, it keeps every restriction of the caller, and it cannot issue credentials itself. The URL holding it is a secret.',
  area,
  scope: 'admin',
  flags: { changesData: true, issuesCredentials: true },
  input: z.object({
    scope: z.enum(MCP_SCOPES).default('read').describe('Scope of the new token; at most the calling token\'s.'),
    read_only: z.boolean().default(true).describe('Refuse every tool that changes data (default true).'),
    name: z.string().min(1).max(200).optional().describe('What the token is for.'),
    expires_in_hours: z.number().int().min(1).max(24 * 90).default(24 * 7).describe('Lifetime in hours (default 168, at most 2160).'),
  }),
  output: z.object({
    token: z.string().describe('The plaintext token; shown only this once.'),
    id: z.string(),
    scope: z.enum(MCP_SCOPES),
    restrictions: restrictionsSchema,
    expires_at: z.string(),
    connector_path: z.string().describe('Append to the server address for clients that take a single URL; the URL is then a secret.'),
  }),
  handler: async (ctx, input) => {
    if (scopeRank(input.scope) > scopeRank(ctx.grant.scope)) {
      throw new AppError('insufficient_scope', `scope: a ${ctx.grant.scope} token cannot mint a ${input.scope} token`, { field: 'scope', missing: `scope:${input.scope}` });
    }
    const mine = ctx.grant.restrictions;
    const restrictions: Restrictions = {
      read_only: mine.read_only || input.read_only,
      block_destructive: mine.block_destructive,
      areas: [...mine.areas],
      allow_credential_issuance: false,
      propose_only: mine.propose_only,
    };
    const plaintext = newCredential(MCP_TOKEN_PREFIX);
    const expiresAt = Date.now() + input.expires_in_hours * 3_600_000;
    const row = await ctx.store.write((tx) =>
      tx.tokens.create({
        siteId: ctx.grant.siteId,
        name: input.name ?? `link token from ${ctx.grant.tokenId}`,
        hash: credentialHash(plaintext),
        hint: credentialHint(plaintext, MCP_TOKEN_PREFIX),
        scope: input.scope,
        restrictions,
        createdBy: ctx.grant.createdBy,
        expiresAt,
      }),
    );
    return {
      token: plaintext,
      id: row.id,
      scope: input.scope,
      restrictions,
      expires_at: iso(expiresAt)!,
      connector_path: `/api/mcp?api_key=${plaintext}`,
    };
  },
});

export const memberInvite = defineTool({
  name: 'access_member_invite',
  title: 'Invite an account member',
  description:
    'Adds a person to the account of this site as a member or admin and hands them their own MCP token for this site, shown once. The token never exceeds the calling token (scope at most the caller\'s, every restriction kept, read-only by default, expiring) and cannot issue credentials. Members can use tokens but never mint them.',
  area,
  scope: 'admin',
  flags: { changesData: true, issuesCredentials: true },
  input: z.object({
    email: z.email().max(320).describe('Email of the person; unique in the account.'),
    name: z.string().min(1).max(200).optional(),
    role: z.enum(['member', 'admin']).default('member'),
    scope: z.enum(MCP_SCOPES).default('read').describe('Scope of their token; at most the calling token\'s.'),
    read_only: z.boolean().default(true),
    expires_in_hours: z.number().int().min(1).max(24 * 90).default(24 * 30).describe('Lifetime of their token in hours (default 720).'),
  }),
  output: z.object({
    user_id: z.string(),
    email: z.string(),
    role: z.enum(['member', 'admin']),
    token: z.string().describe('Their plaintext token; shown only this once.'),
    token_id: z.string(),
    scope: z.enum(MCP_SCOPES),
    restrictions: restrictionsSchema,
    expires_at: z.string(),
  }),
  handler: async (ctx, input) => {
    if (scopeRank(input.scope) > scopeRank(ctx.grant.scope)) {
      throw new AppError('insufficient_scope', `scope: a ${ctx.grant.scope} token cannot hand out a ${input.scope} token`, { field: 'scope', missing: `scope:${input.scope}` });
    }
    const site = (await ctx.store.sites.get(ctx.grant.siteId))!;
    const mine = ctx.grant.restrictions;
    const restrictions: Restrictions = {
      read_only: mine.read_only || input.read_only,
      block_destructive: mine.block_destructive,
      areas: [...mine.areas],
      allow_credential_issuance: false,
      propose_only: mine.propose_only,
    };
    const plaintext = newCredential(MCP_TOKEN_PREFIX);
    const expiresAt = Date.now() + input.expires_in_hours * 3_600_000;
    const { user, row } = await ctx.store.write(async (tx) => {
      if (await tx.users.find(site.account_id, input.email)) {
        throw new AppError('conflict', 'a user with this email is already in the account', { field: 'email' });
      }
      const u = await tx.users.create({ accountId: site.account_id, email: input.email, name: input.name ?? null, role: input.role });
      const t = await tx.tokens.create({
        siteId: site.id,
        name: `invite: ${u.id}`,
        hash: credentialHash(plaintext),
        hint: credentialHint(plaintext, MCP_TOKEN_PREFIX),
        scope: input.scope,
        restrictions,
        createdBy: ctx.grant.createdBy,
        expiresAt,
      });
      return { user: u, row: t };
    });
    return {
      user_id: user.id,
      email: user.email,
      role: input.role,
      token: plaintext,
      token_id: row.id,
      scope: input.scope,
      restrictions,
      expires_at: iso(expiresAt)!,
    };
  },
});

const ROLES = ['owner', 'admin', 'member'] as const;
const userRef = z.string().min(1).max(320).describe('The user: their id (usr_...) or email.');

const memberView = z.object({
  id: z.string(),
  role: z.enum(ROLES),
  email: z.string().nullable().describe('Plaintext email: admin scope only (null otherwise).'),
  name: z.string().nullable().describe('Name: admin scope only (null otherwise).'),
  live_tokens: z.number().int().describe('Unrevoked, unexpired MCP tokens they minted or were invited with.'),
  created_at: z.string(),
});

async function accountOf(ctx: ToolContext): Promise<string> {
  return (await ctx.store.sites.get(ctx.grant.siteId))!.account_id;
}

async function requireMember(tx: Repos, accountId: string, ref: string): Promise<AccountUser> {
  const u = await tx.users.find(accountId, ref);
  if (!u) throw new AppError('not_found', 'no such user in the account of this site', { field: 'user' });
  return u;
}

export const membersList = defineTool({
  name: 'access_members_list',
  title: 'List account members',
  description: 'The people of the account this site belongs to, with their role (owner, admin, member) and how many live MCP tokens each holds. Email and name only under the admin scope.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ role: z.enum(ROLES).optional().describe('Only members with this role.') }),
  output: z.object({ members: z.array(memberView) }),
  handler: async (ctx, input) => {
    const now = Date.now();
    const rows = (await ctx.store.users.list(await accountOf(ctx))).filter((u) => input.role === undefined || u.role === input.role);
    const members = [];
    for (const u of rows) {
      members.push({
        id: u.id,
        role: u.role,
        email: ctx.pii ? u.email : null,
        name: ctx.pii ? u.name : null,
        live_tokens: await ctx.store.users.liveTokenCount(u.id, now),
        created_at: iso(u.created_at)!,
      });
    }
    return { members };
  },
});

export const memberSetRole = defineTool({
  name: 'access_member_set_role',
  title: "Change a member's role",
  description:
    "Sets an account member's role (owner, admin or member). Only an owner may make or unmake owners, and the last owner can never be demoted. A member's existing tokens keep their scope; their role decides whether they may mint tokens.",
  area,
  scope: 'admin',
  flags: { changesData: true, idempotent: true },
  input: z.object({ user: userRef, role: z.enum(ROLES).describe('The new role.') }),
  output: z.object({ id: z.string(), previous_role: z.enum(ROLES), role: z.enum(ROLES) }),
  handler: async (ctx, input) => {
    const accountId = await accountOf(ctx);
    return ctx.store.write(async (tx) => {
      const u = await requireMember(tx, accountId, input.user);
      if (u.role === input.role) return { id: u.id, previous_role: u.role, role: u.role };
      if (u.role === 'owner' || input.role === 'owner') {
        const caller = await tx.users.byId(ctx.grant.createdBy);
        if (caller?.role !== 'owner') throw new AppError('insufficient_scope', 'only an owner may make or unmake owners', { missing: 'role:owner' });
      }
      if (u.role === 'owner' && (await tx.users.ownerCount(accountId)) <= 1) {
        throw new AppError('conflict', 'this is the last owner of the account; make someone else owner first', { field: 'user' });
      }
      await tx.users.setRole(u.id, input.role);
      return { id: u.id, previous_role: u.role, role: input.role };
    });
  },
});

export const memberRemove = defineTool({
  name: 'access_member_remove',
  title: 'Remove an account member',
  description:
    'Removes a person from the account and revokes every MCP token they minted or were invited with (they stop working at once). Never the last owner; only an owner may remove an owner; a token cannot remove the user it acts for.',
  area,
  scope: 'admin',
  flags: { changesData: true, destructive: true },
  input: z.object({ user: userRef }),
  output: z.object({ removed: z.string(), role: z.enum(ROLES), tokens_revoked: z.number().int() }),
  handler: async (ctx, input) => {
    const accountId = await accountOf(ctx);
    return ctx.store.write(async (tx) => {
      const u = await requireMember(tx, accountId, input.user);
      if (u.id === ctx.grant.createdBy) throw new AppError('conflict', 'this token acts for that user; remove them with another owner\'s token', { field: 'user' });
      if (u.role === 'owner') {
        const caller = await tx.users.byId(ctx.grant.createdBy);
        if (caller?.role !== 'owner') throw new AppError('insufficient_scope', 'only an owner may remove an owner', { missing: 'role:owner' });
        if ((await tx.users.ownerCount(accountId)) <= 1) throw new AppError('conflict', 'this is the last owner of the account', { field: 'user' });
      }
      const revoked = await tx.users.remove(u.id, ctx.grant.createdBy, Date.now());
      return { removed: u.id, role: u.role, tokens_revoked: revoked };
    });
  },
});

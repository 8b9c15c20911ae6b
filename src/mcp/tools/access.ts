import { z } from 'zod';
import { AccessService } from '../../domain/access/service.js';
import {
  auditView,
  invitedMemberView,
  memberRemovedView,
  memberView,
  mintedTokenView,
  roleChangeView,
  ROLES,
  tokenView,
  whoamiView,
} from '../../domain/access/views.js';
import { MCP_SCOPES } from '../grant.js';
import { defineTool, type ToolContext } from '../tool.js';

const area = 'access';

const svc = (ctx: ToolContext) => new AccessService(ctx.store);

export const whoami = defineTool({
  name: 'whoami',
  title: 'Who am I',
  description: 'The site, scope and restrictions of the token making this call, and whether outputs carry personal data.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({}),
  output: whoamiView,
  handler: async (ctx) => ({
    token_id: ctx.grant.tokenId,
    site_id: ctx.grant.siteId,
    site_name: await svc(ctx).siteName(ctx.grant.siteId),
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
  handler: async (ctx, input) => ({ tokens: await svc(ctx).tokens(ctx.grant.siteId, input.include_revoked) }),
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
  output: auditView,
  handler: (ctx, input) => svc(ctx).audit(ctx.grant.siteId, { tokenId: input.token_id, tool: input.tool, limit: input.limit }),
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
  handler: (ctx, input) => svc(ctx).revokeToken(ctx.grant.siteId, input.token_id),
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
  output: mintedTokenView,
  handler: (ctx, input) => svc(ctx).mintLinkToken(ctx.grant, input),
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
  output: invitedMemberView,
  handler: (ctx, input) => svc(ctx).inviteMember(ctx.grant, input),
});

const userRef = z.string().min(1).max(320).describe('The user: their id (usr_...) or email.');

export const membersList = defineTool({
  name: 'access_members_list',
  title: 'List account members',
  description: 'The people of the account this site belongs to, with their role (owner, admin, member) and how many live MCP tokens each holds. Email and name only under the admin scope.',
  area,
  scope: 'read',
  flags: { changesData: false, idempotent: true },
  input: z.object({ role: z.enum(ROLES).optional().describe('Only members with this role.') }),
  output: z.object({ members: z.array(memberView) }),
  handler: async (ctx, input) => ({ members: await svc(ctx).members(ctx.grant.siteId, input.role, ctx.pii) }),
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
  output: roleChangeView,
  handler: (ctx, input) => svc(ctx).setMemberRole(ctx.grant, input.user, input.role),
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
  output: memberRemovedView,
  handler: (ctx, input) => svc(ctx).removeMember(ctx.grant, input.user),
});

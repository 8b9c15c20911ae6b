import { z } from 'zod';
import type { ApiKeyRow } from '../../store/keys.js';
import type { AccountUser } from '../../store/sites.js';
import type { McpTokenRow } from '../../store/tokens.js';
import { MCP_SCOPES, parseRestrictions, restrictionsSchema } from './grant.js';

/** The views of access: MCP tokens, the audit log, account members, REST API keys and minted credentials. */

/** ISO 8601 of a millisecond timestamp; null stays null. */
const iso = (t: number | null): string | null => (t === null ? null : new Date(t).toISOString());

export const tokenView = z.object({
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

export function tokenOut(r: McpTokenRow): z.input<typeof tokenView> {
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

/** The calling token (whoami). */
export const whoamiView = z.object({
  token_id: z.string(),
  site_id: z.string(),
  site_name: z.string(),
  scope: z.enum(MCP_SCOPES),
  restrictions: restrictionsSchema,
  personal_data: z.boolean().describe('Whether tool outputs include plaintext email, phone and name (admin scope only).'),
});

/** The newest tools/call records (access_audit_list). */
export const auditView = z.object({
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
});

/** A minted link token, shown once (access_link_token_mint). */
export const mintedTokenView = z.object({
  token: z.string().describe('The plaintext token; shown only this once.'),
  id: z.string(),
  scope: z.enum(MCP_SCOPES),
  restrictions: restrictionsSchema,
  expires_at: z.string(),
  connector_path: z.string().describe('Append to the server address for clients that take a single URL; the URL is then a secret.'),
});

/** An invited member with their token, shown once (access_member_invite). */
export const invitedMemberView = z.object({
  user_id: z.string(),
  email: z.string(),
  role: z.enum(['member', 'admin']),
  token: z.string().describe('Their plaintext token; shown only this once.'),
  token_id: z.string(),
  scope: z.enum(MCP_SCOPES),
  restrictions: restrictionsSchema,
  expires_at: z.string(),
});

export const ROLES = ['owner', 'admin', 'member'] as const;

export const memberView = z.object({
  id: z.string(),
  role: z.enum(ROLES),
  email: z.string().nullable().describe('Plaintext email: admin scope only (null otherwise).'),
  name: z.string().nullable().describe('Name: admin scope only (null otherwise).'),
  live_tokens: z.number().int().describe('Unrevoked, unexpired MCP tokens they minted or were invited with.'),
  created_at: z.string(),
});

/** A role change (access_member_set_role). */
export const roleChangeView = z.object({ id: z.string(), previous_role: z.enum(ROLES), role: z.enum(ROLES) });

/** A removed member (access_member_remove). */
export const memberRemovedView = z.object({ removed: z.string(), role: z.enum(ROLES), tokens_revoked: z.number().int() });

/** An MCP token of any site as `svc token list` shows it (with the email of its creator); never the token. */
export const siteTokenView = z.object({
  id: z.string(),
  site_id: z.string(),
  name: z.string().nullable(),
  hint: z.string(),
  scope: z.enum(MCP_SCOPES),
  restrictions: restrictionsSchema,
  created_by: z.string(),
  created_by_email: z.string().nullable(),
  created_at: z.string(),
  expires_at: z.string().nullable(),
  last_used_at: z.string().nullable(),
  revoked_at: z.string().nullable(),
});
export type SiteTokenView = z.infer<typeof siteTokenView>;

export function siteTokenOut(r: McpTokenRow, createdByEmail: string | null): SiteTokenView {
  return {
    id: r.id,
    site_id: r.site_id,
    name: r.name,
    hint: r.hint,
    scope: r.scope,
    restrictions: parseRestrictions(r.restrictions),
    created_by: r.created_by,
    created_by_email: createdByEmail,
    created_at: iso(r.created_at)!,
    expires_at: iso(r.expires_at),
    last_used_at: iso(r.last_used_at),
    revoked_at: iso(r.revoked_at),
  };
}

/** An MCP token minted for a user of the account (svc token mint); the plaintext is shown only this once. */
export const userMintedTokenView = z.object({
  token: z.string(),
  id: z.string(),
  scope: z.enum(MCP_SCOPES),
  restrictions: restrictionsSchema,
  expires_at: z.string().nullable(),
});
export type UserMintedTokenView = z.infer<typeof userMintedTokenView>;

/** A user of an account as `svc user add` shows it. */
export const accountUserView = z.object({ id: z.string(), account_id: z.string(), email: z.string(), role: z.enum(ROLES) });
export type AccountUserView = z.input<typeof accountUserView>;

export function accountUserOut(u: AccountUser): AccountUserView {
  return { id: u.id, account_id: u.account_id, email: u.email, role: u.role };
}

/** A user of an account as `svc user list` shows it (email and name included). */
export const accountUserListView = z.object({
  id: z.string(),
  account_id: z.string(),
  email: z.string(),
  name: z.string().nullable(),
  role: z.enum(ROLES),
  created_at: z.string(),
});
export type AccountUserListView = z.input<typeof accountUserListView>;

/** A REST API key as it is listed: never the plaintext. */
export const apiKeyView = z.object({
  id: z.string(),
  site_id: z.string(),
  name: z.string().nullable(),
  hint: z.string(),
  scopes: z.array(z.string()),
  created_at: z.string(),
  last_used_at: z.string().nullable(),
  revoked_at: z.string().nullable(),
});
export type ApiKeyView = z.input<typeof apiKeyView>;

export function apiKeyOut(r: ApiKeyRow): ApiKeyView {
  return {
    id: r.id,
    site_id: r.site_id,
    name: r.name,
    hint: r.hint,
    scopes: JSON.parse(r.scopes) as string[],
    created_at: iso(r.created_at)!,
    last_used_at: iso(r.last_used_at),
    revoked_at: iso(r.revoked_at),
  };
}

/** A freshly minted API key: the plaintext is shown only this once. */
export const mintedApiKeyView = z.object({ key: z.string(), id: z.string(), scopes: z.array(z.string()) });
export type MintedApiKeyView = z.input<typeof mintedApiKeyView>;


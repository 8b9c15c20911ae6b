import { z } from 'zod';

/** MCP token scopes, weakest first: read < write < admin. */
export const MCP_SCOPES = ['read', 'write', 'admin'] as const;
export type McpScope = (typeof MCP_SCOPES)[number];

export const MCP_TOKEN_PREFIX = 'mcpt_';

export function isMcpScope(s: string): s is McpScope {
  return (MCP_SCOPES as readonly string[]).includes(s);
}

/** Rank of a scope: a token may call a tool when its rank is at least the tool's. */
export function scopeRank(s: McpScope): number {
  return MCP_SCOPES.indexOf(s);
}

/** Mint-time restrictions of a token; they only ever take permissions away (except credential issuance, which they grant). */
export const restrictionsSchema = z.object({
  read_only: z.boolean().default(false).describe('Refuses every tool that changes data, whatever the scope.'),
  block_destructive: z.boolean().default(false).describe('Refuses delete, merge, erase and revoke tools.'),
  areas: z.array(z.string()).default([]).describe('When not empty, only tools of these product areas.'),
  allow_credential_issuance: z.boolean().default(false).describe('Allows tools that hand out access (link tokens).'),
  propose_only: z.boolean().default(false).describe('Refuses every approve and publish tool.'),
});
export type Restrictions = z.infer<typeof restrictionsSchema>;

/** What an authenticated MCP request may do: the token's site, scope and restrictions. */
export interface Grant {
  tokenId: string;
  siteId: string;
  scope: McpScope;
  restrictions: Restrictions;
  createdBy: string;
}

/** Parses the stored restrictions JSON of a token row. */
export function parseRestrictions(json: string): Restrictions {
  return restrictionsSchema.parse(JSON.parse(json));
}

/**
 * What a signed report link may do: the read scope with every restriction of
 * the token that minted it, read-only, and never credential issuance. Its
 * report is a read tool's result, so it never shows more than the minter could
 * read nor any personal data (that needs the admin scope).
 */
export function reportGrant(minter: Grant): Grant {
  return {
    ...minter,
    scope: 'read',
    restrictions: { ...minter.restrictions, areas: [...minter.restrictions.areas], read_only: true, allow_credential_issuance: false },
  };
}

/** The grant of an MCP token (scopes, restrictions); it lives with the access rules in domain/access/grant.ts. */
export {
  MCP_SCOPES,
  MCP_TOKEN_PREFIX,
  isMcpScope,
  parseRestrictions,
  reportGrant,
  restrictionsSchema,
  scopeRank,
  type Grant,
  type McpScope,
  type Restrictions,
} from '../domain/access/grant.js';

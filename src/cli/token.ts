import type { Command } from 'commander';
import { SUMMARIES } from './summaries.js';
import { AccessService } from '../domain/access/service.js';
import { isMcpScope, MCP_SCOPES, type Restrictions } from '../domain/access/grant.js';
import { print, table, usageError, withData, withStore } from './common.js';

interface MintOpts {
  site: string;
  scope: string;
  readOnly?: boolean;
  blockDestructive?: boolean;
  areas?: string;
  allowCredentialIssuance?: boolean;
  proposeOnly?: boolean;
  name?: string;
  expires?: string;
  as?: string;
  json?: boolean;
  data?: string;
}

export function registerToken(program: Command): void {
  const token = program.command('token').description(SUMMARIES.token);
  withData(
    token
      .command('mint')
      .description('Mint an MCP token for a site; prints the plaintext once. Only owners and admins may mint.')
      .requiredOption('--site <id>', 'site')
      .requiredOption('--scope <scope>', `one of ${MCP_SCOPES.join(', ')}`)
      .option('--read-only', 'refuse every tool that changes data')
      .option('--block-destructive', 'refuse delete, merge, erase and revoke tools')
      .option('--areas <list>', 'comma-separated product areas the token is limited to')
      .option('--allow-credential-issuance', 'allow tools that hand out access (link tokens, report links, member invites, live trigger fires)')
      .option('--propose-only', 'refuse every approve and publish tool')
      .option('--name <name>', 'what the token is for')
      .option('--expires <iso>', 'expiry, ISO 8601 date-time in the future')
      .option('--as <user>', 'act as this user of the account (id or email) instead of the local owner')
      .option('--json', 'print JSON'),
  ).action(async (opts: MintOpts) => {
    if (!isMcpScope(opts.scope)) throw usageError(`--scope: ${JSON.stringify(opts.scope)} is not one of ${MCP_SCOPES.join(', ')}`);
    const scope = opts.scope;
    let expiresAt: number | null = null;
    if (opts.expires !== undefined) {
      expiresAt = Date.parse(opts.expires);
      if (Number.isNaN(expiresAt) || !/^\d{4}-\d{2}-\d{2}T/.test(opts.expires)) throw usageError(`--expires: ${JSON.stringify(opts.expires)} is not an ISO 8601 date-time`);
      if (expiresAt <= Date.now()) throw usageError('--expires must be in the future');
    }
    let areas: string[] = [];
    if (opts.areas !== undefined) {
      const { AREAS } = await import('../mcp/tools/index.js');
      areas = [...new Set(opts.areas.split(',').map((a) => a.trim()).filter(Boolean))];
      if (areas.length === 0) throw usageError('--areas: name at least one area');
      const unknown = areas.filter((a) => !AREAS.includes(a));
      if (unknown.length) throw usageError(`--areas: unknown area ${unknown.join(', ')}; known: ${AREAS.join(', ')}`);
    }
    const restrictions: Restrictions = {
      read_only: opts.readOnly === true,
      block_destructive: opts.blockDestructive === true,
      areas,
      allow_credential_issuance: opts.allowCredentialIssuance === true,
      propose_only: opts.proposeOnly === true,
    };
    const out = await withStore(opts, (s) =>
      new AccessService(s).mintUserToken({ siteId: opts.site, as: opts.as, scope, restrictions, name: opts.name ?? null, expiresAt }),
    );
    print(opts.json, out, () => out.token);
    if (!opts.json) process.stderr.write(`svc: token ${out.id} minted; the plaintext above is shown only once\n`);
  });

  withData(token.command('list').description('List MCP tokens (never the token)').option('--site <id>', 'only this site').option('--json', 'print JSON')).action(
    async (opts: { site?: string; json?: boolean; data?: string }) => {
      const out = await withStore(opts, (s) => new AccessService(s).allTokens(opts.site));
      print(opts.json, out, () =>
        table(
          out.map((t) => ({ ...t, restrictions: describeRestrictions(t.restrictions), created_by: t.created_by_email ?? t.created_by })),
          ['id', 'site_id', 'name', 'hint', 'scope', 'restrictions', 'created_by', 'created_at', 'last_used_at', 'expires_at', 'revoked_at'],
        ),
      );
    },
  );

  withData(token.command('revoke').description('Revoke an MCP token; it stops working at once').argument('<id>', 'token id').option('--json', 'print JSON')).action(
    async (id: string, opts: { json?: boolean; data?: string }) => {
      const out = await withStore(opts, (s) => new AccessService(s).revokeTokenById(id));
      print(opts.json, out, () => `revoked ${out.revoked}`);
    },
  );
}

function describeRestrictions(r: Restrictions): string {
  const parts: string[] = [];
  if (r.read_only) parts.push('read-only');
  if (r.block_destructive) parts.push('block-destructive');
  if (r.areas.length) parts.push(`areas=${r.areas.join('+')}`);
  if (r.allow_credential_issuance) parts.push('credential-issuance');
  if (r.propose_only) parts.push('propose-only');
  return parts.join(',') || '-';
}

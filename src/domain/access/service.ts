import type { z } from 'zod';
import { AppError } from '../../errors/app-error.js';
import type { Repos } from '../../store/repos.js';
import type { Store } from '../../store/store.js';
import type { AccountUser } from '../../store/sites.js';
import { MCP_TOKEN_PREFIX, scopeRank, type Grant, type McpScope, type Restrictions } from './grant.js';
import { credentialHash, credentialHint, newCredential } from './secrets.js';
import {
  accountUserOut,
  siteTokenOut,
  tokenOut,
  type AccountUserListView,
  type AccountUserView,
  type SiteTokenView,
  type UserMintedTokenView,
  type auditView, type invitedMemberView, type memberRemovedView, type memberView, type mintedTokenView, type roleChangeView, type tokenView, type ROLES } from './views.js';

type Role = (typeof ROLES)[number];

const iso = (t: number): string => new Date(t).toISOString();

/** The restrictions of a token handed out by `grant`'s token: never more than the caller's, never issuing credentials. */
function handedOut(grant: Grant, readOnly: boolean): Restrictions {
  const mine = grant.restrictions;
  return {
    read_only: mine.read_only || readOnly,
    block_destructive: mine.block_destructive,
    areas: [...mine.areas],
    allow_credential_issuance: false,
    propose_only: mine.propose_only,
  };
}

/** The token row of a freshly generated MCP credential: its hash and hint, never the plaintext. */
function createMcpToken(
  tx: Repos,
  plaintext: string,
  t: { siteId: string; name: string | null; scope: McpScope; restrictions: Restrictions; createdBy: string; expiresAt: number | null },
): ReturnType<Repos['tokens']['create']> {
  return tx.tokens.create({ ...t, hash: credentialHash(plaintext), hint: credentialHint(plaintext, MCP_TOKEN_PREFIX) });
}

async function requireMember(tx: Repos, accountId: string, ref: string): Promise<AccountUser> {
  const u = await tx.users.find(accountId, ref);
  if (!u) throw new AppError('not_found', 'no such user in the account of this site', { field: 'user' });
  return u;
}

/**
 * The access use cases of one store, returning views: the site's MCP tokens
 * and audit log, link tokens, and the people of the site's account. `grant`
 * is the calling token's (what it hands out never exceeds it).
 */
export class AccessService {
  constructor(private readonly store: Store) {}

  private async accountOf(siteId: string): Promise<string> {
    return (await this.store.sites.get(siteId))!.account_id;
  }

  async siteName(siteId: string): Promise<string> {
    return (await this.store.sites.get(siteId))?.name ?? '';
  }

  async tokens(siteId: string, includeRevoked: boolean): Promise<z.input<typeof tokenView>[]> {
    return (await this.store.tokens.list(siteId)).filter((t) => includeRevoked || t.revoked_at === null).map(tokenOut);
  }

  async audit(siteId: string, f: { tokenId?: string | undefined; tool?: string | undefined; limit: number }): Promise<z.input<typeof auditView>> {
    const rows = await this.store.audit.recent({ siteId, tokenId: f.tokenId, tool: f.tool, limit: f.limit });
    return {
      calls: rows.map((r) => ({
        at: iso(r.created_at),
        token_id: r.token_id,
        tool: r.tool,
        outcome: r.outcome,
        error_code: r.error_code,
        duration_ms: r.duration_ms,
        request_id: r.request_id ?? null,
      })),
    };
  }

  /** Revokes a token of the site; it stops working at once. */
  async revokeToken(siteId: string, tokenId: string): Promise<{ revoked: string; already_revoked: boolean }> {
    const row = await this.store.tokens.byId(tokenId);
    if (!row || row.site_id !== siteId) throw new AppError('not_found', `no token ${tokenId} in this site`, { field: 'token_id' });
    const changed = await this.store.write((tx) => tx.tokens.revoke(row.id, Date.now()));
    return { revoked: row.id, already_revoked: !changed };
  }

  /** Mints a link token (shown once) that never exceeds the calling token. */
  async mintLinkToken(
    grant: Grant,
    input: { scope: McpScope; read_only: boolean; name?: string | undefined; expires_in_hours: number },
  ): Promise<z.input<typeof mintedTokenView>> {
    if (scopeRank(input.scope) > scopeRank(grant.scope)) {
      throw new AppError('insufficient_scope', `scope: a ${grant.scope} token cannot mint a ${input.scope} token`, { field: 'scope', missing: `scope:${input.scope}` });
    }
    const restrictions = handedOut(grant, input.read_only);
    const plaintext = newCredential(MCP_TOKEN_PREFIX);
    const expiresAt = Date.now() + input.expires_in_hours * 3_600_000;
    const row = await this.store.write((tx) =>
      createMcpToken(tx, plaintext, {
        siteId: grant.siteId,
        name: input.name ?? `link token from ${grant.tokenId}`,
        scope: input.scope,
        restrictions,
        createdBy: grant.createdBy,
        expiresAt,
      }),
    );
    return { token: plaintext, id: row.id, scope: input.scope, restrictions, expires_at: iso(expiresAt), connector_path: `/api/mcp?api_key=${plaintext}` };
  }

  /** Adds a person to the site's account and hands them their own token (shown once), never exceeding the calling token. */
  async inviteMember(
    grant: Grant,
    input: { email: string; name?: string | undefined; role: 'member' | 'admin'; scope: McpScope; read_only: boolean; expires_in_hours: number },
  ): Promise<z.input<typeof invitedMemberView>> {
    if (scopeRank(input.scope) > scopeRank(grant.scope)) {
      throw new AppError('insufficient_scope', `scope: a ${grant.scope} token cannot hand out a ${input.scope} token`, { field: 'scope', missing: `scope:${input.scope}` });
    }
    const site = (await this.store.sites.get(grant.siteId))!;
    const restrictions = handedOut(grant, input.read_only);
    const plaintext = newCredential(MCP_TOKEN_PREFIX);
    const expiresAt = Date.now() + input.expires_in_hours * 3_600_000;
    const { user, row } = await this.store.write(async (tx) => {
      if (await tx.users.find(site.account_id, input.email)) {
        throw new AppError('conflict', 'a user with this email is already in the account', { field: 'email' });
      }
      const u = await tx.users.create({ accountId: site.account_id, email: input.email, name: input.name ?? null, role: input.role });
      const t = await createMcpToken(tx, plaintext, {
        siteId: site.id,
        name: `invite: ${u.id}`,
        scope: input.scope,
        restrictions,
        createdBy: grant.createdBy,
        expiresAt,
      });
      return { user: u, row: t };
    });
    return { user_id: user.id, email: user.email, role: input.role, token: plaintext, token_id: row.id, scope: input.scope, restrictions, expires_at: iso(expiresAt) };
  }

  /** The people of the site's account; `pii` (admin scope) shows their email and name. */
  async members(siteId: string, role: Role | undefined, pii: boolean): Promise<z.input<typeof memberView>[]> {
    const now = Date.now();
    const rows = (await this.store.users.list(await this.accountOf(siteId))).filter((u) => role === undefined || u.role === role);
    const members = [];
    for (const u of rows) {
      members.push({
        id: u.id,
        role: u.role,
        email: pii ? u.email : null,
        name: pii ? u.name : null,
        live_tokens: await this.store.users.liveTokenCount(u.id, now),
        created_at: iso(u.created_at),
      });
    }
    return members;
  }

  /** Sets a member's role: only an owner makes or unmakes owners, and the last owner is never demoted. */
  async setMemberRole(grant: Grant, ref: string, role: Role): Promise<z.input<typeof roleChangeView>> {
    const accountId = await this.accountOf(grant.siteId);
    return this.store.write(async (tx) => {
      const u = await requireMember(tx, accountId, ref);
      if (u.role === role) return { id: u.id, previous_role: u.role, role: u.role };
      if (u.role === 'owner' || role === 'owner') {
        const caller = await tx.users.byId(grant.createdBy);
        if (caller?.role !== 'owner') throw new AppError('insufficient_scope', 'only an owner may make or unmake owners', { missing: 'role:owner' });
      }
      if (u.role === 'owner' && (await tx.users.ownerCount(accountId)) <= 1) {
        throw new AppError('conflict', 'this is the last owner of the account; make someone else owner first', { field: 'user' });
      }
      await tx.users.setRole(u.id, role);
      return { id: u.id, previous_role: u.role, role };
    });
  }

  /** Removes a member and revokes every token they minted or were invited with. */
  async removeMember(grant: Grant, ref: string): Promise<z.input<typeof memberRemovedView>> {
    const accountId = await this.accountOf(grant.siteId);
    return this.store.write(async (tx) => {
      const u = await requireMember(tx, accountId, ref);
      if (u.id === grant.createdBy) throw new AppError('conflict', 'this token acts for that user; remove them with another owner\'s token', { field: 'user' });
      if (u.role === 'owner') {
        const caller = await tx.users.byId(grant.createdBy);
        if (caller?.role !== 'owner') throw new AppError('insufficient_scope', 'only an owner may remove an owner', { missing: 'role:owner' });
        if ((await tx.users.ownerCount(accountId)) <= 1) throw new AppError('conflict', 'this is the last owner of the account', { field: 'user' });
      }
      const revoked = await tx.users.remove(u.id, grant.createdBy, Date.now());
      return { removed: u.id, role: u.role, tokens_revoked: revoked };
    });
  }

  // ---- across sites, acting as the local owner (svc token, svc user) ---------------------------

  /**
   * Mints an MCP token of a site that must exist for a user of its account
   * (`as`: id or email; the local owner when omitted) who must be an owner or
   * an admin; the plaintext is shown only this once.
   */
  async mintUserToken(input: {
    siteId: string;
    as?: string | undefined;
    scope: McpScope;
    restrictions: Restrictions;
    name: string | null;
    expiresAt: number | null;
  }): Promise<UserMintedTokenView> {
    const plaintext = newCredential(MCP_TOKEN_PREFIX);
    const row = await this.store.write(async (tx) => {
      const site = await tx.sites.get(input.siteId);
      if (!site) throw new AppError('not_found', `no site ${input.siteId}`);
      const owner = await tx.sites.localOwner();
      const user = input.as === undefined ? owner : await tx.users.find(site.account_id, input.as);
      if (!user || user.account_id !== site.account_id) throw new AppError('not_found', `no user ${input.as ?? ''} in the account of site ${site.id}`);
      if (user.role !== 'owner' && user.role !== 'admin') {
        throw new AppError('insufficient_scope', `${user.email} is a ${user.role}; only owners and admins may mint MCP tokens`);
      }
      return createMcpToken(tx, plaintext, {
        siteId: site.id,
        name: input.name,
        scope: input.scope,
        restrictions: input.restrictions,
        createdBy: user.id,
        expiresAt: input.expiresAt,
      });
    });
    return { token: plaintext, id: row.id, scope: input.scope, restrictions: input.restrictions, expires_at: input.expiresAt === null ? null : iso(input.expiresAt) };
  }

  /** Every MCP token, or those of one site, with the email of the user who minted it. */
  async allTokens(siteId?: string): Promise<SiteTokenView[]> {
    const out = [];
    for (const r of await this.store.tokens.list(siteId)) out.push(siteTokenOut(r, (await this.store.users.byId(r.created_by))?.email ?? null));
    return out;
  }

  /** Revokes a token of any site: not_found if there is none, conflict if it is already revoked. */
  async revokeTokenById(id: string): Promise<{ revoked: string }> {
    await this.store.write(async (tx) => {
      if (!(await tx.tokens.byId(id))) throw new AppError('not_found', `no token ${id}`);
      if (!(await tx.tokens.revoke(id, Date.now()))) throw new AppError('conflict', `token ${id} is already revoked`);
    });
    return { revoked: id };
  }

  /** Adds a user (email already normalized) to the account of a site that must exist; conflict if the email is taken. */
  async addUser(input: { siteId: string; email: string; name: string | null; role: 'admin' | 'member' }): Promise<AccountUserView> {
    const user = await this.store.write(async (tx) => {
      const site = await tx.sites.get(input.siteId);
      if (!site) throw new AppError('not_found', `no site ${input.siteId}`);
      if (await tx.users.find(site.account_id, input.email)) throw new AppError('conflict', `${input.email} is already a user of this account`);
      return tx.users.create({ accountId: site.account_id, email: input.email, name: input.name, role: input.role });
    });
    return accountUserOut(user);
  }

  /** The users of the account of a site that must exist, with their email and name. */
  async accountUsers(siteId: string): Promise<AccountUserListView[]> {
    const site = await this.store.sites.get(siteId);
    if (!site) throw new AppError('not_found', `no site ${siteId}`);
    return (await this.store.users.list(site.account_id)).map((u) => ({
      id: u.id,
      account_id: u.account_id,
      email: u.email,
      name: u.name,
      role: u.role,
      created_at: iso(u.created_at),
    }));
  }
}

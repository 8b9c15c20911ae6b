import type { Sql } from './sql.js';
import type { AccountUser } from './sites.js';
import { newId } from './ids.js';

type UserListRow = AccountUser & { name: string | null; created_at: number };

/** Users of accounts (owner, admin, member). */
export class UsersRepo {
  constructor(private readonly x: Sql) {}

  /** A user of `accountId` named by id or (lower-cased) email. */
  find(accountId: string, idOrEmail: string): Promise<AccountUser | undefined> {
    return this.x.get<AccountUser>(
      'SELECT id, account_id, email, role FROM users WHERE account_id = ? AND (id = ? OR email = ?) LIMIT 1',
      [accountId, idOrEmail, idOrEmail.trim().toLowerCase()],
    );
  }

  list(accountId: string): Promise<UserListRow[]> {
    return this.x.all<UserListRow>(
      'SELECT id, account_id, email, name, role, created_at FROM users WHERE account_id = ? ORDER BY created_at, id',
      [accountId],
    );
  }

  byId(id: string): Promise<AccountUser | undefined> {
    return this.x.get<AccountUser>('SELECT id, account_id, email, role FROM users WHERE id = ?', [id]);
  }

  /** Adds a user to an account; the email is stored lower-cased and is unique per account. */
  async create(u: { accountId: string; email: string; name: string | null; role: 'admin' | 'member' }): Promise<AccountUser> {
    const id = newId('usr');
    await this.x.run('INSERT INTO users (id, account_id, email, name, role, created_at) VALUES (?, ?, ?, ?, ?, ?)', [
      id,
      u.accountId,
      u.email.trim().toLowerCase(),
      u.name,
      u.role,
      Date.now(),
    ]);
    return (await this.byId(id))!;
  }

  /** How many owners the account has. */
  async ownerCount(accountId: string): Promise<number> {
    const r = await this.x.get<{ n: number }>("SELECT count(*) AS n FROM users WHERE account_id = ? AND role = 'owner'", [accountId]);
    return Number(r?.n ?? 0);
  }

  /** Changes a user's role. Writes: call inside a write operation. */
  async setRole(id: string, role: 'owner' | 'admin' | 'member'): Promise<void> {
    await this.x.run('UPDATE users SET role = ? WHERE id = ?', [role, id]);
  }

  /** Tokens that are still live and belong to a user: minted by them, or handed to them by an invite. */
  async liveTokenCount(id: string, now: number): Promise<number> {
    const r = await this.x.get<{ n: number }>(
      'SELECT count(*) AS n FROM mcp_tokens WHERE (created_by = ? OR name = ?) AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)',
      [id, `invite: ${id}`, now],
    );
    return Number(r?.n ?? 0);
  }

  /**
   * Removes a user: revokes every token they minted or were invited with,
   * hands the (revoked) tokens' creator reference to `heir` (the token rows
   * must name an existing user), then deletes the user. Returns the tokens
   * revoked. Writes: call inside a write operation.
   */
  async remove(id: string, heir: string, now: number): Promise<number> {
    const revoked = (
      await this.x.run('UPDATE mcp_tokens SET revoked_at = ? WHERE (created_by = ? OR name = ?) AND revoked_at IS NULL', [now, id, `invite: ${id}`])
    ).changes;
    await this.x.run('UPDATE mcp_tokens SET created_by = ? WHERE created_by = ?', [heir, id]);
    await this.x.run('DELETE FROM users WHERE id = ?', [id]);
    return revoked;
  }
}

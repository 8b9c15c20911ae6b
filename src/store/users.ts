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
}

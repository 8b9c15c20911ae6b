import type { Db } from './db.js';
import type { AccountUser } from './sites.js';
import { newId } from './ids.js';

/** Users of accounts (owner, admin, member). */
export class UsersRepo {
  private readonly q;

  constructor(db: Db) {
    this.q = {
      byIdOrEmail: db.prepare<[string, string, string], AccountUser>(
        'SELECT id, account_id, email, role FROM users WHERE account_id = ? AND (id = ? OR email = ?) LIMIT 1',
      ),
      byId: db.prepare<[string], AccountUser>('SELECT id, account_id, email, role FROM users WHERE id = ?'),
      list: db.prepare<[string], AccountUser & { name: string | null; created_at: number }>(
        'SELECT id, account_id, email, name, role, created_at FROM users WHERE account_id = ? ORDER BY created_at, id',
      ),
      insert: db.prepare('INSERT INTO users (id, account_id, email, name, role, created_at) VALUES (?, ?, ?, ?, ?, ?)'),
    };
  }

  /** A user of `accountId` named by id or (lower-cased) email. */
  find(accountId: string, idOrEmail: string): AccountUser | undefined {
    return this.q.byIdOrEmail.get(accountId, idOrEmail, idOrEmail.trim().toLowerCase());
  }

  list(accountId: string): (AccountUser & { name: string | null; created_at: number })[] {
    return this.q.list.all(accountId);
  }

  byId(id: string): AccountUser | undefined {
    return this.q.byId.get(id);
  }

  /** Adds a user to an account; the email is stored lower-cased and is unique per account. */
  create(u: { accountId: string; email: string; name: string | null; role: 'admin' | 'member' }): AccountUser {
    const id = newId('usr');
    this.q.insert.run(id, u.accountId, u.email.trim().toLowerCase(), u.name, u.role, Date.now());
    return this.q.byId.get(id)!;
  }
}

import type { Command } from 'commander';
import { SUMMARIES } from './summaries.js';
import { AccessService } from '../domain/access/service.js';
import { print, table, usageError, withData, withStore } from './common.js';

const ROLES = ['admin', 'member'] as const;
const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}$/;

/** `svc user`: the people of a site's account, whom `svc token mint --as` names. */
export function registerUser(program: Command): void {
  const user = program.command('user').description(SUMMARIES.user);
  withData(
    user
      .command('add')
      .description('Add a user to the account of a site (the CLI acts as the local owner)')
      .requiredOption('--site <id>', 'a site of the account')
      .requiredOption('--email <email>', 'the person\'s email (unique in the account)')
      .requiredOption('--role <role>', `one of ${ROLES.join(', ')}`)
      .option('--name <name>', 'display name')
      .option('--json', 'print JSON'),
  ).action(async (opts: { site: string; email: string; role: string; name?: string; json?: boolean; data?: string }) => {
    if (!(ROLES as readonly string[]).includes(opts.role)) throw usageError(`--role: ${JSON.stringify(opts.role)} is not one of ${ROLES.join(', ')}`);
    const email = opts.email.trim().toLowerCase();
    if (!EMAIL.test(email)) throw usageError(`--email: ${JSON.stringify(opts.email)} is not an email address`);
    if (opts.name !== undefined && (opts.name.trim() === '' || opts.name.length > 200)) throw usageError('--name: 1 to 200 characters');
    const out = await withStore(opts, (s) =>
      new AccessService(s).addUser({ siteId: opts.site, email, name: opts.name?.trim() ?? null, role: opts.role as (typeof ROLES)[number] }),
    );
    print(opts.json, out, () => `${out.id}  ${out.email}  ${out.role}`);
  });
  withData(
    user.command('list').description('List the users of the account of a site').requiredOption('--site <id>', 'a site of the account').option('--json', 'print JSON'),
  ).action(async (opts: { site: string; json?: boolean; data?: string }) => {
    const out = await withStore(opts, (s) => new AccessService(s).accountUsers(opts.site));
    print(opts.json, out, () => table(out, ['id', 'email', 'name', 'role', 'created_at']));
  });
}

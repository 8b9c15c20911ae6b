import type { Command } from 'commander';
import { SUMMARIES } from './summaries.js';
import { AppError } from '../errors/app-error.js';
import { API_KEY_PREFIX, isKeyScope, KEY_SCOPES } from '../domain/access/key-scopes.js';
import { credentialHash, credentialHint, newCredential } from '../domain/access/secrets.js';
import { print, table, usageError, withData, withStore } from './common.js';

export function registerKey(program: Command): void {
  const key = program.command('key').description(SUMMARIES.key);
  withData(
    key
      .command('mint')
      .description('Mint a key; prints the plaintext once')
      .requiredOption('--site <id>', 'site')
      .requiredOption('--scopes <list>', `comma-separated: ${KEY_SCOPES.join(', ')}`)
      .option('--name <name>', 'what the key is for')
      .option('--json', 'print JSON'),
  ).action(async (opts: { site: string; scopes: string; name?: string; json?: boolean; data?: string }) => {
    const scopes = [...new Set(opts.scopes.split(',').map((s) => s.trim()).filter(Boolean))];
    if (scopes.length === 0) throw usageError('--scopes: name at least one scope');
    const bad = scopes.filter((s) => !isKeyScope(s));
    if (bad.length) throw usageError(`--scopes: unknown scope ${bad.join(', ')}; known: ${KEY_SCOPES.join(', ')}`);
    const plaintext = newCredential(API_KEY_PREFIX);
    const row = await withStore(opts, (s) =>
      s.write(async (tx) => {
        if (!(await tx.sites.get(opts.site))) throw new AppError('not_found', `no site ${opts.site}`);
        const owner = await tx.sites.localOwner();
        return tx.keys.create({
          siteId: opts.site,
          name: opts.name ?? null,
          hash: credentialHash(plaintext),
          hint: credentialHint(plaintext, API_KEY_PREFIX),
          scopes,
          createdBy: owner.id,
        });
      }),
    );
    print(opts.json, { key: plaintext, id: row.id, scopes }, () => plaintext);
    if (!opts.json) process.stderr.write(`svc: key ${row.id} minted; the plaintext above is shown only once\n`);
  });
  withData(key.command('list').description('List keys (never the plaintext)').option('--site <id>', 'only this site').option('--json', 'print JSON')).action(
    async (opts: { site?: string; json?: boolean; data?: string }) => {
      const rows = await withStore(opts, (s) => s.keys.list(opts.site));
      const out = rows.map((r) => ({
        id: r.id,
        site_id: r.site_id,
        name: r.name,
        hint: r.hint,
        scopes: JSON.parse(r.scopes) as string[],
        created_at: new Date(r.created_at).toISOString(),
        last_used_at: r.last_used_at ? new Date(r.last_used_at).toISOString() : null,
        revoked_at: r.revoked_at ? new Date(r.revoked_at).toISOString() : null,
      }));
      print(opts.json, out, () => table(out, ['id', 'site_id', 'name', 'hint', 'scopes', 'created_at', 'last_used_at', 'revoked_at']));
    },
  );
  withData(key.command('revoke').description('Revoke a key; it stops working at once').argument('<id>', 'key id').option('--json', 'print JSON')).action(
    async (id: string, opts: { json?: boolean; data?: string }) => {
      await withStore(opts, (s) =>
        s.write(async (tx) => {
          const row = await tx.keys.byId(id);
          if (!row) throw new AppError('not_found', `no key ${id}`);
          if (!(await tx.keys.revoke(id, Date.now()))) throw new AppError('conflict', `key ${id} is already revoked`);
        }),
      );
      print(opts.json, { revoked: id }, () => `revoked ${id}`);
    },
  );
}

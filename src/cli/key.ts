import type { Command } from 'commander';
import { SUMMARIES } from './summaries.js';
import { isKeyScope, KEY_SCOPES } from '../domain/access/key-scopes.js';
import { ApiKeyService } from '../domain/access/api-keys.js';
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
    const out = await withStore(opts, (s) => new ApiKeyService(s).mint({ siteId: opts.site, name: opts.name ?? null, scopes: scopes.filter(isKeyScope) }));
    print(opts.json, out, () => out.key);
    if (!opts.json) process.stderr.write(`svc: key ${out.id} minted; the plaintext above is shown only once\n`);
  });
  withData(key.command('list').description('List keys (never the plaintext)').option('--site <id>', 'only this site').option('--json', 'print JSON')).action(
    async (opts: { site?: string; json?: boolean; data?: string }) => {
      const out = await withStore(opts, (s) => new ApiKeyService(s).list(opts.site));
      print(opts.json, out, () => table(out, ['id', 'site_id', 'name', 'hint', 'scopes', 'created_at', 'last_used_at', 'revoked_at']));
    },
  );
  withData(key.command('revoke').description('Revoke a key; it stops working at once').argument('<id>', 'key id').option('--json', 'print JSON')).action(
    async (id: string, opts: { json?: boolean; data?: string }) => {
      const out = await withStore(opts, (s) => new ApiKeyService(s).revoke(id));
      print(opts.json, out, () => `revoked ${out.revoked}`);
    },
  );
}

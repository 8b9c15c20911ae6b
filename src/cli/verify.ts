import { readFile } from 'node:fs/promises';
import { Option, type Command } from 'commander';
import { AppError } from '../http/errors.js';
import { verifySignature } from '../webhooks/signing.js';
import { print, usageError } from './common.js';

async function readBody(file: string | undefined): Promise<Buffer> {
  if (file !== undefined) {
    try {
      return await readFile(file);
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      throw usageError(`--file: cannot read ${file}${typeof code === 'string' ? ` (${code})` : ''}`);
    }
  }
  if (process.stdin.isTTY) throw usageError('no body: pass --file FILE or pipe the raw body on stdin');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string));
  return Buffer.concat(chunks);
}

/**
 * `svc verify`: checks a webhook delivery's X-SVC-Signature against its raw
 * body (from --file, else stdin, byte for byte). Exit 0 and "signature valid"
 * on stdout when it matches; exit 1 and "signature does not match" on stderr
 * when it does not; exit 2 on usage errors.
 */
export function registerVerify(program: Command): void {
  program
    .command('verify')
    .description('Verify the X-SVC-Signature of a webhook delivery against its raw body')
    .showHelpAfterError(false) // every outcome, usage errors included, is one line on stderr
    .addOption(
      new Option('--secret <secret>', "the destination's secret (the site_id when none is set)")
        .env('SVC_WEBHOOK_SECRET')
        .makeOptionMandatory(),
    )
    .requiredOption('--signature <hex>', 'the X-SVC-Signature header value (64 hex characters)')
    .option('--file <path>', 'file holding the raw body; read from stdin when absent')
    .option('--json', 'print JSON')
    .action(async (opts: { secret: string; signature: string; file?: string; json?: boolean }) => {
      if (opts.secret === '') throw usageError('--secret must not be empty');
      if (!/^[0-9a-fA-F]{64}$/.test(opts.signature)) {
        throw usageError('--signature must be the 64 hex characters of an HMAC-SHA256');
      }
      const body = await readBody(opts.file);
      const valid = verifySignature({ body, signature: opts.signature, secret: opts.secret });
      if (!valid) {
        if (opts.json) print(true, { valid: false }, () => '');
        throw new AppError('unauthorized', 'signature does not match');
      }
      print(opts.json, { valid: true }, () => 'signature valid');
    });
}

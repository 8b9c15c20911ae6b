import { readFile } from 'node:fs/promises';
import { SUMMARIES } from './summaries.js';
import { Option, type Command } from 'commander';
import { AppError } from '../errors/app-error.js';
import { verifySignature } from '../outbound/signing.js';
import { STANDARD_TOLERANCE_SECONDS, verifyStandardSignature } from '../outbound/standard.js';
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

/** Checks a Standard Webhooks delivery (`--standard`): exit 0 valid, 1 mismatch or stale timestamp. */
function verifyStandard(opts: VerifyOptions, body: Buffer): void {
  const r = verifyStandardSignature({ body, id: opts.id, timestamp: opts.timestamp, signature: opts.signature, secret: opts.secret });
  if (r.valid) {
    print(opts.json, { valid: true }, () => 'signature valid');
    return;
  }
  if (opts.json) print(true, { valid: false, reason: r.reason }, () => '');
  throw new AppError(
    'unauthorized',
    r.reason === 'timestamp_out_of_tolerance'
      ? `timestamp is more than ${STANDARD_TOLERANCE_SECONDS / 60} minutes away from now (replayed or delayed delivery, or a wrong clock)`
      : 'signature does not match',
  );
}

interface VerifyOptions {
  secret: string;
  signature: string;
  standard?: boolean;
  id?: string;
  timestamp?: string;
  file?: string;
  json?: boolean;
}

/** A webhook-signature header: space-separated `<version>,<base64>` values, at least one of them v1. */
function isStandardSignatureHeader(value: string): boolean {
  const parts = value.split(' ');
  return parts.every((p) => /^v\w+,[A-Za-z0-9+/=]+$/.test(p)) && parts.some((p) => p.startsWith('v1,'));
}

/**
 * `svc verify`: checks a webhook delivery's X-SVC-Signature against its raw
 * body (from --file, else stdin, byte for byte), or with --standard its
 * Standard Webhooks signature (webhook-signature over webhook-id,
 * webhook-timestamp and the body, the timestamp within 5 minutes of now).
 * Exit 0 and "signature valid" on stdout when it matches; exit 1 and a reason
 * on stderr when it does not; exit 2 on usage errors.
 */
export function registerVerify(program: Command): void {
  program
    .command('verify')
    .description(SUMMARIES.verify)
    .showHelpAfterError(false) // every outcome, usage errors included, is one line on stderr
    .addOption(
      new Option('--secret <secret>', "the destination's secret (the site_id when none is set); whsec_... with --standard")
        .env('SVC_WEBHOOK_SECRET')
        .makeOptionMandatory(),
    )
    .requiredOption('--signature <value>', 'the X-SVC-Signature header (64 hex characters), or with --standard the webhook-signature header (v1,<base64> values)')
    .option('--standard', 'check the Standard Webhooks headers instead (needs --id and --timestamp)')
    .option('--id <id>', 'with --standard: the webhook-id header')
    .option('--timestamp <seconds>', 'with --standard: the webhook-timestamp header (Unix seconds; at most 5 minutes from now)')
    .option('--file <path>', 'file holding the raw body; read from stdin when absent')
    .option('--json', 'print JSON')
    .action(async (opts: VerifyOptions) => {
      if (opts.secret === '') throw usageError('--secret must not be empty');
      if (opts.standard) {
        if (opts.id === undefined || opts.id === '') throw usageError('--standard needs --id (the webhook-id header)');
        if (opts.timestamp === undefined) throw usageError('--standard needs --timestamp (the webhook-timestamp header)');
        if (!/^\d{1,12}$/.test(opts.timestamp)) throw usageError('--timestamp must be the webhook-timestamp header: Unix time in whole seconds');
        if (!isStandardSignatureHeader(opts.signature)) {
          throw usageError('--signature must be the webhook-signature header: space-separated v1,<base64> values');
        }
        verifyStandard(opts, await readBody(opts.file));
        return;
      }
      if (opts.id !== undefined || opts.timestamp !== undefined) throw usageError('--id and --timestamp go with --standard');
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

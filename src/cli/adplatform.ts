import type { Command } from 'commander';
import { SUMMARIES } from './summaries.js';
import { AppError } from '../errors/app-error.js';
import type { Store } from '../store/store.js';
import {
  AD_PLATFORMS,
  addConnection,
  connectionLog,
  findConnection,
  listConnections,
  listJobs,
  removeConnection,
  retryJobs,
  updateConnection,
  type AdPlatform,
} from '../domain/adplatforms/service.js';
import { print, table, usageError, withData, withStore } from './common.js';

interface Common {
  data?: string;
  json?: boolean;
}

/** Command-line flag → field, per platform; secrets separately so they are sealed and never printed. */
const FLAGS = {
  meta: {
    config: { pixelId: 'pixel_id', testEventCode: 'test_event_code', eventSourceUrl: 'event_source_url' },
    secrets: { accessToken: 'access_token' },
  },
  google_ads: {
    config: {
      customerId: 'customer_id',
      conversionAction: 'conversion_action_id',
      loginCustomerId: 'login_customer_id',
      merchantId: 'merchant_id',
      feedCountry: 'feed_country_code',
      feedLanguage: 'feed_language_code',
    },
    secrets: { developerToken: 'developer_token', clientId: 'client_id', clientSecret: 'client_secret', refreshToken: 'refresh_token' },
  },
} as const satisfies Record<AdPlatform, { config: Record<string, string>; secrets: Record<string, string> }>;

/** A secret flag's value: literal, or `env:NAME` to read it from the environment (keeps it out of shell history). */
function secretValue(flag: string, v: string): string {
  if (!v.startsWith('env:')) return v;
  const name = v.slice(4);
  const value = process.env[name];
  if (!value) throw usageError(`--${flag}: environment variable ${name} is not set`);
  return value;
}

function kebab(camel: string): string {
  return camel.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

function collect(opts: Record<string, unknown>, map: Record<string, string>, secret: boolean): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [flag, field] of Object.entries(map)) {
    const v = opts[flag];
    if (typeof v === 'string') out[field] = secret ? secretValue(kebab(flag), v) : v;
  }
  return out;
}

const noConnection = (id: string) => new AppError('not_found', `no ad-platform connection ${id}`);

async function requireConnection(s: Store, id: string) {
  const c = await findConnection(s, id, {});
  if (!c) throw noConnection(id);
  return c;
}

function positiveLimit(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 100_000) throw usageError('--limit must be a whole number from 1 to 100000');
  return n;
}

export function registerAdplatform(program: Command): void {
  const ap = program
    .command('adplatform')
    .description(SUMMARIES.adplatform);

  const add = ap
    .command('add')
    .description('Connect a site to Meta or Google Ads; prints the connection id. Secret flags take a value or env:NAME')
    .requiredOption('--site <id>', 'site')
    .requiredOption('--platform <platform>', `one of ${AD_PLATFORMS.join(', ')}`)
    .option('--name <text>', 'a label')
    .option('--pixel-id <id>', 'meta: the pixel (dataset) id')
    .option('--access-token <token>', 'meta: Conversions API access token (secret)')
    .option('--test-event-code <code>', 'meta: send as test events (Events Manager > Test events)')
    .option('--event-source-url <url>', 'meta: page URL for conversions whose session has no landing URL (default https://{site domain}/)')
    .option('--customer-id <id>', 'google_ads: customer id (10 digits, dashes allowed)')
    .option('--conversion-action <id>', 'google_ads: conversion action id (or customers/{cid}/conversionActions/{id})')
    .option('--login-customer-id <id>', 'google_ads: manager account id, when acting through one')
    .option('--merchant-id <id>', 'google_ads: Merchant Center id (enables cart data)')
    .option('--feed-country <code>', 'google_ads: Merchant Center feed country, e.g. US')
    .option('--feed-language <code>', 'google_ads: Merchant Center feed language, e.g. en')
    .option('--developer-token <token>', 'google_ads: developer token (secret)')
    .option('--client-id <id>', 'google_ads: OAuth client id (secret)')
    .option('--client-secret <secret>', 'google_ads: OAuth client secret (secret)')
    .option('--refresh-token <token>', 'google_ads: OAuth refresh token with the adwords scope (secret)')
    .option('--json', 'print JSON');
  withData(add).action(async (opts: Common & Record<string, unknown> & { site: string; platform: string; name?: string }) => {
    if (!(AD_PLATFORMS as readonly string[]).includes(opts.platform)) throw usageError(`--platform must be one of ${AD_PLATFORMS.join(', ')}`);
    const platform = opts.platform as AdPlatform;
    const other = platform === 'meta' ? FLAGS.google_ads : FLAGS.meta;
    const foreign = [...Object.keys(other.config), ...Object.keys(other.secrets)].filter((f) => opts[f] !== undefined);
    if (foreign.length > 0) throw usageError(`${foreign.map((f) => `--${kebab(f)}`).join(', ')} do not apply to ${platform}`);
    const config = collect(opts, FLAGS[platform].config, false);
    const secrets = collect(opts, FLAGS[platform].secrets, true);
    const missing = [...Object.entries(FLAGS[platform].secrets)].filter(([, field]) => secrets[field] === undefined).map(([f]) => `--${kebab(f)}`);
    if (missing.length > 0) throw usageError(`${platform} needs ${missing.join(', ')}`);
    const created = await withStore(opts, (s) => addConnection(s, { siteId: opts.site, platform, name: opts.name, config, secrets }));
    print(opts.json, { id: created.id, connection: created }, () => created.id);
  });

  withData(ap.command('list').description('List connections (settings only; secrets are never shown)').option('--site <id>', 'only this site').option('--json', 'print JSON')).action(
    async (opts: Common & { site?: string }) => {
      const rows = await withStore(opts, (s) => listConnections(s, opts.site));
      print(opts.json, rows, () =>
        table(
          rows.map((r) => ({ ...r, settings: Object.entries(r.settings).map(([k, v]) => `${k}=${v}`).join(' '), secrets: r.secrets.join(',') })),
          ['id', 'site_id', 'platform', 'name', 'enabled', 'settings', 'secrets'],
        ),
      );
    },
  );

  withData(
    ap
      .command('update')
      .description('Enable, disable or rotate the credentials of a connection (secret flags take a value or env:NAME)')
      .argument('<id>', 'connection id')
      .option('--enable', 'enable')
      .option('--disable', 'disable (conversions recorded meanwhile are not queued for it)')
      .option('--access-token <token>', 'meta: new access token')
      .option('--developer-token <token>', 'google_ads: new developer token')
      .option('--client-id <id>', 'google_ads: new OAuth client id')
      .option('--client-secret <secret>', 'google_ads: new OAuth client secret')
      .option('--refresh-token <token>', 'google_ads: new OAuth refresh token')
      .option('--json', 'print JSON'),
  ).action(async (id: string, opts: Common & Record<string, unknown> & { enable?: boolean; disable?: boolean }) => {
    if (opts.enable && opts.disable) throw usageError('--enable and --disable exclude each other');
    const updated = await withStore(opts, async (s) => {
      const current = await requireConnection(s, id);
      const patch = collect(opts, FLAGS[current.platform].secrets, true);
      const other = current.platform === 'meta' ? FLAGS.google_ads.secrets : FLAGS.meta.secrets;
      const foreign = Object.keys(other).filter((f) => opts[f] !== undefined);
      if (foreign.length > 0) throw usageError(`${foreign.map((f) => `--${kebab(f)}`).join(', ')} do not apply to ${current.platform}`);
      return updateConnection(s, id, { secrets: patch, enabled: opts.enable || opts.disable ? opts.enable === true : undefined });
    });
    print(opts.json, updated, () => `${updated.id} updated`);
  });

  withData(ap.command('remove').description('Remove a connection; its pending jobs fail for good, its history stays').argument('<id>', 'connection id').option('--json', 'print JSON')).action(
    async (id: string, opts: Common) => {
      if (!(await withStore(opts, (s) => removeConnection(s, id, {})))) throw noConnection(id);
      print(opts.json, { id, removed: true }, () => `${id} removed`);
    },
  );

  withData(
    ap
      .command('deliveries')
      .description('The integration health log of the ad platforms: every attempt with status, latency and error class')
      .option('--site <id>', 'only this site')
      .option('--connection <id>', 'only this connection')
      .option('--failed', 'only failed attempts')
      .option('--limit <n>', 'newest N entries', '100')
      .option('--json', 'print JSON'),
  ).action(async (opts: Common & { site?: string; connection?: string; failed?: boolean; limit: string }) => {
    const limit = positiveLimit(opts.limit);
    const out = await withStore(opts, (s) => connectionLog(s, { siteId: opts.site, destinationId: opts.connection, failedOnly: opts.failed, limit }));
    print(opts.json, out, () => table(out, ['id', 'at', 'platform', 'connection_id', 'job_id', 'attempt', 'ok', 'status', 'latency_ms', 'error_class', 'message']));
  });

  withData(
    ap
      .command('jobs')
      .description('Conversion jobs and their state (pending, delivered, failed)')
      .option('--site <id>', 'only this site')
      .option('--connection <id>', 'only this connection')
      .option('--state <state>', 'pending, delivered or failed')
      .option('--limit <n>', 'newest N jobs', '100')
      .option('--json', 'print JSON'),
  ).action(async (opts: Common & { site?: string; connection?: string; state?: string; limit: string }) => {
    const limit = positiveLimit(opts.limit);
    if (opts.state !== undefined && !['pending', 'delivered', 'failed'].includes(opts.state)) throw usageError('--state must be pending, delivered or failed');
    const out = await withStore(opts, (s) => listJobs(s, { siteId: opts.site, connectionId: opts.connection, state: opts.state as 'pending' | undefined, limit }));
    print(opts.json, out, () => table(out, ['id', 'connection_id', 'conversion_id', 'state', 'attempts', 'last_status', 'last_error']));
  });

  withData(
    ap
      .command('retry')
      .description('Queue jobs that failed for good again (after fixing credentials, say); they keep their event id, so nothing counts twice')
      .argument('[job]', 'one job id')
      .option('--connection <id>', 'every failed job of this connection')
      .option('--json', 'print JSON'),
  ).action(async (jobId: string | undefined, opts: Common & { connection?: string }) => {
    if ((jobId === undefined) === (opts.connection === undefined)) throw usageError('name one job id, or --connection ID');
    const n = await withStore(opts, (s) => retryJobs(s, jobId !== undefined ? { jobId } : { connectionId: opts.connection! }));
    print(opts.json, { requeued: n }, () => `${n} job${n === 1 ? '' : 's'} queued again`);
  });
}

import type { Command } from 'commander';
import { SUMMARIES } from './summaries.js';
import { isCurrencyCode } from '../domain/currency.js';
import { z } from 'zod';
import { print, table, withData, withStore, usageError } from './common.js';
import { parseTagSettings, type TagSettingsInput } from '../domain/sites/tag-settings.js';
import { SiteSettingsService } from '../domain/sites/service.js';

const domainSchema = z
  .string()
  .regex(/^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/i, 'must be a domain name such as example.com');
const currencySchema = z.string().refine(isCurrencyCode, 'must be an ISO 4217 code such as USD');

export function registerSite(program: Command): void {
  const site = program.command('site').description(SUMMARIES.site);
  withData(
    site
      .command('create')
      .description('Create a site and print its public site_id')
      .requiredOption('--name <name>', 'site name')
      .option('--domain <domain>', 'the site domain, e.g. example.com')
      .option('--currency <code>', 'default ISO 4217 currency of conversions', 'USD')
      .option('--json', 'print JSON'),
  ).action(async (opts: { name: string; domain?: string; currency: string; json?: boolean; data?: string }) => {
    if (!opts.name.trim()) throw usageError('--name must not be empty');
    if (opts.domain !== undefined && !domainSchema.safeParse(opts.domain).success) {
      throw usageError(`--domain: ${JSON.stringify(opts.domain)} must be a domain name such as example.com`);
    }
    if (!currencySchema.safeParse(opts.currency).success) {
      throw usageError(`--currency: ${JSON.stringify(opts.currency)} must be an ISO 4217 code such as USD`);
    }
    const out = await withStore(opts, (s) => new SiteSettingsService(s).create({ name: opts.name.trim(), domain: opts.domain, currency: opts.currency }), {
      create: true,
    });
    print(opts.json, out, () => out.site_id);
  });
  withData(
    site
      .command('update')
      .description('Change the settings of a site')
      .argument('<id>', 'site_id')
      .option('--domain <domain>', 'the site domain, e.g. example.com')
      .option('--currency <code>', 'default ISO 4217 currency of conversions (convert carries none)')
      .option('--allowed-origins <origins>', 'extra browser origins allowed besides the domain, comma-separated (https://app.example.net); "" for none')
      .option('--url-params <names>', 'query parameters the browser tag keeps in page URLs, comma-separated, * as a suffix (default utm_*); "" for none')
      .option('--consent-required <yes|no>', 'the browser tag sets no cookie and sends nothing until svc.consent(true)')
      .option('--honour-privacy-signals <yes|no>', 'the browser tag treats Do-Not-Track and Global Privacy Control as consent refused')
      .option('--json', 'print JSON'),
  ).action(async (id: string, opts: { domain?: string; currency?: string; json?: boolean; data?: string } & TagSettingsInput) => {
    const tag = parseTagSettings(opts);
    if (opts.domain === undefined && opts.currency === undefined && Object.keys(tag).length === 0) {
      throw usageError('name a setting to change: --domain, --currency, --allowed-origins, --url-params, --consent-required or --honour-privacy-signals');
    }
    if (opts.domain !== undefined && !domainSchema.safeParse(opts.domain).success) {
      throw usageError(`--domain: ${JSON.stringify(opts.domain)} must be a domain name such as example.com`);
    }
    if (opts.currency !== undefined && !currencySchema.safeParse(opts.currency).success) {
      throw usageError(`--currency: ${JSON.stringify(opts.currency)} must be an ISO 4217 code such as USD`);
    }
    const out = await withStore(opts, (s) => new SiteSettingsService(s).setUp(id, { ...tag, domain: opts.domain, currency: opts.currency }));
    print(opts.json, out, () => `${out.site_id} updated (domain ${out.domain ?? '-'}, currency ${out.currency})`);
  });
  withData(site.command('list').description('List sites').option('--json', 'print JSON')).action(
    async (opts: { json?: boolean; data?: string }) => {
      const out = await withStore(opts, (s) => new SiteSettingsService(s).list());
      print(opts.json, out, () => table(out, ['site_id', 'name', 'domain', 'currency', 'created_at']));
    },
  );
}

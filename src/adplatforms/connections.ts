import { z } from 'zod';
import { AppError } from '../errors/app-error.js';
import type { Store } from '../store/store.js';
import type { AdConnectionRow, AdPlatform } from '../store/adplatforms.js';

const digits = (what: string, min: number, max: number) =>
  z
    .string()
    .trim()
    .transform((s) => s.replace(/-/g, ''))
    .pipe(z.string().regex(new RegExp(`^\\d{${min},${max}}$`), `${what} must be ${min === max ? min : `${min} to ${max}`} digits`));

/** Meta Conversions API: the dataset (pixel) the events go to. */
export const metaConfigSchema = z.strictObject({
  pixel_id: digits('pixel_id', 5, 20),
  test_event_code: z.string().trim().regex(/^[A-Za-z0-9]{1,32}$/, 'test_event_code must be letters and digits, as Events Manager shows it').optional(),
  /** Used when the converting session has no landing URL (a server-side order with no browser session). */
  event_source_url: z.url({ protocol: /^https?$/ }).optional(),
});
export const metaSecretsSchema = z.strictObject({
  access_token: z.string().trim().min(20, 'access_token looks too short to be a Conversions API token').max(1024),
});

/** Google Ads click conversions. */
export const googleConfigSchema = z.strictObject({
  customer_id: digits('customer_id', 10, 10),
  /** The numeric id of the conversion action (the last part of customers/{cid}/conversionActions/{id}). */
  conversion_action_id: z
    .string()
    .trim()
    .transform((s) => s.replace(/^customers\/\d+\/conversionActions\//, ''))
    .pipe(z.string().regex(/^\d{1,20}$/, 'conversion_action_id must be the numeric id of the conversion action')),
  login_customer_id: digits('login_customer_id', 10, 10).optional(),
  /** Merchant Center id; cart data is sent only with it, as Google requires. */
  merchant_id: digits('merchant_id', 1, 20).optional(),
  feed_country_code: z.string().trim().regex(/^[A-Z]{2}$/, 'feed_country_code must be an ISO 3166-1 alpha-2 code such as US').optional(),
  feed_language_code: z.string().trim().regex(/^[a-z]{2}$/, 'feed_language_code must be an ISO 639-1 code such as en').optional(),
});
export const googleSecretsSchema = z.strictObject({
  developer_token: z.string().trim().min(10).max(256),
  client_id: z.string().trim().min(10).max(512),
  client_secret: z.string().trim().min(8).max(512),
  refresh_token: z.string().trim().min(10).max(2048),
});

export type MetaConfig = z.infer<typeof metaConfigSchema>;
export type MetaSecrets = z.infer<typeof metaSecretsSchema>;
export type GoogleConfig = z.infer<typeof googleConfigSchema>;
export type GoogleSecrets = z.infer<typeof googleSecretsSchema>;

export type ParsedConnection =
  | { platform: 'meta'; row: AdConnectionRow; config: MetaConfig; secrets: MetaSecrets }
  | { platform: 'google_ads'; row: AdConnectionRow; config: GoogleConfig; secrets: GoogleSecrets };

/** Fields of each platform, split into settings and secrets. */
export const PLATFORM_FIELDS: Record<AdPlatform, { config: z.ZodObject; secrets: z.ZodObject }> = {
  meta: { config: metaConfigSchema, secrets: metaSecretsSchema },
  google_ads: { config: googleConfigSchema, secrets: googleSecretsSchema },
};

function parseOrThrow<T>(schema: z.ZodType<T>, input: unknown, what: string): T {
  const r = schema.safeParse(input);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const field = issue.path.join('.');
  const message = issue.code === 'unrecognized_keys' ? `unknown field ${issue.keys.join(', ')}` : issue.message;
  throw new AppError('validation_failed', `${what}: ${field ? `${field}: ` : ''}${message}`, { field: field || what });
}

/**
 * Validates a new connection and seals its secrets. Meta needs a page URL
 * for every website event: the site's domain gives one when the connection
 * names none.
 */
export async function prepareConnection(
  store: Store,
  input: { siteId: string; platform: AdPlatform; name?: string | null | undefined; config: unknown; secrets: unknown },
): Promise<{ siteId: string; platform: AdPlatform; name: string | null; config: MetaConfig | GoogleConfig; secretsEnc: string }> {
  const site = await store.sites.get(input.siteId);
  if (!site) throw new AppError('unknown_site', `site: no site ${JSON.stringify(input.siteId)}`, { field: 'site_id' });
  const fields = PLATFORM_FIELDS[input.platform];
  const config = parseOrThrow(fields.config, input.config, input.platform) as MetaConfig | GoogleConfig;
  const secrets = parseOrThrow(fields.secrets, input.secrets, input.platform);
  if (input.platform === 'meta' && !(config as MetaConfig).event_source_url && !site.domain) {
    throw new AppError(
      'validation_failed',
      'meta: event_source_url is required when the site has no domain (Meta needs a page URL for website events)',
      { field: 'event_source_url' },
    );
  }
  if (input.platform === 'google_ads') {
    const g = config as GoogleConfig;
    if ((g.feed_country_code || g.feed_language_code) && !g.merchant_id) {
      throw new AppError('validation_failed', 'google_ads: feed_country_code and feed_language_code need merchant_id', { field: 'merchant_id' });
    }
  }
  return { siteId: site.id, platform: input.platform, name: input.name?.trim() || null, config, secretsEnc: store.secrets.seal(JSON.stringify(secrets)) };
}

/** A stored connection with its settings parsed and its secrets opened (in memory only). */
export function openConnection(store: Store, row: AdConnectionRow): ParsedConnection {
  const secrets = JSON.parse(store.secrets.open(row.secrets_enc)) as unknown;
  if (row.platform === 'meta') {
    return { platform: 'meta', row, config: metaConfigSchema.parse(JSON.parse(row.config)), secrets: metaSecretsSchema.parse(secrets) };
  }
  return { platform: 'google_ads', row, config: googleConfigSchema.parse(JSON.parse(row.config)), secrets: googleSecretsSchema.parse(secrets) };
}

/** Replaces some secrets of a connection (rotation); the others stay. */
export function rotateSecrets(store: Store, row: AdConnectionRow, patch: Record<string, string>): string {
  const current = JSON.parse(store.secrets.open(row.secrets_enc)) as Record<string, string>;
  const next = parseOrThrow(PLATFORM_FIELDS[row.platform].secrets, { ...current, ...patch }, row.platform);
  return store.secrets.seal(JSON.stringify(next));
}

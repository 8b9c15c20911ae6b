/**
 * One line per top-level command, shown by `svc --help`. Kept apart from the commands' own files so that
 * `svc --help` and a command run load only what they print or run (see main.ts).
 */
export const SUMMARIES = {
  serve: 'Run every HTTP surface (ingestion, MCP, profile REST API) and the delivery workers',
  site: 'Create and list sites (the CLI acts as the local owner)',
  stats: 'Exact counts of what is stored, per site',
  verify: 'Verify the X-SVC-Signature (or, with --standard, the Standard Webhooks signature) of a webhook delivery against its raw body',
  webhooks: 'Webhook destinations, the delivery health log, replay and test sends',
  key: 'Profile REST API keys (plaintext shown once, stored as a hash)',
  segment: 'Custom segments: a rule, a name and a priority (see the rule language in the README)',
  seed: 'Fill a site with a large, realistic synthetic data set, fast (benchmarks and demos)',
  token: 'MCP tokens (plaintext shown once, stored as a hash)',
  user: 'Users of the account a site belongs to (owner, admin, member)',
  adplatform: 'Ad-platform connections (Meta Conversions API, Google Ads) that every conversion is sent to',
  recommend: 'Items most often bought together with a sku, or with a basket of skus (co-purchase NPMI, see the README)',
  migrate: 'Apply pending schema migrations (to PostgreSQL with --database-url, else to the data directory) and print the schema version (svc serve also applies them at start)',
  plugin: 'The seller-skills client plugin: run its tools and skills over stdio MCP, validate it, build it',
  mcp: 'MCP client configuration',
  accounts: 'Company accounts and their signals',
  backup: 'Copy the embedded SQLite store to FILE while svc serve keeps running (a consistent point in time; mode 0600)',
  restore: 'Put a backup made by svc backup back as the embedded store of the data directory (refused while svc serve runs on it)',
  demo: 'Serve a demo shop at /demo that uses the browser tag: a demo site with zones, a published variant and a running layout test',
} as const;

export type CommandName = keyof typeof SUMMARIES;

/**
 * Versioned schema migrations for the SQLite store. Each entry is applied once,
 * in order, inside a transaction; `schema_migrations` records what ran.
 * Never edit a shipped migration: add a new one.
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
  /**
   * Expand-only: it adds (a table, a nullable or defaulted column, an index) and
   * removes, renames or tightens nothing, so the release before it keeps running
   * against a store it has migrated (rolling upgrades). Without it the migration
   * is a contract step, and svc releases that do not know it refuse the store.
   */
  expand?: boolean;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'core: accounts, sites, profiles, identities, sessions, ingestion, outbox',
    sql: `
CREATE TABLE accounts (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE TABLE users (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  email TEXT NOT NULL,
  name TEXT,
  role TEXT NOT NULL CHECK (role IN ('owner','admin','member')),
  created_at INTEGER NOT NULL,
  UNIQUE (account_id, email)
);
CREATE TABLE sites (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  name TEXT NOT NULL,
  domain TEXT,
  currency TEXT NOT NULL DEFAULT 'USD',
  created_at INTEGER NOT NULL
);
CREATE TABLE profiles (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL,
  known INTEGER NOT NULL DEFAULT 0,
  traits TEXT NOT NULL DEFAULT '{}',
  primary_segment TEXT,
  merged_into TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX profiles_site ON profiles (site_id, id);
CREATE TABLE identities (
  site_id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('email','external_id','visitor')),
  value TEXT NOT NULL,
  profile_id TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (site_id, kind, value)
) WITHOUT ROWID;
CREATE INDEX identities_profile ON identities (profile_id);
CREATE TABLE sessions (
  site_id TEXT NOT NULL,
  id TEXT NOT NULL,
  profile_id TEXT NOT NULL,
  visitor_id TEXT,
  first_seen INTEGER NOT NULL,
  last_seen INTEGER NOT NULL,
  ip TEXT,
  user_agent TEXT,
  landing_url TEXT,
  fbclid TEXT,
  fbclid_at INTEGER,
  gclid TEXT,
  PRIMARY KEY (site_id, id)
) WITHOUT ROWID;
CREATE INDEX sessions_profile ON sessions (profile_id);
CREATE TABLE events (
  id INTEGER PRIMARY KEY,
  site_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  profile_id TEXT NOT NULL,
  visitor_id TEXT,
  type TEXT NOT NULL,
  ts INTEGER NOT NULL,
  body TEXT NOT NULL,
  received_at INTEGER NOT NULL
);
CREATE INDEX events_site_type ON events (site_id, type, ts);
CREATE INDEX events_profile ON events (profile_id, ts);
CREATE TABLE scores (
  id INTEGER PRIMARY KEY,
  site_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  profile_id TEXT NOT NULL,
  visitor_id TEXT,
  score REAL,
  body TEXT NOT NULL,
  received_at INTEGER NOT NULL
);
CREATE INDEX scores_site ON scores (site_id, received_at);
CREATE INDEX scores_profile ON scores (profile_id, received_at);
CREATE TABLE conversions (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  profile_id TEXT NOT NULL,
  revenue REAL,
  currency TEXT NOT NULL,
  line_items TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX conversions_site ON conversions (site_id, created_at);
CREATE INDEX conversions_profile ON conversions (profile_id);
CREATE TABLE leads (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL,
  profile_id TEXT NOT NULL,
  form_id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('lead_form','optin')),
  email TEXT,
  name TEXT,
  phone TEXT,
  appointment_slot TEXT,
  source TEXT,
  workable INTEGER NOT NULL,
  status TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX leads_site ON leads (site_id, created_at);
CREATE INDEX leads_profile ON leads (profile_id);
CREATE TABLE outbox (
  id INTEGER PRIMARY KEY,
  site_id TEXT NOT NULL,
  event_type TEXT NOT NULL,
  payload TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  dispatched_at INTEGER
);
CREATE INDEX outbox_pending ON outbox (id) WHERE dispatched_at IS NULL;
CREATE INDEX outbox_site ON outbox (site_id, id);
`,
  },
  {
    version: 2,
    name: 'webhooks: destinations, deliveries, integration health log',
    sql: `
CREATE TABLE destinations (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL REFERENCES sites(id),
  url TEXT NOT NULL,
  secret_enc TEXT,
  events TEXT NOT NULL,
  enabled INTEGER NOT NULL DEFAULT 1,
  disabled_reason TEXT,
  description TEXT,
  api_key_id TEXT,
  consecutive_failures INTEGER NOT NULL DEFAULT 0,
  first_failure_at INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX destinations_site ON destinations (site_id, created_at);
CREATE TABLE deliveries (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL,
  destination_id TEXT NOT NULL,
  outbox_id INTEGER,
  event_type TEXT NOT NULL,
  payload TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending','delivered','failed')),
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER NOT NULL,
  last_status INTEGER,
  last_error TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  delivered_at INTEGER
);
CREATE INDEX deliveries_due ON deliveries (destination_id, next_attempt_at, id) WHERE state = 'pending';
CREATE INDEX deliveries_destination ON deliveries (destination_id, created_at);
CREATE INDEX deliveries_site ON deliveries (site_id, created_at);
CREATE TABLE health_log (
  id INTEGER PRIMARY KEY,
  site_id TEXT NOT NULL,
  integration TEXT NOT NULL,
  destination_id TEXT NOT NULL,
  delivery_id TEXT,
  event_type TEXT,
  kind TEXT NOT NULL CHECK (kind IN ('attempt','test','replay','disabled','enabled')),
  attempt INTEGER,
  ok INTEGER NOT NULL,
  status INTEGER,
  latency_ms INTEGER,
  error_class TEXT,
  message TEXT,
  response_excerpt TEXT,
  created_at INTEGER NOT NULL
);
CREATE INDEX health_destination ON health_log (destination_id, id);
CREATE INDEX health_site ON health_log (site_id, id);
CREATE INDEX health_delivery ON health_log (delivery_id);
`,
  },
  {
    version: 3,
    name: 'segments, memberships and profile REST API keys',
    sql: `
CREATE TABLE segments (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL REFERENCES sites(id),
  name TEXT NOT NULL,
  rule TEXT NOT NULL,
  priority INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  UNIQUE (site_id, name)
);
CREATE TABLE segment_members (
  segment_id TEXT NOT NULL,
  profile_id TEXT NOT NULL,
  site_id TEXT NOT NULL,
  since INTEGER NOT NULL,
  PRIMARY KEY (segment_id, profile_id)
) WITHOUT ROWID;
CREATE INDEX segment_members_profile ON segment_members (profile_id);
CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL REFERENCES sites(id),
  name TEXT,
  hash TEXT NOT NULL UNIQUE,
  hint TEXT NOT NULL,
  scopes TEXT NOT NULL,
  created_by TEXT,
  created_at INTEGER NOT NULL,
  last_used_at INTEGER,
  revoked_at INTEGER
);
CREATE INDEX api_keys_site ON api_keys (site_id, created_at);
`,
  },
  {
    version: 4,
    name: 'hashed identifiers for privacy-preserving look-ups',
    sql: `
CREATE TABLE identity_hashes (
  site_id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('email_sha256','phone_sha256')),
  hash TEXT NOT NULL,
  profile_id TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (site_id, kind, hash)
) WITHOUT ROWID;
CREATE INDEX identity_hashes_profile ON identity_hashes (profile_id);
`,
  },
  {
    version: 5,
    name: 'outbox: append-only with a dispatch cursor (no per-row update, no secondary indexes on the hot path)',
    sql: `
CREATE TABLE outbox_next (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  site_id TEXT NOT NULL,
  event_type TEXT NOT NULL,
  payload TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
INSERT INTO outbox_next (id, site_id, event_type, payload, created_at) SELECT id, site_id, event_type, payload, created_at FROM outbox;
CREATE TABLE outbox_cursor (name TEXT PRIMARY KEY, last_id INTEGER NOT NULL);
INSERT INTO outbox_cursor (name, last_id)
  VALUES ('webhooks', coalesce((SELECT min(id) - 1 FROM outbox WHERE dispatched_at IS NULL), (SELECT max(id) FROM outbox), 0));
DROP TABLE outbox;
ALTER TABLE outbox_next RENAME TO outbox;
`,
  },
  {
    version: 6,
    name: 'MCP tool server: scoped tokens and the tools/call audit log',
    sql: `
CREATE TABLE mcp_tokens (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL REFERENCES sites(id),
  name TEXT,
  hash TEXT NOT NULL UNIQUE,
  hint TEXT NOT NULL,
  scope TEXT NOT NULL CHECK (scope IN ('read','write','admin')),
  restrictions TEXT NOT NULL,
  created_by TEXT NOT NULL REFERENCES users(id),
  created_at INTEGER NOT NULL,
  expires_at INTEGER,
  last_used_at INTEGER,
  revoked_at INTEGER
);
CREATE INDEX mcp_tokens_site ON mcp_tokens (site_id, created_at);
CREATE TABLE mcp_audit (
  id INTEGER PRIMARY KEY,
  site_id TEXT NOT NULL,
  token_id TEXT NOT NULL,
  tool TEXT NOT NULL,
  outcome TEXT NOT NULL CHECK (outcome IN ('ok','error','refused','invalid')),
  error_code TEXT,
  duration_ms INTEGER NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX mcp_audit_token ON mcp_audit (token_id, id);
CREATE INDEX mcp_audit_site ON mcp_audit (site_id, id);
`,
  },
  {
    version: 7,
    name: 'index merged profiles by the profile they were merged into',
    sql: `
-- Without it, reading a profile (its merged_profile_ids) and every identity merge
-- (markMerged) scanned the whole profiles table: 340 ms a look-up at 1M profiles.
CREATE INDEX profiles_merged ON profiles (merged_into) WHERE merged_into IS NOT NULL;
`,
  },
  {
    version: 8,
    name: 'ad-platform connections and their conversion jobs (the fan-out outbox)',
    sql: `
-- config: the non-secret settings (JSON); secrets_enc: the credentials, sealed by SecretBox.
-- token_enc/token_expires_at: the cached OAuth access token (Google Ads), sealed too.
CREATE TABLE ad_connections (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL REFERENCES sites(id),
  platform TEXT NOT NULL CHECK (platform IN ('meta','google_ads')),
  name TEXT,
  config TEXT NOT NULL,
  secrets_enc TEXT NOT NULL,
  token_enc TEXT,
  token_expires_at INTEGER,
  enabled INTEGER NOT NULL DEFAULT 1,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX ad_connections_site ON ad_connections (site_id, created_at);
-- One job per conversion and connection, written in the conversion's transaction.
-- payload: the platform-neutral conversion signals (hashed identifiers only, never plaintext).
CREATE TABLE ad_jobs (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL,
  connection_id TEXT NOT NULL,
  conversion_id TEXT NOT NULL,
  payload TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending','delivered','failed')),
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER NOT NULL,
  last_status INTEGER,
  last_error TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  delivered_at INTEGER,
  UNIQUE (connection_id, conversion_id)
);
CREATE INDEX ad_jobs_due ON ad_jobs (connection_id, next_attempt_at, id) WHERE state = 'pending';
CREATE INDEX ad_jobs_site ON ad_jobs (site_id, created_at);
`,
  },
  {
    version: 9,
    name: 'co-purchase counts per site, sku and sku pair (the recommender)',
    sql: `
-- Counted per order: the distinct skus of one conversion (a repeated sku counts once, qty does not
-- multiply). Updated in the conversion's transaction by CopurchaseRepo.record.
-- copurchase_orders: N, the site's orders with at least one sku.
CREATE TABLE copurchase_orders (
  site_id TEXT PRIMARY KEY,
  orders INTEGER NOT NULL
) WITHOUT ROWID;
-- n_A: orders containing the sku. id is what the pairs refer to (small integer keys keep the pair
-- rows about 15 bytes, so the table and the pages a commit rewrites stay small).
CREATE TABLE copurchase_items (
  id INTEGER PRIMARY KEY,
  site_id TEXT NOT NULL,
  sku TEXT NOT NULL,
  orders INTEGER NOT NULL,
  UNIQUE (site_id, sku)
);
-- n_AB: orders containing both items (copurchase_items ids of one site), stored in both directions
-- so the companions of an item are one range scan of the primary key.
CREATE TABLE copurchase_pairs (
  item INTEGER NOT NULL,
  other INTEGER NOT NULL,
  orders INTEGER NOT NULL,
  PRIMARY KEY (item, other)
) WITHOUT ROWID;
-- Backfill from the conversions stored before this migration (the same per-order rule).
-- CASE is evaluated lazily, so a malformed line_items value or a non-object item is skipped, never an error.
CREATE TEMP TABLE copurchase_backfill AS
  SELECT DISTINCT site_id, cid, sku FROM (
    SELECT c.site_id AS site_id, c.id AS cid, CASE WHEN j.type = 'object' THEN j.value ->> '$.sku' END AS sku
    FROM conversions c,
      json_each(CASE WHEN json_valid(c.line_items) THEN CASE WHEN json_type(c.line_items) = 'array' THEN c.line_items ELSE '[]' END ELSE '[]' END) j
  )
  WHERE typeof(sku) = 'text' AND sku <> '';
INSERT INTO copurchase_orders (site_id, orders)
  SELECT site_id, count(DISTINCT cid) FROM copurchase_backfill GROUP BY site_id;
INSERT INTO copurchase_items (site_id, sku, orders)
  SELECT site_id, sku, count(*) FROM copurchase_backfill GROUP BY site_id, sku;
CREATE TEMP TABLE copurchase_backfill_ids AS
  SELECT b.cid AS cid, i.id AS item FROM copurchase_backfill b JOIN copurchase_items i ON i.site_id = b.site_id AND i.sku = b.sku;
CREATE INDEX temp.copurchase_backfill_ids_cid ON copurchase_backfill_ids (cid);
INSERT INTO copurchase_pairs (item, other, orders)
  SELECT a.item, b.item, count(*) FROM copurchase_backfill_ids a
  JOIN copurchase_backfill_ids b ON b.cid = a.cid AND b.item <> a.item
  GROUP BY a.item, b.item;
DROP TABLE copurchase_backfill_ids;
DROP TABLE copurchase_backfill;
`,
  },
  {
    version: 10,
    name: 'leases on work lanes (one instance drains a destination or connection at a time)',
    sql: `
CREATE TABLE lane_leases (
  lane TEXT PRIMARY KEY,
  holder TEXT NOT NULL,
  locked_until INTEGER NOT NULL
) WITHOUT ROWID;
`,
  },
  {
    version: 11,
    name: 'indexes for the retention clean-up of delivered work and the health log',
    sql: `
CREATE INDEX deliveries_delivered ON deliveries (delivered_at) WHERE state = 'delivered';
CREATE INDEX ad_jobs_delivered ON ad_jobs (delivered_at) WHERE state = 'delivered';
CREATE INDEX health_created ON health_log (created_at);
`,
  },
  {
    version: 12,
    name: 'web experience core: pages, zones, content, variants, placements, experiments, overrides, exposures; site time zone and holdout',
    sql: `
-- Site settings the product areas read: the IANA time zone (quiet hours, callbacks, ISO weeks) and the
-- holdout share (0..1) of visitors who always see zone defaults, for measuring lift.
ALTER TABLE sites ADD COLUMN timezone TEXT NOT NULL DEFAULT 'UTC';
ALTER TABLE sites ADD COLUMN holdout_share REAL NOT NULL DEFAULT 0;
-- A page: a URL pattern of a site. match_type exact (whole URL path + query as given), prefix (path starts
-- with pattern), glob (* = any run of characters but '/', ** = any run including '/').
CREATE TABLE pages (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL,
  name TEXT NOT NULL,
  match_type TEXT NOT NULL CHECK (match_type IN ('exact','prefix','glob')),
  pattern TEXT NOT NULL,
  source TEXT NOT NULL DEFAULT 'manual' CHECK (source IN ('manual','crawl')),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  UNIQUE (site_id, match_type, pattern)
);
-- Reusable content: sanitized HTML or JSON.
CREATE TABLE content_blocks (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL,
  name TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('html','json')),
  body TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX content_blocks_site ON content_blocks (site_id, name);
-- A zone: a named region (CSS selector) of a page, with the content it shows by default.
CREATE TABLE zones (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL,
  page_id TEXT NOT NULL REFERENCES pages(id),
  name TEXT NOT NULL,
  selector TEXT NOT NULL,
  default_content_id TEXT REFERENCES content_blocks(id),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  UNIQUE (page_id, name)
);
CREATE INDEX zones_site ON zones (site_id);
-- A variant: the content a zone shows to a segment (segment_id NULL: anyone), with its lifecycle.
CREATE TABLE variants (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL,
  zone_id TEXT NOT NULL REFERENCES zones(id),
  content_id TEXT NOT NULL REFERENCES content_blocks(id),
  segment_id TEXT,
  name TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('draft','approved','published','disabled','archived')),
  created_by TEXT NOT NULL,
  approved_by TEXT,
  approved_at INTEGER,
  published_by TEXT,
  published_at INTEGER,
  disabled_at INTEGER,
  disabled_reason TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX variants_zone ON variants (zone_id, status);
CREATE INDEX variants_site ON variants (site_id, status);
-- A placement wires a published variant to a zone for a segment (NULL: everyone) with a priority
-- (higher wins).
CREATE TABLE placements (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL,
  zone_id TEXT NOT NULL REFERENCES zones(id),
  variant_id TEXT NOT NULL REFERENCES variants(id),
  segment_id TEXT,
  priority INTEGER NOT NULL DEFAULT 0,
  enabled INTEGER NOT NULL DEFAULT 1,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX placements_zone ON placements (zone_id, priority);
CREATE INDEX placements_site ON placements (site_id);
-- A layout test on a zone (or on a page: every zone of it). Arms in experiment_arms.
CREATE TABLE experiments (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL,
  name TEXT NOT NULL,
  page_id TEXT REFERENCES pages(id),
  zone_id TEXT REFERENCES zones(id),
  status TEXT NOT NULL CHECK (status IN ('draft','running','paused','ended','shipped')),
  seed TEXT NOT NULL,
  primary_metric TEXT NOT NULL CHECK (primary_metric IN ('conversion','revenue_per_visitor','custom_event')),
  metric_event TEXT,
  guardrail_metrics TEXT NOT NULL DEFAULT '[]',
  stop_early INTEGER NOT NULL DEFAULT 0,
  scheduled_end_at INTEGER,
  started_at INTEGER,
  paused_at INTEGER,
  ended_at INTEGER,
  end_reason TEXT,
  winning_arm_id TEXT,
  shipped_arm_id TEXT,
  shipped_at INTEGER,
  created_by TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX experiments_site ON experiments (site_id, status);
-- An arm: the control (variant_id NULL: the zone's default content) or a variant, with its weight.
CREATE TABLE experiment_arms (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL,
  experiment_id TEXT NOT NULL REFERENCES experiments(id),
  label TEXT NOT NULL,
  is_control INTEGER NOT NULL DEFAULT 0,
  variant_id TEXT REFERENCES variants(id),
  weight REAL NOT NULL,
  position INTEGER NOT NULL
);
CREATE INDEX experiment_arms_experiment ON experiment_arms (experiment_id, position);
-- Site overrides: personalization_off (page_id), pin_zone (zone_id + variant_id, for everyone),
-- force_arm (experiment_id + arm_id + visitor_id, for QA). Lifted overrides stay as history.
CREATE TABLE overrides (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('personalization_off','pin_zone','force_arm')),
  page_id TEXT,
  zone_id TEXT,
  variant_id TEXT,
  experiment_id TEXT,
  arm_id TEXT,
  visitor_id TEXT,
  note TEXT,
  set_by TEXT NOT NULL,
  set_at INTEGER NOT NULL,
  lifted_by TEXT,
  lifted_at INTEGER
);
CREATE INDEX overrides_site ON overrides (site_id, lifted_at);
-- What a decision showed: one row per visitor, zone and decision (variant NULL: the zone default;
-- holdout 1: the visitor is in the site's holdout and saw defaults).
CREATE TABLE exposures (
  id INTEGER PRIMARY KEY,
  site_id TEXT NOT NULL,
  visitor_id TEXT NOT NULL,
  profile_id TEXT,
  zone_id TEXT NOT NULL,
  variant_id TEXT,
  experiment_id TEXT,
  arm_id TEXT,
  holdout INTEGER NOT NULL DEFAULT 0,
  url TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX exposures_experiment ON exposures (experiment_id, arm_id, visitor_id);
CREATE INDEX exposures_site ON exposures (site_id, created_at);
CREATE INDEX exposures_visitor ON exposures (site_id, visitor_id, created_at);
`,
  },
  {
    version: 13,
    name: 'page generation jobs and revisions; sitemap crawls and crawled URL state',
    sql: `
-- Page generation: a job (generate, or restore of an old revision) and the revisions it lands.
-- segment_key is the segment id, or '' for everyone (so revision numbers are unique per page and audience).
CREATE TABLE generation_jobs (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL,
  page_id TEXT NOT NULL REFERENCES pages(id),
  segment_id TEXT,
  kind TEXT NOT NULL CHECK (kind IN ('generate','restore')),
  generator TEXT NOT NULL,
  template TEXT NOT NULL DEFAULT '{}',
  seed TEXT NOT NULL DEFAULT '',
  restore_revision_id TEXT,
  state TEXT NOT NULL CHECK (state IN ('queued','running','finished','failed')),
  error TEXT,
  revision_id TEXT,
  sections_generated INTEGER NOT NULL DEFAULT 0,
  sections_unchanged INTEGER NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  lease_until INTEGER NOT NULL DEFAULT 0,
  requested_by TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  started_at INTEGER,
  finished_at INTEGER
);
CREATE INDEX generation_jobs_site ON generation_jobs (site_id, created_at);
CREATE INDEX generation_jobs_state ON generation_jobs (state, lease_until);
CREATE TABLE page_revisions (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL,
  page_id TEXT NOT NULL REFERENCES pages(id),
  segment_id TEXT,
  segment_key TEXT NOT NULL,
  number INTEGER NOT NULL,
  generation_id TEXT NOT NULL,
  restored_from TEXT,
  sections TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  UNIQUE (page_id, segment_key, number)
);
CREATE INDEX page_revisions_site ON page_revisions (site_id, page_id);
-- Content blocks written by generation: not material for later generations (a generator would feed on its own output).
CREATE TABLE generated_blocks (
  content_id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL,
  generation_id TEXT NOT NULL
);
CREATE INDEX generated_blocks_site ON generated_blocks (site_id);
-- Sitemap crawls and the URL state they keep per site (the newest crawl that listed a URL owns its row).
CREATE TABLE crawls (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL,
  requested_sitemap_url TEXT,
  origin TEXT NOT NULL,
  sitemap_url TEXT,
  max_urls INTEGER NOT NULL,
  fetch_pages INTEGER NOT NULL DEFAULT 1,
  timeout_ms INTEGER NOT NULL,
  allow_private INTEGER NOT NULL DEFAULT 0,
  state TEXT NOT NULL CHECK (state IN ('queued','running','finished','failed')),
  error TEXT,
  truncated INTEGER NOT NULL DEFAULT 0,
  complete INTEGER NOT NULL DEFAULT 0,
  warnings TEXT NOT NULL DEFAULT '[]',
  sitemaps_fetched INTEGER NOT NULL DEFAULT 0,
  urls_found INTEGER NOT NULL DEFAULT 0,
  urls_crawled INTEGER NOT NULL DEFAULT 0,
  urls_failed INTEGER NOT NULL DEFAULT 0,
  urls_disallowed INTEGER NOT NULL DEFAULT 0,
  urls_skipped INTEGER NOT NULL DEFAULT 0,
  urls_new INTEGER NOT NULL DEFAULT 0,
  urls_changed INTEGER NOT NULL DEFAULT 0,
  urls_unchanged INTEGER NOT NULL DEFAULT 0,
  urls_removed INTEGER NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  lease_until INTEGER NOT NULL DEFAULT 0,
  requested_by TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  started_at INTEGER,
  finished_at INTEGER
);
CREATE INDEX crawls_site ON crawls (site_id, created_at);
CREATE INDEX crawls_state ON crawls (state, lease_until);
CREATE TABLE crawl_urls (
  site_id TEXT NOT NULL,
  url TEXT NOT NULL,
  page_id TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('new','changed','unchanged','gone')),
  lastmod TEXT,
  content_hash TEXT,
  fetch_outcome TEXT NOT NULL CHECK (fetch_outcome IN ('ok','failed','disallowed','skipped')),
  http_status INTEGER,
  fetch_error TEXT,
  first_crawl_id TEXT NOT NULL,
  last_crawl_id TEXT NOT NULL,
  first_seen_at INTEGER NOT NULL,
  last_seen_at INTEGER NOT NULL,
  gone_at INTEGER,
  PRIMARY KEY (site_id, url)
);
CREATE INDEX crawl_urls_crawl ON crawl_urls (site_id, last_crawl_id, state);
`,
  },
  {
    version: 14,
    name: 'funnels, the weekly stall pass (findings, runs) and the inbox of experiment proposals',
    sql: `
-- A funnel: an ordered list of 2..10 steps (JSON: key, label, kind page|event, match + pattern or event_type).
CREATE TABLE funnels (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL,
  name TEXT NOT NULL,
  steps TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  UNIQUE (site_id, name)
);
-- One finding per site, funnel step, cohort and ISO week: the unique key makes the pass idempotent
-- (a second run, or a second instance, inserts nothing and so files nothing).
CREATE TABLE stall_findings (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL,
  funnel_id TEXT NOT NULL,
  step_position INTEGER NOT NULL,
  step_key TEXT NOT NULL,
  cohort_key TEXT NOT NULL,
  cohort_label TEXT NOT NULL,
  iso_week TEXT NOT NULL,
  week_start INTEGER NOT NULL,
  baseline_weeks INTEGER NOT NULL,
  pass_rate REAL NOT NULL,
  baseline_pass_rate REAL NOT NULL,
  sessions INTEGER NOT NULL,
  stalled INTEGER NOT NULL,
  baseline_sessions INTEGER NOT NULL,
  baseline_stalled INTEGER NOT NULL,
  z REAL NOT NULL,
  p_value REAL NOT NULL,
  value_per_week REAL,
  currency TEXT NOT NULL,
  proposed_action TEXT NOT NULL,
  inbox_item_id TEXT NOT NULL,
  proposal_id TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  UNIQUE (site_id, funnel_id, step_position, cohort_key, iso_week)
);
CREATE INDEX stall_findings_site ON stall_findings (site_id, created_at);
-- A proposed layout test (what inbox_approve turns into a draft experiment).
CREATE TABLE experiment_proposals (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL,
  finding_id TEXT NOT NULL,
  name TEXT NOT NULL,
  page_match_type TEXT CHECK (page_match_type IN ('exact','prefix','glob')),
  page_pattern TEXT,
  hypothesis TEXT NOT NULL,
  primary_metric TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
-- Proposals awaiting a human: pending until approved (experiment_id: the draft created) or dismissed (with a reason).
CREATE TABLE inbox_items (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('stall')),
  title TEXT NOT NULL,
  proposed_action TEXT NOT NULL,
  finding_id TEXT NOT NULL,
  proposal_id TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending','approved','dismissed')),
  decided_by TEXT,
  decided_at INTEGER,
  dismiss_reason TEXT,
  experiment_id TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX inbox_items_site ON inbox_items (site_id, status, created_at);
-- Weeks the scheduled pass has completed per site (the worker runs each site once per ISO week).
CREATE TABLE stall_runs (
  site_id TEXT NOT NULL,
  iso_week TEXT NOT NULL,
  findings INTEGER NOT NULL,
  ran_at INTEGER NOT NULL,
  PRIMARY KEY (site_id, iso_week)
);
`,
  },
  {
    version: 15,
    name: 'leads pipeline (owner, notes, tasks, calls) and triggered messages (triggers, endpoints, fires); contacted becomes working',
    sql: `
ALTER TABLE leads ADD COLUMN owner_id TEXT;
ALTER TABLE leads ADD COLUMN status_changed_at INTEGER;
UPDATE leads SET status = 'working' WHERE status = 'contacted';
CREATE INDEX leads_status ON leads (site_id, status, created_at);
CREATE INDEX leads_owner ON leads (site_id, owner_id);
-- Notes on a lead (free text by a user or token).
CREATE TABLE lead_notes (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL,
  lead_id TEXT NOT NULL,
  body TEXT NOT NULL,
  author TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX lead_notes_lead ON lead_notes (lead_id, created_at);
-- Follow-up tasks of a lead (call_id: the call whose callback created it).
CREATE TABLE lead_tasks (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL,
  lead_id TEXT NOT NULL,
  title TEXT NOT NULL,
  due_at INTEGER NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('open','done')),
  call_id TEXT,
  created_by TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  done_at INTEGER,
  done_by TEXT
);
CREATE INDEX lead_tasks_site ON lead_tasks (site_id, state, due_at);
CREATE INDEX lead_tasks_lead ON lead_tasks (lead_id, state, due_at);
-- Voice calls mapped into the pipeline. The transcript lives only here, on the lead's record.
CREATE TABLE lead_calls (
  site_id TEXT NOT NULL,
  id TEXT NOT NULL,
  lead_id TEXT NOT NULL,
  profile_id TEXT NOT NULL,
  started_at INTEGER NOT NULL,
  ended_at INTEGER NOT NULL,
  outcome TEXT NOT NULL,
  notes TEXT,
  transcript TEXT,
  callback_at INTEGER,
  task_id TEXT,
  status_before TEXT NOT NULL,
  status_after TEXT NOT NULL,
  source TEXT NOT NULL CHECK (source IN ('tool','import')),
  recorded_by TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (site_id, id)
);
CREATE INDEX lead_calls_lead ON lead_calls (lead_id, started_at);
CREATE INDEX lead_calls_site ON lead_calls (site_id, started_at);
-- Triggered messages: what fires (segment entered, event type, score reached), the message, cap and quiet hours.
CREATE TABLE triggers (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL,
  name TEXT NOT NULL,
  on_kind TEXT NOT NULL CHECK (on_kind IN ('segment_entered','event','score')),
  on_value TEXT,
  score_min REAL,
  message_id TEXT NOT NULL,
  message_values TEXT NOT NULL DEFAULT '{}',
  include_email INTEGER NOT NULL DEFAULT 0,
  cap_count INTEGER NOT NULL,
  cap_window_ms INTEGER NOT NULL,
  quiet_start TEXT,
  quiet_end TEXT,
  enabled INTEGER NOT NULL DEFAULT 0,
  capped_count INTEGER NOT NULL DEFAULT 0,
  created_by TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX triggers_on ON triggers (site_id, on_kind, on_value);
-- The site's message endpoints: live (signed with the secret, or the site_id without one) and test.
CREATE TABLE trigger_endpoints (
  site_id TEXT PRIMARY KEY,
  url TEXT,
  secret_enc TEXT,
  test_url TEXT,
  updated_by TEXT NOT NULL,
  updated_at INTEGER NOT NULL
);
-- Fires: one message for one profile, delivered at least once by the trigger worker (id stable across retries).
CREATE TABLE trigger_fires (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL,
  trigger_id TEXT NOT NULL,
  profile_id TEXT NOT NULL,
  mode TEXT NOT NULL CHECK (mode IN ('live','test')),
  reason TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending','delivered','failed','cancelled')),
  due_at INTEGER NOT NULL,
  deferred INTEGER NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER NOT NULL,
  last_status INTEGER,
  last_error TEXT,
  created_by TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  delivered_at INTEGER
);
CREATE INDEX trigger_fires_due ON trigger_fires (state, next_attempt_at);
CREATE INDEX trigger_fires_cap ON trigger_fires (trigger_id, profile_id, created_at);
CREATE INDEX trigger_fires_site ON trigger_fires (site_id, created_at);
CREATE INDEX trigger_fires_profile ON trigger_fires (profile_id);
`,
  },
  {
    version: 16,
    name: 'accounts: explicit company accounts and operator IP ranges',
    sql: `
-- Explicit company accounts of a site, keyed by the normalized company domain (registrable domain of
-- the account website). Accounts also exist without a row here: derived from the corporate email
-- domains of known profiles and from the domains of loaded IP ranges.
CREATE TABLE company_accounts (
  site_id TEXT NOT NULL,
  domain TEXT NOT NULL,
  name TEXT,
  website TEXT,
  created_by TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (site_id, domain)
);
-- Operator-supplied IP ranges (CIDR, normalized to the network address) of companies: anonymous sessions
-- whose IP falls in one are attributed to its company. A load replaces the site's ranges.
CREATE TABLE company_ip_ranges (
  site_id TEXT NOT NULL,
  cidr TEXT NOT NULL,
  domain TEXT NOT NULL,
  name TEXT,
  loaded_at INTEGER NOT NULL,
  PRIMARY KEY (site_id, cidr)
);
CREATE INDEX company_ip_ranges_domain ON company_ip_ranges (site_id, domain);
`,
  },
  {
    version: 17,
    name: 'layout tests: pause reason, guardrail window, who ended and shipped; Core Web Vitals per test arm',
    sql: `
ALTER TABLE experiments ADD COLUMN pause_reason TEXT;
ALTER TABLE experiments ADD COLUMN guardrail_since INTEGER NOT NULL DEFAULT 0;
ALTER TABLE experiments ADD COLUMN ended_by TEXT;
ALTER TABLE experiments ADD COLUMN shipped_by TEXT;
-- One web_vitals page view of a visitor exposed to a running test, counted for the arm of that exposure
-- (no visitor id: the guardrail needs only the values).
CREATE TABLE experiment_vitals (
  id INTEGER PRIMARY KEY,
  site_id TEXT NOT NULL,
  experiment_id TEXT NOT NULL,
  arm_id TEXT NOT NULL,
  lcp REAL,
  inp REAL,
  cls REAL,
  created_at INTEGER NOT NULL
);
CREATE INDEX experiment_vitals_arm ON experiment_vitals (experiment_id, arm_id, created_at);
`,
  },
  {
    version: 18,
    name: 'web experience: decision-cache version per site (bumped by triggers), variant renders for the watchdog',
    sql: `
-- The version of a site's web-experience configuration: every change of pages, content, zones, variants,
-- placements, experiments, arms, overrides or the holdout share bumps it (triggers, so changes made by any
-- code path or process count). The decision cache keeps a site's snapshot while its version is unchanged.
CREATE TABLE web_versions (
  site_id TEXT PRIMARY KEY,
  version INTEGER NOT NULL
);
CREATE TRIGGER web_bump_pages_insert AFTER INSERT ON pages BEGIN INSERT INTO web_versions (site_id, version) VALUES (NEW.site_id, 1) ON CONFLICT (site_id) DO UPDATE SET version = version + 1; END;
CREATE TRIGGER web_bump_pages_update AFTER UPDATE ON pages BEGIN INSERT INTO web_versions (site_id, version) VALUES (NEW.site_id, 1) ON CONFLICT (site_id) DO UPDATE SET version = version + 1; END;
CREATE TRIGGER web_bump_pages_delete AFTER DELETE ON pages BEGIN INSERT INTO web_versions (site_id, version) VALUES (OLD.site_id, 1) ON CONFLICT (site_id) DO UPDATE SET version = version + 1; END;
CREATE TRIGGER web_bump_content_blocks_insert AFTER INSERT ON content_blocks BEGIN INSERT INTO web_versions (site_id, version) VALUES (NEW.site_id, 1) ON CONFLICT (site_id) DO UPDATE SET version = version + 1; END;
CREATE TRIGGER web_bump_content_blocks_update AFTER UPDATE ON content_blocks BEGIN INSERT INTO web_versions (site_id, version) VALUES (NEW.site_id, 1) ON CONFLICT (site_id) DO UPDATE SET version = version + 1; END;
CREATE TRIGGER web_bump_content_blocks_delete AFTER DELETE ON content_blocks BEGIN INSERT INTO web_versions (site_id, version) VALUES (OLD.site_id, 1) ON CONFLICT (site_id) DO UPDATE SET version = version + 1; END;
CREATE TRIGGER web_bump_zones_insert AFTER INSERT ON zones BEGIN INSERT INTO web_versions (site_id, version) VALUES (NEW.site_id, 1) ON CONFLICT (site_id) DO UPDATE SET version = version + 1; END;
CREATE TRIGGER web_bump_zones_update AFTER UPDATE ON zones BEGIN INSERT INTO web_versions (site_id, version) VALUES (NEW.site_id, 1) ON CONFLICT (site_id) DO UPDATE SET version = version + 1; END;
CREATE TRIGGER web_bump_zones_delete AFTER DELETE ON zones BEGIN INSERT INTO web_versions (site_id, version) VALUES (OLD.site_id, 1) ON CONFLICT (site_id) DO UPDATE SET version = version + 1; END;
CREATE TRIGGER web_bump_variants_insert AFTER INSERT ON variants BEGIN INSERT INTO web_versions (site_id, version) VALUES (NEW.site_id, 1) ON CONFLICT (site_id) DO UPDATE SET version = version + 1; END;
CREATE TRIGGER web_bump_variants_update AFTER UPDATE ON variants BEGIN INSERT INTO web_versions (site_id, version) VALUES (NEW.site_id, 1) ON CONFLICT (site_id) DO UPDATE SET version = version + 1; END;
CREATE TRIGGER web_bump_variants_delete AFTER DELETE ON variants BEGIN INSERT INTO web_versions (site_id, version) VALUES (OLD.site_id, 1) ON CONFLICT (site_id) DO UPDATE SET version = version + 1; END;
CREATE TRIGGER web_bump_placements_insert AFTER INSERT ON placements BEGIN INSERT INTO web_versions (site_id, version) VALUES (NEW.site_id, 1) ON CONFLICT (site_id) DO UPDATE SET version = version + 1; END;
CREATE TRIGGER web_bump_placements_update AFTER UPDATE ON placements BEGIN INSERT INTO web_versions (site_id, version) VALUES (NEW.site_id, 1) ON CONFLICT (site_id) DO UPDATE SET version = version + 1; END;
CREATE TRIGGER web_bump_placements_delete AFTER DELETE ON placements BEGIN INSERT INTO web_versions (site_id, version) VALUES (OLD.site_id, 1) ON CONFLICT (site_id) DO UPDATE SET version = version + 1; END;
CREATE TRIGGER web_bump_experiments_insert AFTER INSERT ON experiments BEGIN INSERT INTO web_versions (site_id, version) VALUES (NEW.site_id, 1) ON CONFLICT (site_id) DO UPDATE SET version = version + 1; END;
CREATE TRIGGER web_bump_experiments_update AFTER UPDATE ON experiments BEGIN INSERT INTO web_versions (site_id, version) VALUES (NEW.site_id, 1) ON CONFLICT (site_id) DO UPDATE SET version = version + 1; END;
CREATE TRIGGER web_bump_experiments_delete AFTER DELETE ON experiments BEGIN INSERT INTO web_versions (site_id, version) VALUES (OLD.site_id, 1) ON CONFLICT (site_id) DO UPDATE SET version = version + 1; END;
CREATE TRIGGER web_bump_experiment_arms_insert AFTER INSERT ON experiment_arms BEGIN INSERT INTO web_versions (site_id, version) VALUES (NEW.site_id, 1) ON CONFLICT (site_id) DO UPDATE SET version = version + 1; END;
CREATE TRIGGER web_bump_experiment_arms_update AFTER UPDATE ON experiment_arms BEGIN INSERT INTO web_versions (site_id, version) VALUES (NEW.site_id, 1) ON CONFLICT (site_id) DO UPDATE SET version = version + 1; END;
CREATE TRIGGER web_bump_experiment_arms_delete AFTER DELETE ON experiment_arms BEGIN INSERT INTO web_versions (site_id, version) VALUES (OLD.site_id, 1) ON CONFLICT (site_id) DO UPDATE SET version = version + 1; END;
CREATE TRIGGER web_bump_overrides_insert AFTER INSERT ON overrides BEGIN INSERT INTO web_versions (site_id, version) VALUES (NEW.site_id, 1) ON CONFLICT (site_id) DO UPDATE SET version = version + 1; END;
CREATE TRIGGER web_bump_overrides_update AFTER UPDATE ON overrides BEGIN INSERT INTO web_versions (site_id, version) VALUES (NEW.site_id, 1) ON CONFLICT (site_id) DO UPDATE SET version = version + 1; END;
CREATE TRIGGER web_bump_overrides_delete AFTER DELETE ON overrides BEGIN INSERT INTO web_versions (site_id, version) VALUES (OLD.site_id, 1) ON CONFLICT (site_id) DO UPDATE SET version = version + 1; END;
CREATE TRIGGER web_bump_sites_holdout AFTER UPDATE OF holdout_share ON sites BEGIN INSERT INTO web_versions (site_id, version) VALUES (NEW.id, 1) ON CONFLICT (site_id) DO UPDATE SET version = version + 1; END;
-- Renders the browser tag reports (POST /api/events type variant_render); the watchdog reads a sliding window.
CREATE TABLE variant_renders (
  id INTEGER PRIMARY KEY,
  site_id TEXT NOT NULL,
  variant_id TEXT NOT NULL,
  ok INTEGER NOT NULL,
  error TEXT,
  created_at INTEGER NOT NULL
);
CREATE INDEX variant_renders_variant ON variant_renders (variant_id, created_at);
`,
  },
  {
    version: 19,
    name: 'campaigns: components that go live together, and the record of every launch, pause and close',
    sql: `
-- status: draft (never launched) -> live (launch) <-> paused (pause / launch again) -> closed (close; terminal).
-- live_since: start of the current live period (NULL unless live); live_ms: time live in finished periods.
-- outcome: the JSON snapshot taken at close (exposures, conversions, revenue, lift).
CREATE TABLE campaigns (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL,
  name TEXT NOT NULL,
  description TEXT,
  status TEXT NOT NULL CHECK (status IN ('draft','live','paused','closed')),
  created_by TEXT NOT NULL,
  first_launched_at INTEGER,
  live_since INTEGER,
  live_ms INTEGER NOT NULL DEFAULT 0,
  paused_at INTEGER,
  closed_at INTEGER,
  closed_by TEXT,
  outcome TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX campaigns_site ON campaigns (site_id, created_at);
-- A component: a segment, variant, placement, experiment (layout test) or trigger of the site, by id.
-- required 0: a failed step of it is recorded but does not roll the launch back.
CREATE TABLE campaign_components (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL,
  campaign_id TEXT NOT NULL REFERENCES campaigns(id),
  kind TEXT NOT NULL CHECK (kind IN ('segment','variant','placement','experiment','trigger')),
  ref_id TEXT NOT NULL,
  required INTEGER NOT NULL DEFAULT 1,
  position INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  UNIQUE (campaign_id, kind, ref_id)
);
-- Every launch, pause and close attempt (seq: 1, 2, ... per campaign) with its per-component step outcomes (JSON); a launch whose
-- required step failed is kept with result rolled_back (none of its steps stayed applied).
CREATE TABLE campaign_runs (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL,
  campaign_id TEXT NOT NULL REFERENCES campaigns(id),
  seq INTEGER NOT NULL,
  action TEXT NOT NULL CHECK (action IN ('launch','pause','close')),
  result TEXT NOT NULL CHECK (result IN ('applied','rolled_back')),
  steps TEXT NOT NULL,
  actor TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX campaign_runs_campaign ON campaign_runs (campaign_id, seq);
`,
  },
  {
    version: 20,
    name: 'webhooks: per-destination signing mode (svc or Standard Webhooks) and secret rotation with a grace period',
    expand: true,
    sql: `
-- signing_mode: svc sends X-SVC-Signature only; standard adds webhook-id, webhook-timestamp and webhook-signature.
-- previous_secret_enc: the sealed key before the last rotation (the site_id when there was no secret), which
-- still signs deliveries until previous_secret_expires_at (ms); the janitor clears both once that has passed.
ALTER TABLE destinations ADD COLUMN signing_mode TEXT NOT NULL DEFAULT 'svc' CHECK (signing_mode IN ('svc','standard'));
ALTER TABLE destinations ADD COLUMN previous_secret_enc TEXT;
ALTER TABLE destinations ADD COLUMN previous_secret_expires_at INTEGER;
ALTER TABLE destinations ADD COLUMN secret_rotated_at INTEGER;
`,
  },
  {
    version: 21,
    name: 'MCP audit rows record the X-Request-Id of the HTTP request that made the call',
    expand: true,
    sql: `
ALTER TABLE mcp_audit ADD COLUMN request_id TEXT;
`,
  },
  {
    version: 22,
    name: 'propose-only drafts: segments in draft, changes awaiting approval, and their inbox items',
    sql: `
-- draft: proposed by a propose-only token; no members, invisible to decisions and the profile REST API until approved.
ALTER TABLE segments ADD COLUMN status TEXT NOT NULL DEFAULT 'live' CHECK (status IN ('draft','live'));
-- A change that would alter who sees what, proposed by a propose-only token: kind (segment_create, placement_update, ...),
-- the object it changes (target_id), exactly what was proposed (payload, JSON), pending until a person approves (applied
-- as proposed; result: JSON of what it did) or rejects it.
CREATE TABLE drafts (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  target_id TEXT NOT NULL,
  payload TEXT NOT NULL,
  summary TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending','approved','rejected')),
  proposed_by TEXT NOT NULL,
  decided_by TEXT,
  decided_at INTEGER,
  reason TEXT,
  result TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX drafts_site ON drafts (site_id, status, created_at);
CREATE INDEX drafts_target ON drafts (site_id, target_id, status);
-- The inbox holds drafts too (kind draft, draft_id): rebuilt because SQLite cannot relax a CHECK or NOT NULL in place.
DROP INDEX inbox_items_site;
ALTER TABLE inbox_items RENAME TO inbox_items_old;
CREATE TABLE inbox_items (
  id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('stall','draft')),
  title TEXT NOT NULL,
  proposed_action TEXT NOT NULL,
  finding_id TEXT,
  proposal_id TEXT,
  draft_id TEXT,
  status TEXT NOT NULL CHECK (status IN ('pending','approved','dismissed')),
  decided_by TEXT,
  decided_at INTEGER,
  dismiss_reason TEXT,
  experiment_id TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
INSERT INTO inbox_items (id, site_id, kind, title, proposed_action, finding_id, proposal_id, draft_id, status, decided_by, decided_at,
  dismiss_reason, experiment_id, created_at, updated_at)
  SELECT id, site_id, kind, title, proposed_action, finding_id, proposal_id, NULL, status, decided_by, decided_at,
  dismiss_reason, experiment_id, created_at, updated_at FROM inbox_items_old;
DROP TABLE inbox_items_old;
CREATE INDEX inbox_items_site ON inbox_items (site_id, status, created_at);
CREATE INDEX inbox_items_draft ON inbox_items (draft_id);
`,
  },
  {
    version: 23,
    expand: true,
    name: 'company audiences: the company of each profile (corporate email domain, loaded IP range) for the company rule node',
    sql: `
-- The company of a live profile, as the company rule node reads it: the registrable domain of its corporate
-- email (free mail never counts) and the domain of the loaded IP range holding the address of its most recent
-- session that falls in one. Kept by the domain layer as identities, sessions and ranges change; a row exists
-- only while one of the two is known.
CREATE TABLE profile_companies (
  profile_id TEXT PRIMARY KEY,
  site_id TEXT NOT NULL,
  email_domain TEXT,
  ip_domain TEXT,
  updated_at INTEGER NOT NULL
);
CREATE INDEX profile_companies_email ON profile_companies (site_id, email_domain);
CREATE INDEX profile_companies_ip ON profile_companies (site_id, ip_domain);
-- Sites whose profile_companies rows were derived from all their data at least once (profiles written before
-- the table existed, or by svc seed, are indexed when a company rule is first used).
CREATE TABLE company_index_state (
  site_id TEXT PRIMARY KEY,
  built_at INTEGER NOT NULL
);
`,
  },
  {
    version: 24,
    expand: true,
    name: 'browser tag: consent and privacy-signal settings, allowed origins and URL parameters per site; idempotency keys of ingestion',
    sql: `
-- Site settings the browser tag and the CORS check of the public paths read. allowed_origins and url_params
-- are JSON arrays of strings; url_params entries may end in * (a prefix).
ALTER TABLE sites ADD COLUMN consent_required INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sites ADD COLUMN honour_privacy_signals INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sites ADD COLUMN allowed_origins TEXT NOT NULL DEFAULT '[]';
ALTER TABLE sites ADD COLUMN url_params TEXT NOT NULL DEFAULT '["utm_*"]';
-- One ingestion request per (site, Idempotency-Key) within 24 hours: the answer given the first time.
CREATE TABLE idempotency_keys (
  site_id TEXT NOT NULL,
  key TEXT NOT NULL,
  path TEXT NOT NULL,
  status INTEGER NOT NULL,
  response TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (site_id, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
`,
  },
  {
    version: 25,
    expand: true,
    name: 'exposures: the experiment and visitor indexes hold only exposures to a test (partial), so a decision writes two index entries less per zone outside tests',
    sql: `
-- Every query through these indexes names a test (experiment_id = ?, IS NOT NULL, or a join on it): the rows of
-- zones outside tests (most of them) were inserted at random places of both indexes for nothing. Expand-only:
-- queries do not name indexes, so the release before this one runs unchanged against it.
DROP INDEX exposures_experiment;
CREATE INDEX exposures_experiment ON exposures (experiment_id, arm_id, visitor_id) WHERE experiment_id IS NOT NULL;
DROP INDEX exposures_visitor;
CREATE INDEX exposures_visitor ON exposures (site_id, visitor_id, created_at) WHERE experiment_id IS NOT NULL;
`,
  },
  {
    version: 26,
    expand: true,
    name: 'profile snapshots: the by-profile indexes of identities, identity hashes, segment members and events hold every column a snapshot reads of them',
    sql: `
-- A profile snapshot (GET /profile, the MCP profile tools) reads a profile's identities, hashes, segments and
-- event counts through these indexes, then looked up every row in its table for the columns the index lacked
-- (created_at, since, type): one random page read per row at a million profiles. Each index keeps its name and its
-- leading column and now covers those reads (identities, identity_hashes and segment_members are WITHOUT ROWID:
-- their indexes carry the primary key columns). Still one index per table, so writes insert as many entries.
-- sessions (last_seen moves on every event), conversions and scores (a row or two per profile) are left as they
-- were. Expand-only: queries do not name indexes, so the release before this one runs unchanged against it.
DROP INDEX identities_profile;
CREATE INDEX identities_profile ON identities (profile_id, kind, created_at);
DROP INDEX identity_hashes_profile;
CREATE INDEX identity_hashes_profile ON identity_hashes (profile_id, kind, created_at);
DROP INDEX segment_members_profile;
CREATE INDEX segment_members_profile ON segment_members (profile_id, segment_id, since);
DROP INDEX events_profile;
CREATE INDEX events_profile ON events (profile_id, ts, type);
`,
  },
  {
    version: 27,
    expand: true,
    name: 'first arms: the arm each visitor first saw in each test, kept apart from the exposures (a decision reads one row per test instead of its every exposure)',
    sql: `
-- A decision read every exposure of the visitor to a test to find the first arm of each (the lowest id): the read
-- grew with a returning visitor's history. first_arms holds that arm, one row per visitor and test, written by a
-- trigger in the statement that inserts the exposure (the first insert wins, later ones are ignored), so every
-- writer of exposures keeps it, the release before this one included (expand-only: it adds a table and a trigger).
-- The backfill takes each visitor's lowest-id exposure to each test, as the read did.
CREATE TABLE first_arms (
  site_id TEXT NOT NULL,
  visitor_id TEXT NOT NULL,
  experiment_id TEXT NOT NULL,
  arm_id TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (site_id, visitor_id, experiment_id)
) WITHOUT ROWID;
INSERT OR IGNORE INTO first_arms (site_id, visitor_id, experiment_id, arm_id, created_at)
  SELECT site_id, visitor_id, experiment_id, arm_id, created_at FROM exposures
   WHERE experiment_id IS NOT NULL AND arm_id IS NOT NULL ORDER BY id;
CREATE TRIGGER first_arm AFTER INSERT ON exposures
  WHEN NEW.experiment_id IS NOT NULL AND NEW.arm_id IS NOT NULL
BEGIN
  INSERT OR IGNORE INTO first_arms (site_id, visitor_id, experiment_id, arm_id, created_at)
    VALUES (NEW.site_id, NEW.visitor_id, NEW.experiment_id, NEW.arm_id, NEW.created_at);
END;
`,
  },
  {
    version: 28,
    expand: true,
    name: 'first arms: the trigger ignores a visitor and test it already holds by an upsert (DO NOTHING) instead of INSERT OR IGNORE, so an exposure insert may say OR FAIL',
    sql: `
-- The same rows as before: a visitor and test already in first_arms is left as it is (the first insert wins), and
-- nothing else can fail (the WHEN clause and the exposures' NOT NULL columns give every value). What changes is
-- what an outer conflict clause does to it: SQLite applies the clause of the statement that fires a trigger to the
-- trigger's own statements, so under INSERT OR FAIL INTO exposures the OR IGNORE here became OR FAIL (a returning
-- visitor failed), while an upsert's DO NOTHING holds for its target whatever the outer clause. svc inserts the
-- exposures of a group's decisions OR FAIL (ExposuresRepo.insertDecisions), and a multi-row insert that cannot
-- abort needs no statement journal (SQLite copies every page the statement changes into one otherwise).
-- Expand-only: the release before this one inserts as it did and gets the same first arms.
DROP TRIGGER first_arm;
CREATE TRIGGER first_arm AFTER INSERT ON exposures
  WHEN NEW.experiment_id IS NOT NULL AND NEW.arm_id IS NOT NULL
BEGIN
  INSERT INTO first_arms (site_id, visitor_id, experiment_id, arm_id, created_at)
    VALUES (NEW.site_id, NEW.visitor_id, NEW.experiment_id, NEW.arm_id, NEW.created_at)
    ON CONFLICT (site_id, visitor_id, experiment_id) DO NOTHING;
END;
`,
  },
  {
    version: 29,
    expand: true,
    name: 'first arms: what experiment results need (the first exposure outside the holdout and the largest profile id of the exposures), so results, the visitor arm and web vitals read them instead of the exposures',
    sql: `
-- Experiment results ranked every exposure of a test (exposures_experiment) and web vitals and the visitor arm read the
-- visitor's exposures (exposures_visitor); two partial indexes that cost every exposure to a test two random index
-- inserts (docs/scale.md). first_arms now holds what they read: per visitor and test, the exposure outside the
-- holdout (holdout = 0) that is first by (created_at, arm_id), as results rank them, and the largest profile id of
-- the visitor's exposures to the test outside the holdout. The trigger keeps both with an upsert that writes only
-- when an earlier exposure or a larger profile id comes (the common case, a returning visitor, writes nothing).
-- Holdout exposures (a force_arm override on a visitor in the holdout: the only holdout exposure with an arm) no
-- longer give a first arm: results never counted them, and the visitor arm (source exposure) did not see them.
-- The table is rebuilt from the exposures so the rows already stored follow the same rule.
-- Expand-only: a column with no default, a trigger every writer fires (the release before this one included), and
-- the release before reads the same columns as before.
ALTER TABLE first_arms ADD COLUMN profile_id TEXT;
DELETE FROM first_arms;
INSERT INTO first_arms (site_id, visitor_id, experiment_id, arm_id, created_at, profile_id)
  SELECT site_id, visitor_id, experiment_id, arm_id, created_at, p FROM (
    SELECT site_id, visitor_id, experiment_id, arm_id, created_at,
      MAX(profile_id) OVER (PARTITION BY site_id, visitor_id, experiment_id) AS p,
      ROW_NUMBER() OVER (PARTITION BY site_id, visitor_id, experiment_id ORDER BY created_at, arm_id) AS rn
     FROM exposures WHERE experiment_id IS NOT NULL AND arm_id IS NOT NULL AND holdout = 0)
   WHERE rn = 1;
CREATE INDEX first_arms_experiment ON first_arms (experiment_id);
DROP TRIGGER first_arm;
CREATE TRIGGER first_arm AFTER INSERT ON exposures
  WHEN NEW.experiment_id IS NOT NULL AND NEW.arm_id IS NOT NULL AND NEW.holdout = 0
BEGIN
  INSERT INTO first_arms (site_id, visitor_id, experiment_id, arm_id, created_at, profile_id)
    VALUES (NEW.site_id, NEW.visitor_id, NEW.experiment_id, NEW.arm_id, NEW.created_at, NEW.profile_id)
    ON CONFLICT (site_id, visitor_id, experiment_id) DO UPDATE SET
      arm_id = CASE WHEN (excluded.created_at, excluded.arm_id) < (first_arms.created_at, first_arms.arm_id) THEN excluded.arm_id ELSE first_arms.arm_id END,
      created_at = min(excluded.created_at, first_arms.created_at),
      profile_id = CASE WHEN first_arms.profile_id IS NULL OR excluded.profile_id > first_arms.profile_id THEN excluded.profile_id ELSE first_arms.profile_id END
    WHERE (excluded.created_at, excluded.arm_id) < (first_arms.created_at, first_arms.arm_id)
       OR (excluded.profile_id IS NOT NULL AND (first_arms.profile_id IS NULL OR excluded.profile_id > first_arms.profile_id));
END;
`,
  },
  {
    version: 30,
    expand: true,
    name: 'exposures: the experiment and visitor indexes dropped (their readers read first_arms), so an exposure to a test writes two index pages less',
    sql: `
-- Their readers (experiment results, the visitor arm, web vitals) read first_arms since migration 29. An exposure to a
-- test inserted an entry at a random place of each (48 WAL frames a group of 16 decisions against 9 without them,
-- test/bench/exposure-wal-frames.ts). Expand-only: queries do not name indexes; the release before this one reads
-- the exposures by them for results, the visitor arm and web vitals, which now scan the site's exposures
-- (exposures_site) instead: slower while both run, not wrong.
DROP INDEX exposures_experiment;
DROP INDEX exposures_visitor;
`,
  },
];

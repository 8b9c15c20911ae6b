import { z } from 'zod';
import type { ContentRow } from '../../store/content.js';
import type { OverrideRow } from '../../store/overrides.js';
import type { PageRow } from '../../store/pages.js';
import type { PlacementRow } from '../../store/placements.js';
import type { VariantRow } from '../../store/variants.js';
import type { ZoneRow } from '../../store/zones.js';

/** The views of the web experience (pages, zones, content, variants, placements, overrides): one zod schema per entity and its row mapping. */

/** ISO 8601 of a millisecond timestamp column (PostgreSQL may give it as a string); null stays null. */
const iso = (t: number | null): string | null => (t === null ? null : new Date(Number(t)).toISOString());

/** The lifecycle statuses of a variant (see lifecycle.ts). */
export const variantStatus = z.enum(['draft', 'approved', 'published', 'disabled', 'archived']);

export const pageView = z.object({
  id: z.string().describe('Page id (page_...).'),
  name: z.string().describe('Display name.'),
  match_type: z.enum(['exact', 'prefix', 'glob']).describe('How the pattern matches a URL.'),
  pattern: z.string().describe('URL path pattern.'),
  source: z.enum(['manual', 'crawl']).describe('Created by hand or found by a sitemap crawl.'),
  created_at: z.string().describe('ISO 8601.'),
  updated_at: z.string().describe('ISO 8601.'),
});

export const pageOut = (r: PageRow): PageView => ({
  id: r.id,
  name: r.name,
  match_type: r.match_type,
  pattern: r.pattern,
  source: r.source,
  created_at: iso(Number(r.created_at))!,
  updated_at: iso(Number(r.updated_at))!,
});

export const zoneView = z.object({
  id: z.string().describe('Zone id (zone_...).'),
  page_id: z.string().describe('The page the zone is on.'),
  name: z.string().describe('Name, unique on its page.'),
  selector: z.string().describe('CSS selector of the region the browser tag fills.'),
  default_content_id: z.string().nullable().describe('Content shown when nothing else applies; null: the page as served.'),
  created_at: z.string().describe('ISO 8601.'),
  updated_at: z.string().describe('ISO 8601.'),
});

export const zoneOut = (r: ZoneRow): ZoneView => ({
  id: r.id,
  page_id: r.page_id,
  name: r.name,
  selector: r.selector,
  default_content_id: r.default_content_id,
  created_at: iso(Number(r.created_at))!,
  updated_at: iso(Number(r.updated_at))!,
});

export const contentView = z.object({
  id: z.string().describe('Content id (cnt_...).'),
  name: z.string().describe('Display name.'),
  kind: z.enum(['html', 'json']).describe('html (sanitized fragment) or json.'),
  body: z.string().describe('The stored body (sanitized HTML, or compact JSON).'),
  bytes: z.number().int().describe('Size of the body in UTF-8 bytes.'),
  created_at: z.string().describe('ISO 8601.'),
  updated_at: z.string().describe('ISO 8601.'),
});

export const contentOut = (r: ContentRow): ContentView => ({
  id: r.id,
  name: r.name,
  kind: r.kind,
  body: r.body,
  bytes: Buffer.byteLength(r.body, 'utf8'),
  created_at: iso(Number(r.created_at))!,
  updated_at: iso(Number(r.updated_at))!,
});

export const variantView = z.object({
  id: z.string().describe('Variant id (var_...).'),
  zone_id: z.string().describe('The zone it fills.'),
  content_id: z.string().describe('The content it shows.'),
  segment_id: z.string().nullable().describe('The segment it is meant for; null: anyone.'),
  name: z.string().describe('Display name.'),
  status: variantStatus.describe('Lifecycle status.'),
  created_by: z.string().describe('Who created it (token:<id>).'),
  approved_by: z.string().nullable().describe('Who approved it.'),
  approved_at: z.string().nullable().describe('When it was approved, ISO 8601.'),
  published_by: z.string().nullable().describe('Who published it last.'),
  published_at: z.string().nullable().describe('When it was published last, ISO 8601.'),
  disabled_at: z.string().nullable().describe('When it was disabled, ISO 8601.'),
  disabled_reason: z.string().nullable().describe('Why it was disabled (by hand, or the watchdog with its counts).'),
  created_at: z.string().describe('ISO 8601.'),
  updated_at: z.string().describe('ISO 8601.'),
});

export const variantOut = (r: VariantRow): VariantView => ({
  id: r.id,
  zone_id: r.zone_id,
  content_id: r.content_id,
  segment_id: r.segment_id,
  name: r.name,
  status: r.status,
  created_by: r.created_by,
  approved_by: r.approved_by,
  approved_at: iso(r.approved_at),
  published_by: r.published_by,
  published_at: iso(r.published_at),
  disabled_at: iso(r.disabled_at),
  disabled_reason: r.disabled_reason,
  created_at: iso(r.created_at)!,
  updated_at: iso(r.updated_at)!,
});

export const placementView = z.object({
  id: z.string().describe('Placement id (plc_...).'),
  zone_id: z.string().describe('The zone (the variant\u2019s).'),
  variant_id: z.string().describe('The published variant shown.'),
  segment_id: z.string().nullable().describe('The segment it is shown to; null: everyone.'),
  priority: z.number().int().describe('Higher wins among the placements a visitor qualifies for.'),
  enabled: z.boolean().describe('Disabled placements are kept but never applied.'),
  created_at: z.string().describe('ISO 8601.'),
  updated_at: z.string().describe('ISO 8601.'),
});

export const placementOut = (r: PlacementRow): PlacementView => ({
  id: r.id,
  zone_id: r.zone_id,
  variant_id: r.variant_id,
  segment_id: r.segment_id,
  priority: Number(r.priority),
  enabled: Number(r.enabled) === 1,
  created_at: iso(r.created_at)!,
  updated_at: iso(r.updated_at)!,
});

export const overrideView = z.object({
  id: z.string().describe('Override id (ovr_...).'),
  kind: z.enum(['personalization_off', 'pin_zone', 'force_arm']).describe('What the override does.'),
  page_id: z.string().nullable().describe('The page (personalization_off; the zone\u2019s page for pin_zone).'),
  zone_id: z.string().nullable().describe('The pinned zone (pin_zone), or the tested zone (force_arm).'),
  variant_id: z.string().nullable().describe('The pinned variant, or the forced arm\u2019s variant (null: control).'),
  experiment_id: z.string().nullable().describe('The experiment (force_arm).'),
  arm_id: z.string().nullable().describe('The forced arm (force_arm).'),
  visitor_id: z.string().nullable().describe('The forced visitor (force_arm).'),
  note: z.string().nullable().describe('Why it was set.'),
  active: z.boolean().describe('Whether it still applies (not lifted).'),
  set_by: z.string().describe('Who set it (token:<id>).'),
  set_at: z.string().describe('When it was set, ISO 8601.'),
  lifted_by: z.string().nullable().describe('Who lifted it.'),
  lifted_at: z.string().nullable().describe('When it was lifted, ISO 8601.'),
});

export const overrideOut = (r: OverrideRow): OverrideView => ({
  id: r.id,
  kind: r.kind,
  page_id: r.page_id,
  zone_id: r.zone_id,
  variant_id: r.variant_id,
  experiment_id: r.experiment_id,
  arm_id: r.arm_id,
  visitor_id: r.visitor_id,
  note: r.note,
  active: r.lifted_at === null,
  set_by: r.set_by,
  set_at: iso(r.set_at)!,
  lifted_by: r.lifted_by,
  lifted_at: iso(r.lifted_at),
});

/** Where a content block is used: zones showing it by default and variants showing it. */
export const contentUsageView = z.object({
  zones: z.array(z.object({ zone_id: z.string().describe('Zone.'), page_id: z.string().describe('Its page.'), name: z.string().describe('Zone name.') })).describe('Zones showing it by default.'),
  variants: z
    .array(z.object({ variant_id: z.string().describe('Variant.'), zone_id: z.string().describe('Its zone.'), name: z.string().describe('Variant name.'), status: z.string().describe('Variant status.') }))
    .describe('Variants showing it.'),
});

/** A variant's render health over the watchdog window. */
export const renderStatsView = z.object({
  variant_id: z.string().describe('The variant.'),
  status: variantStatus.describe('Its status now.'),
  window_minutes: z.number().int().describe('Length of the window.'),
  window_start: z.string().describe('Start of the window counted, ISO 8601.'),
  renders: z.number().int().describe('Renders in the window.'),
  failures: z.number().int().describe('Failed renders in the window.'),
  failure_rate: z.number().describe('failures / renders (0 without renders).'),
  min_renders: z.number().int().describe('Renders needed before the watchdog acts.'),
  failure_rate_threshold: z.number().describe('Failure rate at or above which it disables the variant.'),
  would_trip: z.boolean().describe('Whether these counts trip the watchdog.'),
  disabled_reason: z.string().nullable().describe('Why it was disabled, if it is.'),
  recent_errors: z.array(z.object({ error: z.string().nullable().describe('Reported error.'), at: z.string().describe('ISO 8601.') })).describe('Up to 10 latest failures.'),
});

export type PageView = z.input<typeof pageView>;
export type ZoneView = z.input<typeof zoneView>;
export type ContentView = z.input<typeof contentView>;
export type VariantView = z.input<typeof variantView>;
export type PlacementView = z.input<typeof placementView>;
export type OverrideView = z.input<typeof overrideView>;
export type ContentUsage = z.input<typeof contentUsageView>;
export type RenderStats = z.input<typeof renderStatsView>;

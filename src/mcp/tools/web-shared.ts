import { z } from 'zod';
import type { Repos } from '../../store/repos.js';
import type { ContentRow, OverrideRow, PageRow, PlacementRow, VariantRow, ZoneRow } from '../../store/web.js';
import { decisionService } from '../../domain/web/decisions.js';
import type { ToolContext } from '../tool.js';
import { iso } from './shared.js';

/** Views and helpers shared by the web-experience tool files (pages, zones, content, variants, placements, overrides). */

/** Who made a change, as recorded in set_by, created_by, approved_by and published_by. */
export const actor = (ctx: ToolContext): string => `token:${ctx.grant.tokenId}`;

/** Runs a change in one write operation, then drops the site's cached decision snapshot. */
export async function change<T>(ctx: ToolContext, fn: (tx: Repos, now: number) => Promise<T>): Promise<T> {
  const out = await ctx.store.write((tx) => fn(tx, Date.now()));
  decisionService(ctx.store).invalidate(ctx.grant.siteId);
  return out;
}

export const idInput = (what: string) => z.string().min(1).max(128).describe(what);
export const nameInput = z.string().trim().min(1).max(200).describe('Display name, 1 to 200 characters.');

export const pageView = z.object({
  id: z.string().describe('Page id (page_...).'),
  name: z.string().describe('Display name.'),
  match_type: z.enum(['exact', 'prefix', 'glob']).describe('How the pattern matches a URL.'),
  pattern: z.string().describe('URL path pattern.'),
  source: z.enum(['manual', 'crawl']).describe('Created by hand or found by a sitemap crawl.'),
  created_at: z.string().describe('ISO 8601.'),
  updated_at: z.string().describe('ISO 8601.'),
});

export const pageOut = (r: PageRow): z.input<typeof pageView> => ({
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

export const zoneOut = (r: ZoneRow): z.input<typeof zoneView> => ({
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

export const contentOut = (r: ContentRow): z.input<typeof contentView> => ({
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
  status: z.enum(['draft', 'approved', 'published', 'disabled', 'archived']).describe('Lifecycle status.'),
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

const isoN = (t: number | null) => iso(t === null ? null : Number(t));

export const variantOut = (r: VariantRow): z.input<typeof variantView> => ({
  id: r.id,
  zone_id: r.zone_id,
  content_id: r.content_id,
  segment_id: r.segment_id,
  name: r.name,
  status: r.status,
  created_by: r.created_by,
  approved_by: r.approved_by,
  approved_at: isoN(r.approved_at),
  published_by: r.published_by,
  published_at: isoN(r.published_at),
  disabled_at: isoN(r.disabled_at),
  disabled_reason: r.disabled_reason,
  created_at: isoN(r.created_at)!,
  updated_at: isoN(r.updated_at)!,
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

export const placementOut = (r: PlacementRow): z.input<typeof placementView> => ({
  id: r.id,
  zone_id: r.zone_id,
  variant_id: r.variant_id,
  segment_id: r.segment_id,
  priority: Number(r.priority),
  enabled: Number(r.enabled) === 1,
  created_at: isoN(r.created_at)!,
  updated_at: isoN(r.updated_at)!,
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

export const overrideOut = (r: OverrideRow): z.input<typeof overrideView> => ({
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
  set_at: isoN(r.set_at)!,
  lifted_by: r.lifted_by,
  lifted_at: isoN(r.lifted_at),
});

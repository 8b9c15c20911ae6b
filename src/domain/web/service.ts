import { AppError } from '../../errors/app-error.js';
import type { Repos } from '../../store/repos.js';
import type {
  ContentKind,
  ContentRow,
  MatchType,
  OverrideRow,
  PageRow,
  PlacementRow,
  VariantRow,
  VariantStatus,
  ZoneRow,
} from '../../store/web.js';
import { nextStatus, servableByArm, servableByPlacement, type VariantAction } from './lifecycle.js';
import { patternProblem } from './url-match.js';
import { prepareContent } from './sanitize.js';

/**
 * The rules of pages, zones, content, variants, placements and overrides. Every
 * function runs inside one write operation (reads and writes through `tx`),
 * scoped to one site; bad input is an AppError and stores nothing.
 */

const notFound = (what: string, id: string) => new AppError('not_found', `no ${what} ${id} in this site`, { id });

export async function requirePage(r: Repos, siteId: string, id: string): Promise<PageRow> {
  const row = await r.web.page(siteId, id);
  if (!row) throw notFound('page', id);
  return row;
}

export async function requireZone(r: Repos, siteId: string, id: string): Promise<ZoneRow> {
  const row = await r.web.zone(siteId, id);
  if (!row) throw notFound('zone', id);
  return row;
}

export async function requireContent(r: Repos, siteId: string, id: string): Promise<ContentRow> {
  const row = await r.web.content(siteId, id);
  if (!row) throw notFound('content', id);
  return row;
}

export async function requireVariant(r: Repos, siteId: string, id: string): Promise<VariantRow> {
  const row = await r.web.variant(siteId, id);
  if (!row) throw notFound('variant', id);
  return row;
}

export async function requirePlacement(r: Repos, siteId: string, id: string): Promise<PlacementRow> {
  const row = await r.web.placement(siteId, id);
  if (!row) throw notFound('placement', id);
  return row;
}

async function requireSegment(r: Repos, siteId: string, id: string | null): Promise<void> {
  if (id !== null && !(await r.segments.get(siteId, id))) throw new AppError('validation_failed', `segment_id: no segment ${id} in this site`, { field: 'segment_id' });
}

// ---- pages ---------------------------------------------------------------

function checkPattern(matchType: MatchType, pattern: string): void {
  const problem = patternProblem(matchType, pattern);
  if (problem) throw new AppError('validation_failed', `pattern: ${problem}`, { field: 'pattern' });
}

export async function createPage(tx: Repos, siteId: string, p: { name: string; match_type: MatchType; pattern: string }, now: number): Promise<PageRow> {
  checkPattern(p.match_type, p.pattern);
  if (await tx.web.pageByPattern(siteId, p.match_type, p.pattern)) {
    throw new AppError('conflict', `a ${p.match_type} page with pattern ${p.pattern} exists in this site`, { field: 'pattern' });
  }
  const id = await tx.web.insertPage({ siteId, name: p.name, matchType: p.match_type, pattern: p.pattern, now });
  return (await tx.web.page(siteId, id))!;
}

export async function updatePage(
  tx: Repos,
  siteId: string,
  id: string,
  p: { name?: string | undefined; match_type?: MatchType | undefined; pattern?: string | undefined },
  now: number,
): Promise<PageRow> {
  const row = await requirePage(tx, siteId, id);
  const next = { name: p.name ?? row.name, matchType: p.match_type ?? row.match_type, pattern: p.pattern ?? row.pattern };
  checkPattern(next.matchType, next.pattern);
  const clash = await tx.web.pageByPattern(siteId, next.matchType, next.pattern);
  if (clash && clash.id !== id) throw new AppError('conflict', `page ${clash.id} already has this pattern`, { field: 'pattern' });
  await tx.web.updatePage(siteId, id, { ...next, now });
  return (await tx.web.page(siteId, id))!;
}

export async function deletePage(tx: Repos, siteId: string, id: string, by: string, now: number): Promise<void> {
  await requirePage(tx, siteId, id);
  const zones = await tx.web.listZones(siteId, id);
  if (zones.length > 0) {
    throw new AppError('conflict', `page ${id} has ${zones.length} zone(s); delete them first`, { zones: zones.map((z) => z.id) });
  }
  const experiments = await tx.web.experimentsReferencing(siteId, { pageId: id });
  if (experiments.length > 0) throw new AppError('conflict', `page ${id} is tested by ${experiments.join(', ')}`, { experiments });
  await tx.web.liftOverridesOf(siteId, 'page_id', id, by, now);
  await tx.web.deletePage(siteId, id);
}

// ---- content -------------------------------------------------------------

export async function createContent(
  tx: Repos,
  siteId: string,
  c: { name: string; kind: ContentKind; body: string },
  now: number,
): Promise<{ row: ContentRow; sanitized: boolean }> {
  const prepared = prepareContent(c.kind, c.body);
  const id = await tx.web.insertContent({ siteId, name: c.name, kind: c.kind, body: prepared.body, now });
  return { row: (await tx.web.content(siteId, id))!, sanitized: prepared.changed };
}

export async function updateContent(
  tx: Repos,
  siteId: string,
  id: string,
  c: { name?: string | undefined; kind?: ContentKind | undefined; body?: string | undefined },
  now: number,
  opts: { proposeOnly?: boolean } = {},
): Promise<{ row: ContentRow; sanitized: boolean }> {
  const row = await requireContent(tx, siteId, id);
  if (opts.proposeOnly && (c.body !== undefined || c.kind !== undefined)) {
    // What visitors see passed a person's approval: a propose-only token edits only content no one serves yet.
    const usage = await contentUsage(tx, siteId, id);
    const live = usage.variants.filter((v) => v.status !== 'draft');
    if (usage.zones.length > 0 || live.length > 0) {
      throw new AppError('insufficient_scope', `content ${id} is shown by zone defaults or approved variants; a propose-only token changes only content of drafts`, {
        reason: 'propose_only',
        missing: 'restriction:not propose-only',
        tool: 'content_update',
        zones: usage.zones.map((z) => z.zone_id),
        variants: live.map((v) => v.variant_id),
      });
    }
  }
  const kind = c.kind ?? row.kind;
  if (kind !== row.kind && c.body === undefined) throw new AppError('validation_failed', 'body: changing the kind needs a new body', { field: 'body' });
  const prepared = c.body === undefined ? { body: row.body, changed: false } : prepareContent(kind, c.body);
  await tx.web.updateContent(siteId, id, { name: c.name ?? row.name, kind, body: prepared.body, now });
  return { row: (await tx.web.content(siteId, id))!, sanitized: prepared.changed };
}

export interface ContentUsage {
  zones: { zone_id: string; page_id: string; name: string }[];
  variants: { variant_id: string; zone_id: string; name: string; status: VariantStatus }[];
}

export async function contentUsage(r: Repos, siteId: string, id: string): Promise<ContentUsage> {
  await requireContent(r, siteId, id);
  const [zones, variants] = await Promise.all([r.web.zonesUsingContent(siteId, id), r.web.variantsUsingContent(siteId, id)]);
  return {
    zones: zones.map((z) => ({ zone_id: z.id, page_id: z.page_id, name: z.name })),
    variants: variants.map((v) => ({ variant_id: v.id, zone_id: v.zone_id, name: v.name, status: v.status })),
  };
}

/**
 * Deletes content. In use (a zone default or a variant) it is refused unless
 * `force`: then zone defaults that use it are cleared, and the variants that
 * show it are deleted with their placements (their pins lifted). A variant that
 * is an arm of an experiment is never deleted: end and remove the experiment first.
 */
export async function deleteContent(tx: Repos, siteId: string, id: string, force: boolean, by: string, now: number): Promise<ContentUsage> {
  const usage = await contentUsage(tx, siteId, id);
  const inUse = usage.zones.length + usage.variants.length > 0;
  if (inUse && !force) {
    throw new AppError('conflict', `content ${id} is used by ${usage.zones.length} zone(s) and ${usage.variants.length} variant(s); pass force: true to delete it anyway`, {
      zones: usage.zones.map((z) => z.zone_id),
      variants: usage.variants.map((v) => v.variant_id),
    });
  }
  for (const v of usage.variants) {
    const experiments = await tx.web.experimentsReferencing(siteId, { variantId: v.variant_id });
    if (experiments.length > 0) {
      throw new AppError('conflict', `variant ${v.variant_id} showing this content is an arm of ${experiments.join(', ')}; it cannot be deleted`, { experiments });
    }
  }
  await tx.web.clearZoneDefault(siteId, id, now);
  for (const v of usage.variants) {
    await tx.web.deletePlacementsOfVariant(siteId, v.variant_id);
    await tx.web.liftOverridesOf(siteId, 'variant_id', v.variant_id, by, now);
    await tx.web.deleteVariant(siteId, v.variant_id);
  }
  await tx.web.deleteContent(siteId, id);
  return usage;
}

// ---- zones ---------------------------------------------------------------

export async function createZone(
  tx: Repos,
  siteId: string,
  z: { page_id: string; name: string; selector: string; default_content_id?: string | null | undefined },
  now: number,
): Promise<ZoneRow> {
  await requirePage(tx, siteId, z.page_id);
  const contentId = z.default_content_id ?? null;
  if (contentId !== null) await requireContent(tx, siteId, contentId);
  if (await tx.web.zoneByName(z.page_id, z.name)) throw new AppError('conflict', `page ${z.page_id} already has a zone named ${JSON.stringify(z.name)}`, { field: 'name' });
  const id = await tx.web.insertZone({ siteId, pageId: z.page_id, name: z.name, selector: z.selector, defaultContentId: contentId, now });
  return (await tx.web.zone(siteId, id))!;
}

export async function updateZone(
  tx: Repos,
  siteId: string,
  id: string,
  z: { name?: string | undefined; selector?: string | undefined; default_content_id?: string | null | undefined },
  now: number,
): Promise<ZoneRow> {
  const row = await requireZone(tx, siteId, id);
  const contentId = z.default_content_id === undefined ? row.default_content_id : z.default_content_id;
  if (contentId !== null) await requireContent(tx, siteId, contentId);
  const name = z.name ?? row.name;
  const clash = await tx.web.zoneByName(row.page_id, name);
  if (clash && clash.id !== id) throw new AppError('conflict', `page ${row.page_id} already has a zone named ${JSON.stringify(name)}`, { field: 'name' });
  await tx.web.updateZone(siteId, id, { name, selector: z.selector ?? row.selector, defaultContentId: contentId, now });
  return (await tx.web.zone(siteId, id))!;
}

/** Deletes a zone with its placements and archived variants; refused while it has live variants or experiments. */
export async function deleteZone(tx: Repos, siteId: string, id: string, by: string, now: number): Promise<void> {
  await requireZone(tx, siteId, id);
  const experiments = await tx.web.experimentsReferencing(siteId, { zoneId: id });
  if (experiments.length > 0) throw new AppError('conflict', `zone ${id} is tested by ${experiments.join(', ')}`, { experiments });
  const variants = await tx.web.listVariants(siteId, { zoneId: id });
  const live = variants.filter((v) => v.status !== 'archived');
  if (live.length > 0) {
    throw new AppError('conflict', `zone ${id} has ${live.length} variant(s) that are not archived; archive them first`, { variants: live.map((v) => v.id) });
  }
  for (const v of variants) {
    const used = await tx.web.experimentsReferencing(siteId, { variantId: v.id });
    if (used.length > 0) throw new AppError('conflict', `variant ${v.id} of zone ${id} is an arm of ${used.join(', ')}`, { experiments: used });
  }
  await tx.web.deletePlacementsOfZone(siteId, id);
  await tx.web.liftOverridesOf(siteId, 'zone_id', id, by, now);
  for (const v of variants) await tx.web.deleteVariant(siteId, v.id);
  await tx.web.deleteZone(siteId, id);
}

// ---- variants ------------------------------------------------------------

export async function createDraft(
  tx: Repos,
  siteId: string,
  v: { zone_id: string; content_id: string; segment_id?: string | null | undefined; name: string },
  by: string,
  now: number,
): Promise<VariantRow> {
  await requireZone(tx, siteId, v.zone_id);
  await requireContent(tx, siteId, v.content_id);
  const segmentId = v.segment_id ?? null;
  await requireSegment(tx, siteId, segmentId);
  const id = await tx.web.insertVariant({ siteId, zoneId: v.zone_id, contentId: v.content_id, segmentId, name: v.name, createdBy: by, now });
  return (await tx.web.variant(siteId, id))!;
}

export async function updateDraft(
  tx: Repos,
  siteId: string,
  id: string,
  v: { content_id?: string | undefined; segment_id?: string | null | undefined; name?: string | undefined },
  now: number,
): Promise<VariantRow> {
  const row = await requireVariant(tx, siteId, id);
  if (row.status !== 'draft') throw new AppError('conflict', `variant ${id} is ${row.status}; only drafts are edited`, { status: row.status });
  const contentId = v.content_id ?? row.content_id;
  if (v.content_id !== undefined) await requireContent(tx, siteId, contentId);
  const segmentId = v.segment_id === undefined ? row.segment_id : v.segment_id;
  await requireSegment(tx, siteId, segmentId);
  if ((await tx.web.updateDraft(siteId, id, { contentId, segmentId, name: v.name ?? row.name, now })) === 0) {
    throw new AppError('conflict', `variant ${id} changed meanwhile; read it again`);
  }
  return (await tx.web.variant(siteId, id))!;
}

/** Applies a lifecycle action (see lifecycle.ts); an invalid transition is a conflict. */
export async function transitionVariant(tx: Repos, siteId: string, id: string, action: VariantAction, by: string, now: number, reason: string | null = null): Promise<VariantRow> {
  const row = await requireVariant(tx, siteId, id);
  const to = nextStatus(row.status, action);
  if ((await tx.web.transition(siteId, id, row.status, to, by, now, action === 'disable' ? (reason ?? `disabled by ${by}`) : null)) === 0) {
    throw new AppError('conflict', `variant ${id} changed meanwhile; read it again`);
  }
  return (await tx.web.variant(siteId, id))!;
}

// ---- placements ----------------------------------------------------------

export async function createPlacement(
  tx: Repos,
  siteId: string,
  p: { variant_id: string; segment_id?: string | null | undefined; priority: number; enabled: boolean; id?: string | undefined },
  now: number,
): Promise<PlacementRow> {
  const v = await requireVariant(tx, siteId, p.variant_id);
  if (!servableByPlacement(v.status)) throw new AppError('conflict', `variant ${v.id} is ${v.status}; only published variants are placed`, { status: v.status });
  // Omitted: the variant's own segment; null: everyone.
  const segmentId = p.segment_id === undefined ? v.segment_id : p.segment_id;
  await requireSegment(tx, siteId, segmentId);
  const id = await tx.web.insertPlacement({ siteId, zoneId: v.zone_id, variantId: v.id, segmentId, priority: p.priority, enabled: p.enabled, now, id: p.id });
  return (await tx.web.placement(siteId, id))!;
}

export async function updatePlacement(
  tx: Repos,
  siteId: string,
  id: string,
  p: { segment_id?: string | null | undefined; priority?: number | undefined; enabled?: boolean | undefined },
  now: number,
): Promise<PlacementRow> {
  const row = await requirePlacement(tx, siteId, id);
  const segmentId = p.segment_id === undefined ? row.segment_id : p.segment_id;
  await requireSegment(tx, siteId, segmentId);
  await tx.web.updatePlacement(siteId, id, { segmentId, priority: p.priority ?? Number(row.priority), enabled: p.enabled ?? Number(row.enabled) === 1, now });
  return (await tx.web.placement(siteId, id))!;
}

// ---- overrides -----------------------------------------------------------

export type OverrideInput =
  | { kind: 'personalization_off'; page_id: string; note?: string | undefined }
  | { kind: 'pin_zone'; zone_id: string; variant_id: string; note?: string | undefined };

/** Publishes a site-wide override (personalization_off or pin_zone); one active override per page or zone. */
export async function publishOverride(tx: Repos, siteId: string, o: OverrideInput, by: string, now: number): Promise<OverrideRow> {
  const active = await tx.web.listOverrides(siteId, true);
  let id: string;
  if (o.kind === 'personalization_off') {
    await requirePage(tx, siteId, o.page_id);
    const dup = active.find((x) => x.kind === 'personalization_off' && x.page_id === o.page_id);
    if (dup) throw new AppError('conflict', `personalization is already off for page ${o.page_id} (override ${dup.id})`, { override_id: dup.id });
    id = await tx.web.insertOverride({ siteId, kind: o.kind, pageId: o.page_id, zoneId: null, variantId: null, experimentId: null, armId: null, visitorId: null, note: o.note ?? null, setBy: by, now });
  } else {
    const zone = await requireZone(tx, siteId, o.zone_id);
    const v = await requireVariant(tx, siteId, o.variant_id);
    if (v.zone_id !== zone.id) throw new AppError('validation_failed', `variant_id: variant ${v.id} belongs to zone ${v.zone_id}, not ${zone.id}`, { field: 'variant_id' });
    if (!servableByPlacement(v.status)) throw new AppError('conflict', `variant ${v.id} is ${v.status}; only published variants are pinned`, { status: v.status });
    const dup = active.find((x) => x.kind === 'pin_zone' && x.zone_id === zone.id);
    if (dup) throw new AppError('conflict', `zone ${zone.id} is already pinned (override ${dup.id}); lift it first`, { override_id: dup.id });
    id = await tx.web.insertOverride({ siteId, kind: o.kind, pageId: zone.page_id, zoneId: zone.id, variantId: v.id, experimentId: null, armId: null, visitorId: null, note: o.note ?? null, setBy: by, now });
  }
  return (await tx.web.override(siteId, id))!;
}

/** Forces one visitor into an arm of an experiment (QA); replaces an earlier force of the same visitor and experiment. */
export async function forceArm(
  tx: Repos,
  siteId: string,
  o: { experiment_id: string; arm_id: string; visitor_id: string; note?: string | undefined; id?: string | undefined },
  by: string,
  now: number,
): Promise<OverrideRow> {
  const e = await tx.web.experiment(siteId, o.experiment_id);
  if (!e) throw notFound('experiment', o.experiment_id);
  const arm = (await tx.web.listArms(siteId)).find((a) => a.id === o.arm_id && a.experiment_id === e.id);
  if (!arm) throw new AppError('validation_failed', `arm_id: ${o.arm_id} is not an arm of experiment ${e.id}`, { field: 'arm_id' });
  if (arm.variant_id !== null) {
    const v = await tx.web.variant(siteId, arm.variant_id);
    if (!v || !servableByArm(v.status)) throw new AppError('conflict', `the arm's variant ${arm.variant_id} is ${v ? v.status : 'gone'} and cannot be served`);
  }
  for (const x of await tx.web.listOverrides(siteId, true)) {
    if (x.kind === 'force_arm' && x.experiment_id === e.id && x.visitor_id === o.visitor_id) await tx.web.liftOverride(siteId, x.id, by, now);
  }
  const id = await tx.web.insertOverride({
    siteId,
    kind: 'force_arm',
    pageId: e.page_id,
    zoneId: e.zone_id,
    variantId: arm.variant_id,
    experimentId: e.id,
    armId: arm.id,
    visitorId: o.visitor_id,
    note: o.note ?? null,
    setBy: by,
    now,
    id: o.id,
  });
  return (await tx.web.override(siteId, id))!;
}

export async function liftOverride(tx: Repos, siteId: string, id: string, by: string, now: number): Promise<OverrideRow> {
  const row = await tx.web.override(siteId, id);
  if (!row) throw notFound('override', id);
  if (row.lifted_at !== null) throw new AppError('conflict', `override ${id} was already lifted by ${row.lifted_by ?? '?'}`, { lifted_by: row.lifted_by });
  await tx.web.liftOverride(siteId, id, by, now);
  return (await tx.web.override(siteId, id))!;
}

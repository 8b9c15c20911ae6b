import { AppError } from '../../errors/app-error.js';
import type { Repos } from '../../store/repos.js';
import type { Store } from '../../store/store.js';
import type { ContentKind, ContentRow } from '../../store/content.js';
import { changeWeb } from './change.js';
import { notFound } from './refs.js';
import { prepareContent } from './sanitize.js';
import { contentOut, type ContentUsage, type ContentView } from './views.js';

/**
 * The rules of content blocks. The functions taking `tx` run inside one write
 * operation, scoped to one site; bad input is an AppError and stores nothing.
 */

export async function requireContent(r: Repos, siteId: string, id: string): Promise<ContentRow> {
  const row = await r.content.get(siteId, id);
  if (!row) throw notFound('content', id);
  return row;
}

export interface ContentInput {
  name: string;
  kind: ContentKind;
  body: string;
}

export type ContentPatch = { [K in keyof ContentInput]?: ContentInput[K] | undefined };

export async function createContent(tx: Repos, siteId: string, c: ContentInput, now: number): Promise<{ row: ContentRow; sanitized: boolean }> {
  const prepared = prepareContent(c.kind, c.body);
  const id = await tx.content.insert({ siteId, name: c.name, kind: c.kind, body: prepared.body, now });
  return { row: (await tx.content.get(siteId, id))!, sanitized: prepared.changed };
}

export async function updateContent(
  tx: Repos,
  siteId: string,
  id: string,
  c: ContentPatch,
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
  await tx.content.update(siteId, id, { name: c.name ?? row.name, kind, body: prepared.body, now });
  return { row: (await tx.content.get(siteId, id))!, sanitized: prepared.changed };
}

export async function contentUsage(r: Repos, siteId: string, id: string): Promise<ContentUsage> {
  await requireContent(r, siteId, id);
  const [zones, variants] = await Promise.all([r.zones.usingContent(siteId, id), r.variants.usingContent(siteId, id)]);
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
    const experiments = await tx.experimentRefs.referencing(siteId, { variantId: v.variant_id });
    if (experiments.length > 0) {
      throw new AppError('conflict', `variant ${v.variant_id} showing this content is an arm of ${experiments.join(', ')}; it cannot be deleted`, { experiments });
    }
  }
  await tx.zones.clearDefault(siteId, id, now);
  for (const v of usage.variants) {
    await tx.placements.deleteOfVariant(siteId, v.variant_id);
    await tx.overrides.liftOf(siteId, 'variant_id', v.variant_id, by, now);
    await tx.variants.delete(siteId, v.variant_id);
  }
  await tx.content.delete(siteId, id);
  return usage;
}

/** The content use cases of one store, returning views. */
export class ContentService {
  constructor(private readonly store: Store) {}

  async list(siteId: string, kind?: ContentKind): Promise<ContentView[]> {
    return (await this.store.content.list(siteId, kind)).map(contentOut);
  }

  async get(siteId: string, id: string): Promise<ContentView> {
    return contentOut(await requireContent(this.store, siteId, id));
  }

  async create(siteId: string, input: ContentInput): Promise<ContentView & { sanitized: boolean }> {
    const r = await changeWeb(this.store, siteId, (tx, now) => createContent(tx, siteId, input, now));
    return { ...contentOut(r.row), sanitized: r.sanitized };
  }

  /** `proposeOnly`: the caller's token only proposes (content shown to visitors stays as approved). */
  async update(siteId: string, id: string, patch: ContentPatch, opts: { proposeOnly: boolean }): Promise<ContentView & { sanitized: boolean }> {
    const r = await changeWeb(this.store, siteId, (tx, now) => updateContent(tx, siteId, id, patch, now, opts));
    return { ...contentOut(r.row), sanitized: r.sanitized };
  }

  async remove(siteId: string, id: string, force: boolean, by: string): Promise<{ removed: string; was_used_by: ContentUsage }> {
    const usage = await changeWeb(this.store, siteId, (tx, now) => deleteContent(tx, siteId, id, force, by, now));
    return { removed: id, was_used_by: usage };
  }

  async usage(siteId: string, id: string): Promise<ContentUsage & { content_id: string }> {
    return { content_id: id, ...(await contentUsage(this.store, siteId, id)) };
  }
}

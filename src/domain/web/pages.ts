import { AppError } from '../../errors/app-error.js';
import type { Repos } from '../../store/repos.js';
import type { Store } from '../../store/store.js';
import type { MatchType, PageRow } from '../../store/pages.js';
import { changeWeb } from './change.js';
import { notFound } from './refs.js';
import { patternProblem } from './url-match.js';
import { pageOut, zoneOut, type PageView, type ZoneView } from './views.js';

/**
 * The rules of pages. The functions taking `tx` run inside one write operation,
 * scoped to one site; bad input is an AppError and stores nothing.
 */

export async function requirePage(r: Repos, siteId: string, id: string): Promise<PageRow> {
  const row = await r.pages.get(siteId, id);
  if (!row) throw notFound('page', id);
  return row;
}

function checkPattern(matchType: MatchType, pattern: string): void {
  const problem = patternProblem(matchType, pattern);
  if (problem) throw new AppError('validation_failed', `pattern: ${problem}`, { field: 'pattern' });
}

export interface PageInput {
  name: string;
  match_type: MatchType;
  pattern: string;
}

export type PagePatch = { [K in keyof PageInput]?: PageInput[K] | undefined };

export async function createPage(tx: Repos, siteId: string, p: PageInput, now: number): Promise<PageRow> {
  checkPattern(p.match_type, p.pattern);
  if (await tx.pages.byPattern(siteId, p.match_type, p.pattern)) {
    throw new AppError('conflict', `a ${p.match_type} page with pattern ${p.pattern} exists in this site`, { field: 'pattern' });
  }
  const id = await tx.pages.insert({ siteId, name: p.name, matchType: p.match_type, pattern: p.pattern, now });
  return (await tx.pages.get(siteId, id))!;
}

export async function updatePage(tx: Repos, siteId: string, id: string, p: PagePatch, now: number): Promise<PageRow> {
  const row = await requirePage(tx, siteId, id);
  const next = { name: p.name ?? row.name, matchType: p.match_type ?? row.match_type, pattern: p.pattern ?? row.pattern };
  checkPattern(next.matchType, next.pattern);
  const clash = await tx.pages.byPattern(siteId, next.matchType, next.pattern);
  if (clash && clash.id !== id) throw new AppError('conflict', `page ${clash.id} already has this pattern`, { field: 'pattern' });
  await tx.pages.update(siteId, id, { ...next, now });
  return (await tx.pages.get(siteId, id))!;
}

export async function deletePage(tx: Repos, siteId: string, id: string, by: string, now: number): Promise<void> {
  await requirePage(tx, siteId, id);
  const zones = await tx.zones.list(siteId, id);
  if (zones.length > 0) {
    throw new AppError('conflict', `page ${id} has ${zones.length} zone(s); delete them first`, { zones: zones.map((z) => z.id) });
  }
  const experiments = await tx.experimentRefs.referencing(siteId, { pageId: id });
  if (experiments.length > 0) throw new AppError('conflict', `page ${id} is tested by ${experiments.join(', ')}`, { experiments });
  await tx.overrides.liftOf(siteId, 'page_id', id, by, now);
  await tx.pages.delete(siteId, id);
}

/** The page use cases of one store, returning views. */
export class PagesService {
  constructor(private readonly store: Store) {}

  async list(siteId: string): Promise<PageView[]> {
    return (await this.store.pages.list(siteId)).map(pageOut);
  }

  /** One page with its zones. */
  async get(siteId: string, id: string): Promise<PageView & { zones: ZoneView[] }> {
    const page = await requirePage(this.store, siteId, id);
    const zones = await this.store.zones.list(siteId, page.id);
    return { ...pageOut(page), zones: zones.map(zoneOut) };
  }

  async create(siteId: string, input: PageInput): Promise<PageView> {
    return pageOut(await changeWeb(this.store, siteId, (tx, now) => createPage(tx, siteId, input, now)));
  }

  async update(siteId: string, id: string, patch: PagePatch): Promise<PageView> {
    return pageOut(await changeWeb(this.store, siteId, (tx, now) => updatePage(tx, siteId, id, patch, now)));
  }

  async remove(siteId: string, id: string, by: string): Promise<{ removed: string }> {
    await changeWeb(this.store, siteId, (tx, now) => deletePage(tx, siteId, id, by, now));
    return { removed: id };
  }
}

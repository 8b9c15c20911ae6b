import { AppError } from '../../errors/app-error.js';
import type { Store } from '../../store/store.js';
import type { RevisionRow } from '../../store/generation.js';
import { diffSections } from './diff.js';
import { queueGeneration, restoreRevision, sectionsOf, type StartGeneration } from './service.js';
import { jobView, revisionView, type JobView, type RevisionDiffView, type RevisionView } from './views.js';

/**
 * The generation use cases of one store, returning views: queue a job, read
 * its status, list, compare and restore a page's revisions.
 */
export class GenerationService {
  constructor(private readonly store: Store) {}

  /** Queues a generation job (a runner takes it in the background). */
  async start(req: StartGeneration): Promise<JobView> {
    return jobView(await queueGeneration(this.store, req));
  }

  async status(siteId: string, generationId: string): Promise<JobView> {
    const job = await this.store.generation.jobOfSite(siteId, generationId);
    if (!job) throw new AppError('not_found', `no generation ${generationId}`, { field: 'generation_id' });
    return jobView(job);
  }

  /** The revisions of a page for one audience (a segment, or everyone: null), newest first. */
  async revisions(siteId: string, pageId: string, segmentId: string | null, opts: { bodies: boolean; limit: number }): Promise<{ revisions: RevisionView[] }> {
    if (!(await this.store.generation.page(siteId, pageId))) throw new AppError('not_found', `no page ${pageId}`, { field: 'page_id' });
    const rows = await this.store.generation.revisions(siteId, pageId, segmentId, opts.limit);
    return { revisions: rows.map((r) => revisionView(r, opts.bodies)) };
  }

  /** Compares two revisions of a page zone by zone; `toId` defaults to the newest of the same page and audience. */
  async diff(siteId: string, fromId: string, toId: string | undefined): Promise<RevisionDiffView> {
    const from = await this.ownRevision(siteId, fromId, 'from_revision_id');
    const to = toId !== undefined ? await this.ownRevision(siteId, toId, 'to_revision_id') : (await this.store.generation.latestRevision(from.page_id, from.segment_id))!;
    if (to.page_id !== from.page_id) throw new AppError('validation_failed', 'the two revisions are of different pages', { field: 'to_revision_id' });
    const zones = diffSections(sectionsOf(from), sectionsOf(to));
    const count = (c: string) => zones.filter((z) => z.change === c).length;
    return {
      from_revision_id: from.id,
      to_revision_id: to.id,
      summary: { added: count('added'), removed: count('removed'), changed: count('changed'), unchanged: count('unchanged') },
      zones,
    };
  }

  /** Lands a copy of an old revision as the newest of its page and audience. */
  async restore(siteId: string, revisionId: string, actor: string): Promise<{ generation: JobView; revision: RevisionView }> {
    const r = await restoreRevision(this.store, { siteId, revisionId, actor });
    return { generation: jobView(r.job), revision: revisionView(r.revision, false) };
  }

  private async ownRevision(siteId: string, revisionId: string, field: string): Promise<RevisionRow> {
    const r = await this.store.generation.revision(siteId, revisionId);
    if (!r) throw new AppError('not_found', `no revision ${revisionId}`, { field });
    return r;
  }
}
